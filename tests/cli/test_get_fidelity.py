"""``knetsim get`` prints what kubectl prints for the same objects and arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from knetsim import printers
from knetsim.cli.main import cli
from knetsim.model import admission
from knetsim.model.apis.catalog import DEFINITIONS
from knetsim.model.kinds import BY_KIND

TLS = str(EXAMPLES / "gateway" / "tls")
# Every kind with an AGE column (CustomResourceDefinition and IPAddress show CREATED AT, a date, instead).
EVERY_KIND = sorted(k for k in {*printers.PRINTERS, *(d.kind for d in DEFINITIONS), "ConfigMap"}
                    if "AGE" in [name for name, _ in printers.columns(k)])



@pytest.mark.parametrize("kind", EVERY_KIND)
def test_an_object_without_a_creation_time_is_of_unknown_age(kind: str) -> None:
    """kubectl's translateTimestampSince prints "<unknown>" for a missing time, whatever the kind."""
    headers = [name for name, _ in printers.columns(kind)]
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "default"}}
    assert printers.cells(kind, body, printers.utc_now())[headers.index("AGE")] == "<unknown>"


def test_the_gateway_tls_example_prints_every_route_and_policy_of_unknown_age() -> None:
    result = run("get", "tlsroutes,tcproutes,udproutes,backendtlspolicies", "-A", "-f", TLS)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if line and not line.startswith("NAMESPACE")]
    assert len(rows) == 4
    assert all(row[-1] == "<unknown>" for row in rows), result.output


SHOP = str(EXAMPLES / "shop")


def test_type_slash_name_gets_that_object_as_kubectl_does() -> None:
    assert run("get", "service/kubernetes", "-f", SHOP).output.splitlines() == [
        "NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE",
        "kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP   <unknown>",
    ]
    result = run("get", "tcproute/postgres", "-n", "edge", "-f", TLS, "-o", "name")
    assert (result.exit_code, result.output) == (0, "tcproute.gateway.networking.k8s.io/postgres\n")


def test_a_single_type_slash_name_prints_the_object_itself_not_a_list() -> None:
    result = run("get", "svc/web", "-n", "shop", "-f", SHOP, "-o", "yaml")
    assert result.output.startswith("apiVersion: v1\nkind: Service\n"), result.output


def test_several_type_slash_names_print_a_table_per_type_named_when_types_differ() -> None:
    result = run("get", "svc/web", "deploy/web", "svc/api", "-n", "shop", "-f", SHOP, "-o", "name")
    assert result.output.splitlines() == ["service/web", "deployment.apps/web", "service/api"]
    lines = run("get", "svc/web", "deploy/web", "-n", "shop", "-f", SHOP).output.splitlines()
    assert [(line.split() or [""])[0] for line in lines] == ["NAME", "service/web", "", "NAME", "deployment.apps/web"]


def test_names_of_one_type_share_one_table_without_the_type() -> None:
    for args in (["svc", "web", "api"], ["svc/web", "svc/api"]):
        lines = run("get", *args, "-n", "shop", "-f", SHOP).output.splitlines()
        assert [line.split()[0] for line in lines] == ["NAME", "web", "api"], lines


def test_several_types_with_a_name_ask_for_each_type_of_that_name() -> None:
    result = run("get", "svc,deploy", "web", "-n", "shop", "-f", SHOP, "-o", "name")
    assert result.output.splitlines() == ["service/web", "deployment.apps/web"]


@pytest.mark.parametrize(("args", "message"), [
    (["svc", "svc/web"], "error: there is no need to specify a resource type as a separate argument when passing "
                         "arguments in resource/name form (e.g. 'knetsim get resource/<resource_name>' instead of "
                         "'knetsim get resource resource/<resource_name>'\n"),
    (["svc/web/x"], "error: arguments in resource/name form may not have more than one slash\n"),
    (["svc,deploy/web"], "error: arguments in resource/name form must have a single resource and name\n"),
    (["svc/"], "error: arguments in resource/name form must have a single resource and name\n"),
    (["svc/web", "-l", "app=web"], "error: selectors and the all flag cannot be used when passing resource/name "
                                   "arguments\n"),
    (["svc,deploy", "web", "-l", "app=web"], "error: selectors and the all flag cannot be used when passing "
                                             "resource/name arguments\n"),
    (["svc", "web", "-l", "app=web"], "error: name cannot be provided when a selector is specified\n"),
])
def test_mixed_or_malformed_type_slash_name_is_refused_in_kubectls_words(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["get", *args, "-n", "shop", "-f", SHOP])
    assert (result.exit_code, result.output) == (2, message)


def test_an_unknown_type_before_the_slash_is_refused_as_an_unknown_type() -> None:
    result = run("get", "widget/web", "-f", SHOP)
    assert result.exit_code == 2 and 'the server doesn\'t have a resource type "widget"' in result.output


def test_every_object_whose_kind_counts_generations_is_at_generation_1_offline() -> None:
    """PrepareForCreate sets metadata.generation to 1 for these kinds (the live registry does too), and the
    status a controller writes reports it as observedGeneration: the two agree."""
    result = run("get", "deploy,rs,pods,endpointslices,svc,gateways,httproutes", "-A", "-f", TLS, "-o", "yaml")
    items = yaml.safe_load(result.output)["items"]
    assert {i["kind"] for i in items} >= {"Deployment", "ReplicaSet", "Pod", "EndpointSlice", "Gateway", "HTTPRoute"}
    for item in items:
        meta = item["metadata"]
        # The strategy admission gives the kind (a custom kind's is its CRD's).
        kind = admission.resolve(BY_KIND[item["kind"]].api_version, item["kind"])
        assert kind is not None
        if admission.strategy(kind).generation:
            assert meta.get("generation") == 1, (item["kind"], meta["name"])
            assert (item.get("status") or {}).get("observedGeneration") in (None, 1), (item["kind"], meta["name"])
        else:
            assert "generation" not in meta, (item["kind"], meta["name"])


def test_an_object_read_from_a_cluster_keeps_its_own_generation(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default, generation: 7, uid: u1,\n"
        "  resourceVersion: '42', creationTimestamp: '2026-01-01T00:00:00Z'}\n"
        "spec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: web, image: nginx}]}\n")
    result = run("get", "deploy/web", "-f", str(tmp_path), "-o", "json")
    assert json.loads(result.output)["metadata"]["generation"] == 7


def test_yaml_prints_every_object_in_full_without_anchors_or_aliases() -> None:
    """Pods of one ReplicaSet share their template's parts in memory; kubectl's YAML has no &id/*id."""
    result = run("get", "pods,rs", "-n", "shop", "-f", SHOP, "-o", "yaml")
    assert result.exit_code == 0
    assert "&id" not in result.output and "*id" not in result.output
    pods = [i for i in yaml.safe_load(result.output)["items"] if i["kind"] == "Pod"]
    assert len(pods) > 2 and all(p["spec"]["containers"][0]["image"] for p in pods)


def test_the_custom_kinds_are_printed_from_their_catalog_columns_only() -> None:
    """No hand-written row shadows a catalog kind's printer columns; a cell is the first value its JSONPath
    selects, as the CRD table convertor prints it (a Gateway's second address is not shown)."""
    assert not set(printers.PRINTERS) & {d.kind for d in DEFINITIONS}
    gateway = {"metadata": {"name": "eg", "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"gatewayClassName": "eg"},
               "status": {"addresses": [{"value": "172.18.255.200"}, {"value": "172.18.255.201"}],
                          "conditions": [{"type": "Programmed", "status": "True"}]}}
    assert printers.columns("Gateway") == [("NAME", 0), ("CLASS", 0), ("ADDRESS", 0), ("PROGRAMMED", 0), ("AGE", 0)]
    assert printers.row("Gateway", gateway)[:4] == ["eg", "eg", "172.18.255.200", "True"]
    route = {"metadata": {"name": "backend"}, "spec": {"hostnames": ["a.example", "b.example"]}}
    assert printers.row("HTTPRoute", route)[:2] == ["backend", '["a.example","b.example"]']
