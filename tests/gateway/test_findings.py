"""The doctor on Gateway API objects: each finding names the field and a fix that works when applied.

Given examples/gateway/broken (a Service's targetPort used as backendRef port, a cross-namespace
backend without ReferenceGrant, a route hostname the listener's wildcard does not cover, a
parentRef to a listener that does not exist), then the doctor reports exactly those, and applying
each fix makes its finding disappear.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.gateway import route, status_of
from knetsim.gateway.findings import gateway_findings
from knetsim.model.http import HTTPRequest
from knetsim.model.loader import load_paths

BROKEN = Path(__file__).resolve().parents[2] / "examples" / "gateway" / "broken"


def _docs() -> list[dict]:
    return [d.body for d in load_paths([str(BROKEN)]).documents]


def _cluster(docs: list[dict]) -> Cluster:
    return Cluster.from_yaml(yaml.safe_dump_all(docs), filename="broken.yaml")


def _codes(c: Cluster) -> dict[str, str]:
    return {f.subject: f.code for f in gateway_findings(c.state)}


def _apply_patch(docs: list[dict], fix: str) -> None:
    """Apply a `kubectl patch --type json` fix to the matching document (add, replace, remove)."""
    m = re.match(r"kubectl -n (\S+) patch (\S+) (\S+) --type json -p '(.*)'$", fix)
    assert m, fix
    ns, kind, name, ops = m.groups()
    doc = next(d for d in docs if d["kind"].lower() == kind and d["metadata"]["name"] == name
               and d["metadata"].get("namespace") == ns)
    for op in json.loads(ops):
        *parents, last = [p.replace("~1", "/") for p in op["path"].strip("/").split("/")]
        target = doc
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if op["op"] == "remove":
            del target[last]
        elif last == "-":
            target.append(op["value"])
        else:
            target[int(last) if isinstance(target, list) else last] = op["value"]


def test_broken_example_findings_and_http_answers() -> None:
    c = _cluster(_docs())
    assert _codes(c) == {
        "HTTPRoute billing/billing": "HTTPRouteNoMatchingParent",
        "HTTPRoute store/apex": "HTTPRouteListenerHostnameMismatch",
        "HTTPRoute store/invoices": "ReferenceGrantMissing",
        "HTTPRoute store/shop": "HTTPRouteBackendTargetPort",
    }
    # What the conditions say and what traffic does come from the same decision.
    shop = route(c.state, "store/web", HTTPRequest("www.store.example"))
    assert (shop.outcome, shop.http_status) == ("invalid-backend", 500)
    apex = status_of(c.state, c.state.http_routes["store/apex"])["parents"][0]["conditions"]
    assert apex[0]["reason"] == "NoMatchingListenerHostname"
    assert route(c.state, "store/web", HTTPRequest("store.example")).http_status == 404


def test_each_fix_removes_its_finding() -> None:
    docs = _docs()
    findings = {f.subject: f for f in gateway_findings(_cluster(docs).state)}
    for subject in ("HTTPRoute store/shop", "HTTPRoute store/apex", "HTTPRoute billing/billing"):
        _apply_patch(docs, findings[subject].fix)
    docs.append(yaml.safe_load(findings["HTTPRoute store/invoices"].fix.split("<<EOF\n", 1)[1].rsplit("EOF", 1)[0]))
    fixed = _cluster(docs)
    codes = _codes(fixed)
    for subject in ("HTTPRoute store/shop", "HTTPRoute store/apex", "HTTPRoute store/invoices"):
        assert subject not in codes, codes
    # billing's route now names the listener, which still takes routes from namespace store only: the next
    # finding says so, with the Gateway patch that allows it.
    assert codes["HTTPRoute billing/billing"] == "HTTPRouteNotAllowedByListeners"
    assert route(fixed.state, "store/web", HTTPRequest("www.store.example")).outcome == "proxied"
    assert route(fixed.state, "store/web", HTTPRequest("billing.store.example")).backend.service == \
        "billing/invoices"


def test_doctor_cli_reports_gateway_layer_and_exits_1() -> None:
    result = CliRunner().invoke(cli, ["doctor", "-f", str(BROKEN), "-o", "json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    gateway = [f for f in data["findings"] if f["layer"] == "gateway"]
    assert {f["code"] for f in gateway} == {"HTTPRouteNoMatchingParent", "HTTPRouteListenerHostnameMismatch",
                                           "ReferenceGrantMissing", "HTTPRouteBackendTargetPort"}
    assert "HTTPRoute store/shop" in data["checked"] and "Gateway store/web" in data["checked"]
    one = CliRunner().invoke(cli, ["doctor", "shop", "-n", "store", "-f", str(BROKEN), "-o", "json"])
    assert {f["code"] for f in json.loads(one.stdout)["findings"]} == {"HTTPRouteBackendTargetPort"}
