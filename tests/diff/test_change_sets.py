"""``knetsim diff`` on real change sets: each asserts the diff on every layer the change touches, and that
the layers it does not touch say nothing.

Given the examples as BEFORE and the change a pull request would make as AFTER (written next to them
in a temporary folder), then the report names what changed, why, and the rule or object behind it;
the CI gate (``--fail-on``) exits 1 exactly when its condition holds.

Address plan: the examples' own (DESIGN.md defaults, a fresh kind cluster).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from .semantics import copy_example


def diff(before: Path | str, after: Path | str, *extra: str) -> dict[str, Any]:
    result = run("diff", "--before", str(before), "--after", str(after), "-o", "json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def items(doc: dict[str, Any], layer: str, effect: str | None = None) -> list[dict[str, Any]]:
    return [i for i in doc["layers"][layer]["items"] if effect is None or i["effect"] == effect]


def untouched(doc: dict[str, Any], *layers: str) -> None:
    for layer in layers:
        assert items(doc, layer) == [] or {i["effect"] for i in items(doc, layer)} == {"unchanged"}, layer


# --- the seeds' selector typo, and its fix -------------------------------------------------------


@pytest.fixture
def typo_fixed(tmp_path: Path) -> Path:
    return copy_example(tmp_path, "broken/selector-typo", {"app.yaml": ("selector:\n    app: wbe",
                                                                        "selector:\n    app: web")})


def test_fixing_the_selector_typo_gains_the_endpoints_and_fixes_the_findings(typo_fixed: Path) -> None:
    doc = diff(EXAMPLES / "broken" / "selector-typo", typo_fixed)
    assert [(i["effect"], i["subject"], i["text"]) for i in items(doc, "objects")] == [
        ("changed", "Service default/web", 'changed: spec.selector.app: "wbe" → "web"')]
    [gained] = items(doc, "endpoints")
    assert (gained["effect"], gained["subject"]) == ("gained", "Service default/web port 80/TCP")
    assert gained["text"] == "gained 2 endpoints of default/web[Deployment] (port 80)"
    assert gained["why"] == "before, the selector app=wbe matches none of its pods (labels app=web)"
    [programmed] = items(doc, "dataplane")
    assert programmed["effect"] == "gained"
    assert programmed["text"] == ("REJECT (no endpoints: connection refused) → DNAT to default/web[Deployment]:80 ×2")
    fixed = {(i["subject"], i["before"]["code"]) for i in items(doc, "findings", "fixed")}
    assert fixed == {("Service default/web", "SelectorMatchesNothing"), ("Pod default/client", "ClientCannotConnect")}
    assert items(doc, "findings", "introduced") == []
    untouched(doc, "dns", "reachability", "routes")


def test_the_typo_as_a_change_is_lost_and_the_gate_says_so(typo_fixed: Path) -> None:
    """The same two folders the other way round: what the fix gained, the typo loses."""
    doc = diff(typo_fixed, EXAMPLES / "broken" / "selector-typo")
    [lost] = items(doc, "endpoints")
    assert lost["effect"] == "lost"
    assert lost["why"] == "now the selector app=wbe matches none of its pods (labels app=web)"
    assert items(doc, "dataplane")[0]["effect"] == "lost"
    assert {i["after"]["code"] for i in items(doc, "findings", "introduced")} == {
        "SelectorMatchesNothing", "ClientCannotConnect"}
    gate = run("diff", "--before", str(typo_fixed), "--after", str(EXAMPLES / "broken" / "selector-typo"),
               "--fail-on", "lost")
    assert gate.exit_code == 1 and "--fail-on: lost" in gate.stderr
    assert run("diff", "--before", str(typo_fixed), "--after", str(EXAMPLES / "broken" / "selector-typo"),
               "--fail-on", "gained").exit_code == 0
    assert run("diff", "--before", str(typo_fixed), "--after", str(EXAMPLES / "broken" / "selector-typo"),
               "--fail-on", "findings").exit_code == 1


def test_the_gate_passes_what_only_gains(typo_fixed: Path) -> None:
    before, after = str(EXAMPLES / "broken" / "selector-typo"), str(typo_fixed)
    assert run("diff", "--before", before, "--after", after, "--fail-on", "lost,findings").exit_code == 0
    assert run("diff", "--before", before, "--after", after, "--fail-on", "any").exit_code == 1
    assert run("diff", "--before", before, "--after", before, "--fail-on", "any").exit_code == 0


def test_a_change_the_api_server_refuses_leaves_the_object_as_it_was(tmp_path: Path) -> None:
    """`kubectl apply` of a Service the API server refuses (422) changes nothing stored: the diff of the change
    over the example says the change is refused (a lost for the gate), and every other layer is untouched."""
    change = tmp_path / "web.yaml"
    change.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
                      "spec:\n  selector: {app: web}\n  ports: [{port: 80}, {port: 81}]\n")
    shop = str(EXAMPLES / "shop")
    result = run("diff", "--before", shop, "--after", shop, "--after", str(change), "-o", "json",
                 "--fail-on", "lost")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [(i["effect"], i["subject"], i["text"]) for i in items(doc, "objects")] == [
        ("lost", "Service shop/web", "the change is refused (the object stays as it was): "
                                     "spec.ports[0].name: Required value; spec.ports[1].name: Required value")]
    untouched(doc, "endpoints", "dns", "dataplane", "reachability", "routes")


# --- a default-deny added to a namespace -----------------------------------------------------------


def test_a_default_deny_cuts_every_connection_of_the_namespace_and_its_dns(tmp_path: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(EXAMPLES / "shop", before)
    (before / "50-networkpolicies.yaml").unlink()
    after = tmp_path / "after"
    shutil.copytree(before, after)
    (after / "60-default-deny.yaml").write_text(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: default-deny, namespace: shop}\n"
        "spec: {podSelector: {}, policyTypes: [Ingress, Egress]}\n")
    doc = diff(before, after)
    assert [(i["subject"], i["text"]) for i in items(doc, "objects")] == [("NetworkPolicy shop/default-deny", "added")]
    lost = {i["subject"]: i for i in items(doc, "reachability")}
    assert {i["effect"] for i in lost.values()} == {"lost"}
    web_api = lost["shop/web[Deployment] → shop/api[Deployment]"]
    assert web_api["text"] == "lost All connections"
    assert web_api["before"]["rule"]["decision"] == "allowed (no policy selects either pod)"
    assert "isolated by NetworkPolicy shop/default-deny" in web_api["after"]["rule"]["decision"]
    # The DNS lookups of every shop pod, and the ingress controller's way in, are among the losses.
    dns = lost["shop/web[Deployment] → kube-system/coredns[Deployment]"]
    assert dns["after"]["rule"]["connection"].endswith("UDP/53")
    assert "ingress-nginx/ingress-nginx-controller[Deployment] → shop/web[Deployment]" in lost
    introduced = {(i["subject"], i["after"]["code"]) for i in items(doc, "findings", "introduced")}
    assert ("Namespace shop", "DNSEgressBlocked") in introduced
    assert ("Ingress shop/shop", "IngressPathFails") in introduced
    assert {i["before"]["code"] for i in items(doc, "findings", "fixed")} == {"PodsNotIsolated"}
    # Routing does not look at policy; the endpoints, names and data plane stay as they were.
    untouched(doc, "endpoints", "dns", "dataplane", "routes")
    assert run("diff", "--before", str(before), "--after", str(after), "--fail-on", "lost").exit_code == 1


# --- an HTTPRoute weight shift -------------------------------------------------------------------


def test_a_weight_shift_moves_the_split_of_every_request_the_rule_answers(tmp_path: Path) -> None:
    after = copy_example(tmp_path, "gateway/store", {"10-gateway.yaml": (
        "- {name: web, port: 80, weight: 90}\n        - {name: web-v2, port: 80, weight: 10}",
        "- {name: web, port: 80, weight: 50}\n        - {name: web-v2, port: 80, weight: 50}")})
    doc = diff(EXAMPLES / "gateway" / "store", after)
    [obj] = items(doc, "objects")
    assert obj["text"] == ("changed: spec.rules[3].backendRefs[0].weight: 90 → 50; "
                           "spec.rules[3].backendRefs[1].weight: 10 → 50")
    [route] = items(doc, "routes")
    assert route["effect"] == "changed"
    assert route["subject"].startswith("Gateway store/store: GET http://www.store.example/ and ")
    assert route["text"] == "split store/web:80 90%, store/web-v2:80 10% → split store/web:80 50%, store/web-v2:80 50%"
    assert "GET http://www.store.example/x" in route["after"]["requests"]
    # The api rule has one backend: its requests are untouched (/apix is not under /api).
    api = {"GET http://www.store.example/api", "GET http://www.store.example/api/x"}
    assert not api & set(route["after"]["requests"])
    untouched(doc, "endpoints", "dns", "dataplane", "reachability", "findings")
    store, shifted = str(EXAMPLES / "gateway" / "store"), str(after)
    assert run("diff", "--before", store, "--after", shifted, "--fail-on", "lost").exit_code == 0


# --- a ClusterNetworkPolicy Pass turned into Deny ------------------------------------------------------


def test_a_pass_turned_deny_overrides_the_namespace_owners_allow(tmp_path: Path) -> None:
    after = copy_example(tmp_path, "cluster-policy", {"40-cluster-policies.yaml": (
        "- name: tenants-to-api\n      action: Pass", "- name: tenants-to-api\n      action: Deny")})
    doc = diff(EXAMPLES / "cluster-policy", after)
    [obj] = items(doc, "objects")
    assert (obj["subject"], obj["text"]) == ("ClusterNetworkPolicy shop-api-delegate",
                                             'changed: spec.ingress[0].action: "Pass" → "Deny"')
    [lost] = items(doc, "reachability")
    assert (lost["effect"], lost["subject"], lost["text"]) == (
        "lost", "tenant-a/app[StatefulSet] → shop/api[StatefulSet]", "lost TCP 8080")
    assert lost["before"]["rule"]["decision"] == (
        "allowed (ingress of shop/api-0: allowed by NetworkPolicy shop/api-allow-tenant-a ingress[0].from[0].ports[0])")
    assert lost["after"]["rule"]["decision"] == (
        "denied (ingress of shop/api-0: denied by ClusterNetworkPolicy `shop-api-delegate` rule `tenants-to-api` "
        "(Admin tier, priority 20))")
    assert (lost["before"]["rule"]["ingress"], lost["after"]["rule"]["ingress"]) == ("NetworkPolicy", "Admin")
    [finding] = items(doc, "findings", "introduced")
    assert finding["after"]["code"] == "NetworkPolicyAllowOverridden"
    untouched(doc, "endpoints", "dns", "dataplane", "routes")


# --- outputs ------------------------------------------------------------------------------------


def test_markdown_is_a_pull_request_comment(typo_fixed: Path) -> None:
    result = run("diff", "--before", str(EXAMPLES / "broken" / "selector-typo"), "--after", str(typo_fixed),
                 "-o", "markdown")
    lines = result.stdout.splitlines()
    assert lines[0] == "### knetsim diff"
    assert "| endpoints |  | 1 |  |  |  |" in lines
    assert ("- **gained** `Service default/web port 80/TCP`: gained 2 endpoints of default/web\\[Deployment\\] "
            "(port 80)") in lines


def test_the_same_input_gives_the_same_bytes(typo_fixed: Path) -> None:
    args = ("diff", "--before", str(EXAMPLES / "broken" / "selector-typo"), "--after", str(typo_fixed), "-o", "json")
    assert run(*args).stdout == run(*args).stdout


def test_bad_sources_and_options_are_exit_2(tmp_path: Path) -> None:
    missing = run("diff", "--before", str(tmp_path / "nope"), "--after", str(EXAMPLES / "shop"))
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    bad_gate = run("diff", "--before", str(EXAMPLES / "shop"), "--after", str(EXAMPLES / "shop"), "--fail-on", "x")
    assert bad_gate.exit_code == 2 and "'x': supported values: lost, gained, findings, any" in bad_gate.output
    bad_rev = run("diff", "--before", "git:no-such-revision:examples/shop", "--after", str(EXAMPLES / "shop"))
    assert bad_rev.exit_code == 2 and "unknown revision 'no-such-revision'" in bad_rev.stderr


# --- BEFORE from git -----------------------------------------------------------------------------


def test_before_from_a_git_revision_of_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI job compares the pull request's folder with the base branch's, read from git (no second checkout)."""
    import subprocess

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "broken" / "selector-typo", repo / "deploy")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "typo")
    app = repo / "deploy" / "app.yaml"
    app.write_text(app.read_text().replace("selector:\n    app: wbe", "selector:\n    app: web"))
    monkeypatch.chdir(repo)
    from_git = diff("git:main:deploy", "deploy")
    from_files = diff(EXAMPLES / "broken" / "selector-typo", typo_fixed_path(tmp_path))
    assert from_git["before"] == "git:main:deploy"
    # The same findings, each naming where its object was written: git:main:deploy/... or the copied files.
    assert without_sources(from_git["layers"]) == without_sources(from_files["layers"])
    missing = run("diff", "--before", "git:main:nowhere", "--after", "deploy")
    assert missing.exit_code == 2 and "git:main:nowhere: no such path at main" in missing.stderr


def without_sources(value: Any) -> Any:
    """``value`` without the doctor findings' ``source`` (the file each object came from)."""
    if isinstance(value, dict):
        return {k: without_sources(v) for k, v in value.items() if k != "source"}
    if isinstance(value, list):
        return [without_sources(v) for v in value]
    return value


def typo_fixed_path(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "fixed", "broken/selector-typo",
                        {"app.yaml": ("selector:\n    app: wbe", "selector:\n    app: web")})


def test_the_json_of_the_docs_is_what_the_command_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    text = Path("docs/diff.md").read_text()
    shown = json.loads(text.split("## `-o json`", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0])
    real = diff("examples/broken/selector-typo", "examples/broken/selector-typo",
                "--after", "examples/changes/selector-fix.yaml")
    assert {k: real[k] for k in ("before", "after", "summary")} == {k: shown[k] for k in ("before", "after", "summary")}
    assert {k: real["layers"][k] for k in shown["layers"]} == shown["layers"]
