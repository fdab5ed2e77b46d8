"""Which definition admits a custom kind: knetsim's built-in one, or a CRD the user brings, which takes over.

Given the manifests of issue 19 (a misspelt field, a relative path, a port that is not a number, two
listeners with one name), then `knetsim validate` refuses each with exit 2, naming file, object and field
in the API server's words. Given the upstream CRDs in the input (../shared/upstream, skipped where absent),
then they replace the built-in definitions of their kinds, every version of them, and `validate` says so.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim.cli.main import cli

from .. import upstream

ROUTE: dict[str, Any] = {
    "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "backend"},
    "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]},
}
GATEWAY: dict[str, Any] = {
    "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw"},
    "spec": {"gatewayClassName": "eg", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
}
BUILTIN = "knetsim's built-in definition (bundle-version v1.6.1, channel standard)"


def validate(tmp_path: Path, *docs: dict[str, Any], extra: tuple[str, ...] = ()) -> tuple[int, str]:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    result = CliRunner().invoke(cli, ["validate", *extra, "-f", str(path)])
    return result.exit_code, result.output.replace(str(tmp_path) + "/", "")


def with_spec(body: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    out["spec"].update(spec)
    return out


@pytest.mark.parametrize(("doc", "message"), [
    (with_spec(ROUTE, rulez=[{"backendRefs": [{"name": "web", "port": 80}]}]),
     'error: app.yaml, document 1: HTTPRoute default/backend: HTTPRoute in version "v1" cannot be handled as a '
     'HTTPRoute: strict decoding error: unknown field "spec.rulez"'),
    (with_spec(ROUTE, rules=[{"matches": [{"path": {"type": "PathPrefix", "value": "nope"}}]}]),
     "error: app.yaml, document 1: HTTPRoute default/backend: spec.rules[0].matches[0].path: Invalid value: "
     "\"object\": value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
    (with_spec(ROUTE, rules=[{"backendRefs": [{"name": "web", "port": "eighty"}]}]),
     'error: app.yaml, document 1: HTTPRoute default/backend: spec.rules[0].backendRefs[0].port: Invalid value: '
     '"string": spec.rules[0].backendRefs[0].port in body must be of type integer: "string"'),
    (with_spec(GATEWAY, listeners=[{"name": "http", "protocol": "HTTP", "port": 80},
                                   {"name": "http", "protocol": "HTTP", "port": 8080}]),
     'error: app.yaml, document 1: Gateway default/gw: spec.listeners[1]: Duplicate value: '
     'map[string]interface {}{"name":"http"}\n'
     'error: app.yaml, document 1: Gateway default/gw: spec.listeners: Invalid value: "array": Listener name must '
     'be unique within the Gateway'),
], ids=["rulez", "path nope", "port eighty", "two listeners named http"])
def test_the_issues_reproducers_are_refused_offline_with_file_object_and_field(tmp_path: Path, doc: dict[str, Any],
                                                                                message: str) -> None:
    code, output = validate(tmp_path, doc)
    assert code == 2
    assert message in output
    assert f"{doc['kind']}: checked against {BUILTIN}" in output


def test_a_crd_in_the_input_takes_over_its_kind_and_validate_says_which(tmp_path: Path) -> None:
    """Given the experimental channel's HTTPRoute CRD in the input, then a route with a retry (an experimental
    field the standard definition refuses) is admitted, and validate names the definition that admitted it."""
    crd = upstream.upstream_crds("gateway-api-v1.6.1/experimental")["httproutes.gateway.networking.k8s.io"]
    retrying = with_spec(ROUTE, rules=[{"backendRefs": [{"name": "web", "port": 80}],
                                        "retry": {"codes": [503], "attempts": 2}}])
    code, output = validate(tmp_path, retrying)
    assert code == 2 and 'unknown field "spec.rules[0].retry"' in output
    code, output = validate(tmp_path, crd, retrying, GATEWAY)
    assert code == 0, output
    assert ("HTTPRoute: checked against CustomResourceDefinition httproutes.gateway.networking.k8s.io from app.yaml, "
            "document 1 (bundle-version v1.6.1, channel experimental)") in output
    assert f"Gateway: checked against {BUILTIN}" in output


def test_a_crd_replaces_every_version_of_its_kind(tmp_path: Path) -> None:
    """Given a CRD of HTTPRoute that no longer serves v1beta1, then a v1beta1 route is no kind the cluster knows,
    although knetsim's own definition serves it."""
    crd = copy.deepcopy(upstream.upstream_crds(*upstream.STANDARD)["httproutes.gateway.networking.k8s.io"])
    for version in crd["spec"]["versions"]:
        version["served"] = version["name"] == "v1"
    old = {**ROUTE, "apiVersion": "gateway.networking.k8s.io/v1beta1"}
    assert validate(tmp_path, old)[0] == 0
    code, output = validate(tmp_path, crd, old)
    assert code == 2
    assert 'no matches for kind "HTTPRoute" in version "gateway.networking.k8s.io/v1beta1"' in output


def test_the_standard_install_admits_as_the_built_in_definitions_do(tmp_path: Path) -> None:
    """Given every CRD of the upstream standard install in the input, then each kind is checked against it, and
    the issue's route is refused with the same words as by knetsim's own definition."""
    crds = list(upstream.upstream_crds(*upstream.STANDARD).values())
    bad = with_spec(ROUTE, rules=[{"backendRefs": [{"name": "web", "port": "eighty"}]}])
    code, own = validate(tmp_path, bad)
    code_with, theirs = validate(tmp_path, *crds, bad)
    assert code == code_with == 2
    line = [x for x in own.splitlines() if x.startswith("error:") and "port" in x]
    assert line and line[0].replace("document 1", f"document {len(crds) + 1}") in theirs
    assert "HTTPRoute: checked against CustomResourceDefinition httproutes.gateway.networking.k8s.io" in theirs
