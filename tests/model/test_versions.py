"""``--kubernetes-version``: admission as each Kubernetes from 1.33 to 1.38 admits, from one table (model/versions.py).

The cases restate upstream's: apimachinery ``pkg/util/validation/ip_test.go`` (TestIsValidIPForLegacyField,
TestIsValidCIDRForLegacyField, TestGetWarningsForIP, TestGetWarningsForCIDR), ``test/e2e/network/funny_ips.go``
(leading-0 addresses in a Service, read as decimal), the NetworkPolicy ipBlock validation tests, and the Service
name tests of KEP-5311; each per the version that changes them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import knetsim

from knetsim.cli.main import cli
from knetsim.model import versions
from knetsim.model.validation import (
    cidr_warnings,
    ip_warnings,
    legacy_cidr_problems,
    legacy_ip_problems,
    service_name_problems,
)

BEFORE_STRICT = ("1.33", "1.34", "1.35")
STRICT = ("1.36", "1.37", "1.38")



def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


# --- the table ---------------------------------------------------------------------------------------


def test_the_default_is_the_newest_and_the_versions_are_one_three_three_to_one_three_eight() -> None:
    assert versions.SUPPORTED == ("1.33", "1.34", "1.35", "1.36", "1.37", "1.38")
    assert str(versions.in_force()) == "1.38"


@pytest.mark.parametrize(("gate", "off", "on"), [
    ("StrictIPCIDRValidation", ("1.33", "1.34", "1.35"), ("1.36", "1.37", "1.38")),  # beta 1.36, GA 1.38
    ("RelaxedServiceNameValidation", ("1.33", "1.34", "1.35"), ("1.36", "1.37", "1.38")),  # beta 1.36, GA 1.37
    ("PreferSameTrafficDistribution", ("1.33",), ("1.34", "1.35", "1.36", "1.37", "1.38")),  # beta 1.34
])
def test_each_gate_is_on_from_its_beta(gate: str, off: tuple[str, ...], on: tuple[str, ...]) -> None:
    assert [v for v in off if versions.parse(v).enabled(gate)] == []
    assert [v for v in on if not versions.parse(v).enabled(gate)] == []
    row = versions.GATE[gate]
    assert row.kep.startswith("KEP-") and row.source  # every row cites where it comes from


def test_every_row_cites_its_source() -> None:
    assert all(g.source and g.kep for g in versions.GATES)
    assert all(w.source for w in versions.WARNINGS)


@pytest.mark.parametrize("text", ["1.32", "1.39", "2.0", "latest", "1", ""])
def test_an_unknown_version_is_refused_naming_the_known_ones(text: str) -> None:
    with pytest.raises(ValueError, match=r"knetsim simulates 1\.33 to 1\.38"):
        versions.parse(text)
    assert str(versions.parse("v1.36.2")) == "1.36"


def test_the_version_chosen_ends_with_its_block() -> None:
    with versions.using("1.34") as chosen:
        assert versions.in_force() == chosen
    assert str(versions.in_force()) == "1.38"


# --- IsValidIPForLegacyField / IsValidCIDRForLegacyField (ip_test.go) -----------------------------------


@pytest.mark.parametrize(("value", "strict_errors"), [
    ("1.2.3.4", []),
    ("2001:db8::1", []),
    ("FE80:0:0:0:0:0:0:0abc", []),  # not canonical, but a legacy field allows it
    ("010.002.003.004", ["must not have leading 0s"]),
    ("1.2.3.04", ["must not have leading 0s"]),
    ("::ffff:1.2.3.4", ["must not be an IPv4-mapped IPv6 address"]),
])
def test_legacy_ips(value: str, strict_errors: list[str]) -> None:
    for version in BEFORE_STRICT:
        with versions.using(version):
            assert legacy_ip_problems(value) == [], version
    for version in STRICT:
        with versions.using(version):
            assert legacy_ip_problems(value) == strict_errors, version


@pytest.mark.parametrize("value", ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4/32", "fe80::1%eth0", "a.b.c.d"])
def test_invalid_ips_are_invalid_on_every_version(value: str) -> None:
    for version in versions.SUPPORTED:
        with versions.using(version):
            assert legacy_ip_problems(value) == ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]


@pytest.mark.parametrize(("value", "strict_errors"), [
    ("1.2.3.0/24", []),
    ("2001:db8::/64", []),
    ("192.168.0.5/24", ["must not have bits set beyond the prefix length"]),
    ("2001:db8::1/64", ["must not have bits set beyond the prefix length"]),
    ("010.0.0.0/8", ["must not have leading 0s in IP or prefix length"]),
    ("1.2.3.0/024", ["must not have leading 0s in IP or prefix length"]),
    ("::ffff:1.2.3.0/120", ["must not have an IPv4-mapped IPv6 address"]),
])
def test_legacy_cidrs(value: str, strict_errors: list[str]) -> None:
    for version in BEFORE_STRICT:
        with versions.using(version):
            assert legacy_cidr_problems(value) == [], version
    for version in STRICT:
        with versions.using(version):
            assert legacy_cidr_problems(value) == strict_errors, version


@pytest.mark.parametrize("value", ["", "1.2.3.4", "1.2.3.0/33", "1.2.3.0/", "2001:db8::/129", "1.2.3.0/a"])
def test_invalid_cidrs_are_invalid_on_every_version(value: str) -> None:
    for version in versions.SUPPORTED:
        with versions.using(version):
            assert legacy_cidr_problems(value) == ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]


# --- GetWarningsForIP / GetWarningsForCIDR ---------------------------------------------------------------


def test_ip_warnings() -> None:
    assert ip_warnings("spec.externalIPs[0]", "1.2.3.4") == []
    assert ip_warnings("spec.externalIPs[0]", "010.002.003.004") == [
        'spec.externalIPs[0]: non-standard IP address "010.002.003.004" will be considered invalid in a future '
        'Kubernetes release: use "10.2.3.4"']
    assert ip_warnings("f", "::ffff:1.2.3.4") == [
        'f: non-standard IP address "::ffff:1.2.3.4" will be considered invalid in a future Kubernetes release: '
        'use "1.2.3.4"']
    assert ip_warnings("f", "2001:DB8::1") == ['f: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format '
                                               '("2001:db8::1")']


def test_cidr_warnings() -> None:
    assert cidr_warnings("f", "192.168.0.0/24") == []
    assert cidr_warnings("f", "192.168.0.5/24") == [
        'f: CIDR value "192.168.0.5/24" is ambiguous in this context (should be "192.168.0.0/24" or '
        '"192.168.0.5/32"?)']
    assert cidr_warnings("f", "010.0.0.0/8") == [
        'f: non-standard CIDR value "010.0.0.0/8" will be considered invalid in a future Kubernetes release: use '
        '"10.0.0.0/8"']
    assert cidr_warnings("f", "2001:DB8::/64") == [
        'f: IPv6 CIDR value "2001:DB8::/64" should be in RFC 5952 canonical format ("2001:db8::/64")']


# --- through the command line, per version ------------------------------------------------------------

POLICY = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np}
spec:
  podSelector: {}
  ingress:
  - from:
    - ipBlock: {cidr: 192.168.0.5/24}
    - ipBlock: {cidr: 010.0.0.0/8, except: [010.1.0.0/16]}
"""


@pytest.mark.parametrize("version", BEFORE_STRICT)
def test_before_1_36_an_ambiguous_ip_block_is_admitted_with_the_api_servers_warnings(tmp_path: Path,
                                                                                     version: str) -> None:
    result = knetsim("validate", "-f", write(tmp_path, POLICY), "--kubernetes-version", version)
    assert result.exit_code == 0, result.output
    assert ('NetworkPolicy default/np: spec.ingress[0].from[0].ipBlock.cidr: CIDR value "192.168.0.5/24" is '
            'ambiguous in this context (should be "192.168.0.0/24" or "192.168.0.5/32"?)') in result.output
    assert ('spec.ingress[0].from[1].ipBlock.except[0]: non-standard CIDR value "010.1.0.0/16" will be considered '
            'invalid in a future Kubernetes release: use "10.1.0.0/16"') in result.output


@pytest.mark.parametrize("version", STRICT)
def test_from_1_36_the_same_ip_block_is_refused(tmp_path: Path, version: str) -> None:
    result = knetsim("validate", "-f", write(tmp_path, POLICY), "--kubernetes-version", version)
    assert result.exit_code == 2
    assert ('spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "192.168.0.5/24": must not have bits set beyond '
            "the prefix length") in result.output
    assert ('spec.ingress[0].from[1].ipBlock.cidr: Invalid value: "010.0.0.0/8": must not have leading 0s in IP or '
            "prefix length") in result.output
    assert ('spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "010.1.0.0/16": must not have leading 0s '
            "in IP or prefix length") in result.output


def test_a_leading_zero_address_is_read_as_decimal_where_it_is_admitted(tmp_path: Path) -> None:
    # funny_ips.go: kube-proxy reads 010.0.0.0/8 as 10.0.0.0/8 (decimal), never as octal 8.0.0.0/8.
    result = knetsim("get", "networkpolicy", "np", "-o", "json", "-f", write(tmp_path, POLICY),
                     "--kubernetes-version", "1.35")
    assert result.exit_code == 0, result.output
    assert '"cidr": "10.0.0.0/8"' in result.stdout and '"10.1.0.0/16"' in result.stdout


SERVICE = """
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80}}]
{extra}
"""


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_a_service_name_may_start_with_a_digit_from_1_36(tmp_path: Path, version: str) -> None:
    result = knetsim("validate", "-f", write(tmp_path, SERVICE.format(name="1web", extra="")),
                     "--kubernetes-version", version)
    if version in BEFORE_STRICT:
        assert result.exit_code == 2
        assert ('metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric '
                "characters or '-', start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                ) in result.output
    else:
        assert result.exit_code == 0, result.output


def test_a_relaxed_service_name_is_still_an_rfc_1123_label() -> None:
    with versions.using("1.37"):
        assert service_name_problems("web-1") == []
        assert service_name_problems("-web") == [
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_external_ips_warn_from_1_36_and_leading_zeros_before_it(tmp_path: Path, version: str) -> None:
    manifest = SERVICE.format(name="web", extra="  externalIPs: [010.0.0.5]")
    result = knetsim("validate", "-f", write(tmp_path, manifest), "--kubernetes-version", version)
    if version in BEFORE_STRICT:
        assert result.exit_code == 0, result.output
        assert ('Service default/web: spec.externalIPs[0]: non-standard IP address "010.0.0.5" will be considered '
                'invalid in a future Kubernetes release: use "10.0.0.5"') in result.output
        assert "spec.externalIPs is deprecated" not in result.output
    else:
        assert result.exit_code == 2
        assert 'spec.externalIPs[0]: Invalid value: "010.0.0.5": must not have leading 0s' in result.output
    plain = SERVICE.format(name="web", extra="  externalIPs: [10.0.0.5]")
    canonical = knetsim("validate", "-f", write(tmp_path, plain), "--kubernetes-version", version)
    assert canonical.exit_code == 0
    assert ("Service default/web: spec.externalIPs is deprecated" in canonical.output) == (version in STRICT)


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_traffic_distribution_by_version(tmp_path: Path, version: str) -> None:
    same_zone = knetsim("validate", "-f", write(tmp_path, SERVICE.format(
        name="web", extra="  trafficDistribution: PreferSameZone")), "--kubernetes-version", version)
    if version == "1.33":
        assert same_zone.exit_code == 2
        assert ('spec.trafficDistribution: Unsupported value: "PreferSameZone": supported values: "PreferClose"'
                in same_zone.output)
    else:
        assert same_zone.exit_code == 0, same_zone.output
    prefer_close = SERVICE.format(name="web", extra="  trafficDistribution: PreferClose")
    close = knetsim("validate", "-f", write(tmp_path, prefer_close), "--kubernetes-version", version)
    assert close.exit_code == 0
    deprecated = 'spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"'
    assert (deprecated in close.output) == (version >= "1.35")


def test_every_command_that_reads_objects_takes_the_version() -> None:
    import click

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        subs = ([command.get_command(ctx, s) for s in command.list_commands(ctx)]
                if isinstance(command, click.Group) else [command])
        for sub in subs:
            options = {o for p in sub.params for o in getattr(p, "opts", [])}
            if "--filename" in options:
                assert "--kubernetes-version" in options, sub.name


def test_an_unsupported_version_on_the_command_line_exit_2(tmp_path: Path) -> None:
    result = knetsim("validate", "-f", write(tmp_path, POLICY), "--kubernetes-version", "1.32")
    assert result.exit_code == 2
    assert "unsupported Kubernetes version '1.32': knetsim simulates 1.33 to 1.38" in result.output


INGRESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: game}
spec:
  defaultBackend: {service: {name: 2048-game, port: {number: 80}}}
  rules:
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: 2048-game, port: {number: 80}}}}
"""


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_an_ingress_may_name_a_digit_first_service_where_the_service_may_exist(tmp_path: Path, version: str) -> None:
    # kubernetes #132339 relaxed the Ingress backend's service name with the Service's (rules and defaultBackend).
    result = knetsim("validate", "-f", write(tmp_path, INGRESS), "--kubernetes-version", version)
    if version == "1.35":
        assert result.exit_code == 2
        assert 'spec.defaultBackend.service.name: Invalid value: "2048-game": a DNS-1035 label' in result.output
        assert 'spec.rules[0].http.paths[0].backend.service.name: Invalid value: "2048-game"' in result.output
    else:
        assert result.exit_code == 0, result.output


def test_a_network_policys_one_walk_gives_the_two_walks_warnings_and_rewrites() -> None:
    # admission reads a NetworkPolicy's ipBlocks once (validation.network_policy_addresses): the same warnings, from
    # what was written, and the same decimal CIDRs as warnings_on_create then read_legacy_addresses.
    import copy

    import yaml

    from knetsim.model.validation import network_policy_addresses, read_legacy_addresses, warnings_on_create
    body = yaml.safe_load(POLICY)
    body["spec"]["egress"] = [{"to": [{"podSelector": {}}, {"ipBlock": {"cidr": "10.0.0.1/8"}}]}]
    with versions.using("1.35"):
        two = copy.deepcopy(body)
        expected = warnings_on_create("NetworkPolicy", two)
        read_legacy_addresses("NetworkPolicy", two)
        one = copy.deepcopy(body)
        assert network_policy_addresses(one) == expected and len(expected) == 4
    assert one == two and one["spec"]["ingress"][0]["from"][1]["ipBlock"]["except"] == ["10.1.0.0/16"]
