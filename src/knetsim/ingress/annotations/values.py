"""Reading one annotation value the way ingress-nginx's annotation parser does.

ingress-nginx (``internal/ingress/annotations/parser``) reads a value in two steps, and the
families differ only in what they do with the outcome:

1. the *validator* of the annotation runs on a non-empty value (annotation validation is on by
   default since v1.9); a value it refuses is a ``validation`` error (``annotation X contains
   invalid value``);
2. the value is converted: ``strconv.ParseBool`` / ``Atoi`` for booleans and integers, and for
   strings every line trimmed; an empty result is ``invalid`` content.

A missing annotation (or an alias's value) is ``missing``. Each family then decides: use its
default, deny the location (every location of the Ingress answers 503), or refuse the whole
Ingress (the admission webhook denies it and the controller skips it).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

PREFIX = "nginx.ingress.kubernetes.io/"  # ingress-nginx's annotations: spelt here only
SNIPPET_SUFFIX = "-snippet"  # a snippet under any prefix (--annotations-prefix) is one to the webhook

MISSING = "missing"
VALIDATION = "validation"
INVALID = "invalid"

T = TypeVar("T")
Validator = Callable[[str], str | None]  # None: valid; else why not


@dataclass(frozen=True, slots=True)
class Read(Generic[T]):
    """The outcome of reading one annotation: a value, or why there is none."""

    name: str  # the full annotation name actually read (an alias when the main name was empty)
    raw: str | None
    value: T | None
    error: str | None = None  # MISSING | VALIDATION | INVALID
    why: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def present(self) -> bool:
        return self.error != MISSING


def annotated(obj: Mapping[str, object]) -> bool:
    """Does the object (an Ingress, as a dict) carry annotations ingress-nginx reads, so that its webhook has
    them to check: one under PREFIX, or a snippet."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(annotations, Mapping) and any(
        str(k).startswith(PREFIX) or str(k).endswith(SNIPPET_SUFFIX) for k in annotations)


# --- validators (parser/validators.go): facts of ingress-nginx's grammar -----------------

_ALNUM = r"\-\.\_\~a-zA-Z0-9\/:"
_EXTENDED = _ALNUM + ", "
_REGEX_CHARS = re.escape(r"^$[](){}*+?|&=\\")
_URL_CHARS = re.escape(",:?&=")

IS_VALID_REGEX = re.compile("^[/" + _ALNUM + _REGEX_CHARS + "]*$")
SIZE = re.compile(r"^(?i:\d+[bkmg]?)$")
URL_IS_VALID = re.compile("^[" + _ALNUM + _URL_CHARS + "]*$")
BASIC_CHARS = re.compile("^[/" + _ALNUM + "]*$")
EXTENDED_CHARS = re.compile("^[/" + _EXTENDED + "]*$")
CHARS_WITH_SPACE = re.compile("^[/" + _ALNUM + " ]*$")
NGINX_VARIABLE = re.compile(r"^[A-Za-z0-9\-\_\$\{\}]*$")
REGEX_PATH_WITH_CAPTURE = re.compile(r"^/?[" + _ALNUM + r"\/\$]*$")
HEADERS_VARIABLE = re.compile(r"^[A-Za-z0-9-_, ]*$")
URL_WITH_NGINX_VARIABLE = re.compile("^[" + _EXTENDED + _URL_CHARS + "$]*$")
_MALICIOUS = re.compile(r"\r|\n")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def matches(pattern: re.Pattern[str], remove_space: bool = False) -> Validator:
    def check(value: str) -> str | None:
        if remove_space:
            value = value.replace(" ", "")
        if not pattern.search(value):  # Go's MatchString: unanchored unless the pattern anchors
            return f"value {value} is invalid"
        if _MALICIOUS.search(value):
            return f"value {value} contains malicious string"
        return None
    return check


def options(choices: tuple[str, ...], case_sensitive: bool = False, trim: bool = True) -> Validator:
    def check(value: str) -> str | None:
        if trim:
            value = value.strip()
        if not case_sensitive:
            value = value.lower()
        return None if value in choices else "value does not match any valid option"
    return check


def valid_bool(value: str) -> str | None:
    return None if parse_bool(value) is not None else f'strconv.ParseBool: parsing "{value}": invalid syntax'


def valid_int(value: str) -> str | None:
    return None if parse_int(value) is not None else f'strconv.Atoi: parsing "{value}": invalid syntax'


def valid_cidrs(value: str) -> str | None:
    return None if parse_cidrs(value) is not None else f"invalid CIDR address: {value}"


def valid_server_name(value: str) -> str | None:
    value = value.strip()
    return None if IS_VALID_REGEX.match(value) else f"value {value} is invalid server name"


def valid_server_names(value: str) -> str | None:
    for name in value.split(","):
        problem = valid_server_name(name)
        if problem:
            return problem
    return None


def valid_service_name(value: str) -> str | None:
    if len(value) <= 63 and _DNS1035.match(value):
        return None
    return f"annotation does not contain a valid service name: {value}"


def anything(_value: str) -> str | None:
    return None


# --- conversions (Go's strconv, as the parser calls it) ---------------------------------

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_INT = re.compile(r"^[+-]?\d+$")


def parse_bool(value: str) -> bool | None:
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return None


def parse_int(value: str) -> int | None:
    if not _INT.match(value):
        return None
    number = int(value)
    return number if -(2**63) <= number < 2**63 else None


def normalize(value: str) -> str:
    """Every line trimmed (``normalizeString``): what the parser keeps of a string annotation."""
    return "\n".join(line.strip() for line in value.split("\n"))


def parse_cidrs(value: str) -> tuple[str, ...] | None:
    """``net.ParseCIDRs``: comma-separated networks or addresses, each trimmed; networks in their
    canonical form (host bits cleared, as Go's IPNet.String prints them), sorted as strings."""
    if value == "":
        return ()
    out: set[str] = set()
    for spec in value.split(","):
        spec = spec.strip()
        try:
            if "/" in spec:
                out.add(str(ipaddress.ip_network(spec, strict=False)))
            else:
                out.add(str(ipaddress.ip_address(spec)))
        except ValueError:
            return None
    return tuple(sorted(out))


@dataclass(frozen=True, slots=True)
class Reader:
    """The annotations of one Ingress, read by name without the prefix."""

    annotations: Mapping[str, str]

    def _raw(self, name: str, aliases: tuple[str, ...]) -> tuple[str, str | None]:
        full = PREFIX + name
        value = self.annotations.get(full)
        if not value:
            for alias in aliases:
                alias_value = self.annotations.get(PREFIX + alias)
                if alias_value:
                    return PREFIX + alias, alias_value
        return full, value

    def _check(self, name: str, validator: Validator, aliases: tuple[str, ...]) -> Read[str]:
        full, raw = self._raw(name, aliases)
        if raw is None:
            return Read(full, None, None, MISSING)
        if raw != "":
            problem = validator(raw)
            if problem is not None:
                return Read(full, raw, None, VALIDATION, f"annotation {full} contains invalid value ({problem})")
        return Read(full, raw, raw)

    def string(self, name: str, validator: Validator = anything, aliases: tuple[str, ...] = ()) -> Read[str]:
        read = self._check(name, validator, aliases)
        if not read.ok or read.raw is None:
            return read
        value = normalize(read.raw)
        if value == "":
            return Read(read.name, read.raw, None, INVALID,
                        f"the annotation {read.name} does not contain a valid value ({read.raw})")
        return Read(read.name, read.raw, value)

    def boolean(self, name: str, aliases: tuple[str, ...] = ()) -> Read[bool]:
        read = self._check(name, valid_bool, aliases)
        if not read.ok or read.raw is None:
            return Read(read.name, read.raw, None, read.error, read.why)
        value = parse_bool(read.raw)
        if value is None:
            return Read(read.name, read.raw, None, INVALID,
                        f"the annotation {read.name} does not contain a valid value ({read.raw})")
        return Read(read.name, read.raw, value)

    def integer(self, name: str, aliases: tuple[str, ...] = ()) -> Read[int]:
        read = self._check(name, valid_int, aliases)
        if not read.ok or read.raw is None:
            return Read(read.name, read.raw, None, read.error, read.why)
        value = parse_int(read.raw)
        if value is None:
            return Read(read.name, read.raw, None, INVALID,
                        f"the annotation {read.name} does not contain a valid value ({read.raw})")
        return Read(read.name, read.raw, value)


def parse_size(value: str) -> int | None:
    """An nginx size (``client_max_body_size``: digits, then k/m/g in either case) in bytes; None when
    the template would not write it (``isValidByteSize``: an offset, so no ``b`` suffix)."""
    found = re.match(r"^\s*(\d+)([kKmMgG]?)\s*$", value)
    if found is None:
        return None
    unit = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[found.group(2).lower()]
    return int(found.group(1)) * unit
