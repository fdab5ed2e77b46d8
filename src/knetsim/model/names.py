"""Name syntax checks with apimachinery's messages (``k8s.io/apimachinery/pkg/api/validate/content``).

Each ``is_*`` function returns a list of problem strings, empty when the value is valid,
exactly like the Go helpers, so the callers can wrap them into ``Invalid value`` errors.
"""

from __future__ import annotations

import ipaddress
import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
WILDCARD_DNS1123_SUBDOMAIN_FMT = r"\*\." + DNS1123_SUBDOMAIN_FMT

_DNS1123_LABEL = re.compile("^" + DNS1123_LABEL_FMT + "$")
_DNS1123_SUBDOMAIN = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$")
_DNS1035_LABEL = re.compile("^" + DNS1035_LABEL_FMT + "$")
_QUALIFIED_NAME = re.compile("^" + QUALIFIED_NAME_FMT + "$")
_LABEL_VALUE = re.compile("^" + LABEL_VALUE_FMT + "$")
_WILDCARD = re.compile("^" + WILDCARD_DNS1123_SUBDOMAIN_FMT + "$")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile("[a-z]")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Upstream joins examples with "', " then " or ", which yields the double space in
    # "'my-name',  or '123-abc'"; users compare messages, so keep it.
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(
                regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                    "and must start and end with an alphanumeric character",
                    DNS1123_LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_LABEL.match(value):
        errs.append(
            regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                DNS1035_LABEL_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _WILDCARD.match(value):
        errs.append(
            regex_error(
                "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which "
                "must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric "
                "character",
                WILDCARD_DNS1123_SUBDOMAIN_FMT,
                "*.example.com",
            )
        )
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character",
                QUALIFIED_NAME_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if name and not _QUALIFIED_NAME.match(name):
        errs.append(
            "name part "
            + regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character",
                QUALIFIED_NAME_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
        )
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE.match(value):
        errs.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


def is_valid_port_name(value: str) -> list[str]:
    """IANA_SVC_NAME (RFC 6335), as ``validation.IsValidPortName``."""
    errs = []
    if len(value) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARS.match(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if not _PORT_NAME_LETTER.search(value):
        errs.append("must contain at least one letter (a-z)")
    if value.startswith("-") or value.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    if 1 <= port <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def is_ip(text: str) -> bool:
    """Is ``text`` an IPv4 or IPv6 address (no prefix)?"""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_valid_ip(value: str) -> list[str]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def is_canonical_ip(value: str) -> list[str]:
    """apimachinery's strict ``IsValidIP`` (v1.33+, for fields born after strict validation, such as an
    IPAddress's name): a parseable address, no leading 0s in an IPv4 octet, not IPv4-mapped IPv6, and in
    canonical form (RFC 5952 for IPv6)."""
    octets = value.split(".")
    if len(octets) == 4 and all(o.isdigit() and int(o) <= 255 for o in octets) and \
            any(len(o) > 1 and o.startswith("0") for o in octets):
        return ["must not have leading 0s"]
    if "%" in value:  # a zone: Go's net.ParseIP refuses it
        return is_valid_ip("")
    errs = is_valid_ip(value)
    if errs:
        return errs
    ip = ipaddress.ip_address(value)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ["must not be an IPv4-mapped IPv6 address"]
    if str(ip) != value:
        return [f'must be in canonical form ("{ip}")']
    return []


def is_canonical_cidr(value: str) -> list[str]:
    """apimachinery's strict ``IsValidCIDR`` (v1.33+, for a ServiceCIDR's cidrs): a subnet without host bits,
    no leading 0s, no IPv4-mapped IPv6 address, in canonical form."""
    errs = is_valid_cidr(value)
    address, _, length = value.partition("/")
    octets = address.split(".")
    leading = (len(length) > 1 and length.startswith("0")) or (
        len(octets) == 4 and all(o.isdigit() for o in octets) and any(len(o) > 1 and o.startswith("0") for o in octets))
    if errs and not leading:
        return errs
    if leading:
        return ["must not have leading 0s in IP or prefix length"]
    network = ipaddress.ip_network(value, strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped is not None:
        return ["must not have an IPv4-mapped IPv6 address"]
    if ipaddress.ip_address(address) != network.network_address:
        return ["must not have bits set beyond the prefix length"]
    if str(network) != value:
        return [f'must be in canonical form ("{network}")']
    return []


def is_valid_cidr(value: str) -> list[str]:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    if "/" not in value:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    return []
