"""The first CLI commands: exit codes and the exact lines users read."""

from __future__ import annotations

import json
import textwrap

from click.testing import CliRunner
from tests.builders import deployment, manifest, service
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from knetsim.cli.main import cli

SHOP = str(EXAMPLES / "shop")



def test_get_services_prints_kubectl_columns() -> None:
    result = run("get", "svc", "-f", SHOP, "-n", "shop")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["web-np"][1:3] == ["NodePort", rows["web-np"][2]] and rows["web-np"][4] == "80:30080/TCP"
    assert rows["db"][2] == "None"
    assert rows["payments"][3] == "api.payments.example.com"
    assert rows["web-lb"][3] == "172.18.255.200"


def test_get_endpointslices_by_service_name_label() -> None:
    result = run("get", "endpointslices", "-f", SHOP, "-n", "shop", "-l", "kubernetes.io/service-name=api")
    assert result.exit_code == 0, result.output
    header, row = result.output.splitlines()
    assert header.split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert row.split()[2] == "8080,9090"
    assert len(row.split()[3].split(",")) == 3


def test_get_endpoints_mirrors_the_slices_as_the_endpoints_controller_does(tmp_path) -> None:
    result = CliRunner().invoke(cli, ["get", "endpoints", "-f", SHOP, "-n", "shop"])
    assert result.exit_code == 0, result.output
    # The API server's deprecation warning, as kubectl prints it, on stderr only.
    assert result.stderr == "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n"
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    slices = json.loads(run("get", "endpointslices", "-f", SHOP, "-n", "shop", "-l",
                            "kubernetes.io/service-name=db", "-o", "json").output)["items"]
    db = sorted(f"{a}:5432" for es in slices for ep in es["endpoints"] for a in ep["addresses"])
    assert rows["db"][1] == ",".join(db)
    assert "payments" not in rows  # an ExternalName Service has no endpoints object

    # A selector-less Service keeps the Endpoints its owner wrote; one with a selector gets the controller's.
    (tmp_path / "app.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Service
        metadata: {name: legacy-db}
        spec: {ports: [{port: 5432}]}
        ---
        apiVersion: v1
        kind: Endpoints
        metadata: {name: legacy-db}
        subsets: [{addresses: [{ip: 192.168.10.5}], ports: [{port: 5432}]}]
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec: {selector: {app: web}, ports: [{port: 80}]}
        ---
        apiVersion: v1
        kind: Endpoints
        metadata: {name: web}
        subsets: [{addresses: [{ip: 192.168.10.6}], ports: [{port: 80}]}]
        """))
    result = run("get", "endpoints", "-f", str(tmp_path / "app.yaml"))
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[1:]}
    assert rows == {"kubernetes": "172.18.0.2:6443", "legacy-db": "192.168.10.5:5432", "web": "<none>"}


def test_get_wide_all_namespaces_and_labels() -> None:
    result = run("get", "pods", "-f", SHOP, "-A", "-o", "wide", "--show-labels", "-l", "app=db")
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"] and "IP" in lines[0] and lines[0].endswith("LABELS")
    assert [line.split()[1] for line in lines[1:]] == ["db-0", "db-1"]


def test_get_json_is_a_list_and_a_single_object_is_itself() -> None:
    listed = json.loads(run("get", "svc", "-f", SHOP, "-n", "shop", "-o", "json").output)
    assert listed["kind"] == "List" and len(listed["items"]) == 6
    single = json.loads(run("get", "svc", "api", "-f", SHOP, "-n", "shop", "-o", "json").output)
    assert single["kind"] == "Service" and single["spec"]["ports"][0]["targetPort"] == "http"


def test_get_unknown_kind_is_a_usage_error() -> None:
    result = run("get", "widgets")
    assert result.exit_code == 2
    assert 'the server doesn\'t have a resource type "widgets"' in result.output


def test_validate_reports_all_errors_and_exits_2(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(textwrap.dedent("""
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec:
          ports: [{name: a, port: 80}, {port: 81}]
        ---
        apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata: {name: shop}
        spec:
          rules: [{http: {paths: [{path: /api, backend: {service: {name: api, port: {number: 80}}}}]}}]
    """))
    result = CliRunner().invoke(cli, ["validate", "-f", str(bad)])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: {bad}, document 1: Service default/web: spec.ports[1].name: Required value",
        f"error: {bad}, document 2: Ingress default/shop: spec.rules[0].http.paths[0].pathType: Required value: "
        "pathType must be specified",
        "2 errors; 0 object(s) valid, 2 rejected",
    ]


def test_validate_ok() -> None:
    result = run("validate", "-f", SHOP)
    assert result.exit_code == 0
    assert result.output.strip().endswith("objects valid")


def test_endpoints_names_the_selector_typo_and_exits_1() -> None:
    # The Service's selector has a typo (wbe) the hint should name.
    typo = manifest(deployment("web", 2, container="nginx", port=None),
                    service("web", selector={"app": "wbe"}, port_name=None))
    result = run("endpoints", "web", "-f", "-", input=typo)
    assert result.exit_code == 1
    assert "Verdict:   no pod in namespace 'default' matches the selector app=wbe" in result.output
    assert ("Hint: selector wants app=wbe; the closest label on a pod is app=web (value differs by 1 character(s))."
            in result.output)


def test_endpoints_ready_service_exits_0() -> None:
    result = run("endpoints", "shop/api", "-f", SHOP, "-o", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert len(data["ready_addresses"]) == 3 and data["verdict"] == "3 ready endpoint(s)"


def test_output_is_byte_identical_across_runs() -> None:
    first = run("get", "all", "-f", SHOP, "-A", "-o", "yaml").output
    assert first == run("get", "all", "-f", SHOP, "-A", "-o", "yaml").output
    assert "coredns" in first


def test_output_does_not_depend_on_the_hash_seed() -> None:
    """Set iteration order changes with PYTHONHASHSEED; two processes must still print the same bytes."""
    import os
    import subprocess
    import sys

    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        for args in (["get", "all", "-A", "-o", "yaml"], ["doctor", "--all", "-o", "json"],
                     ["render", "iptables"], ["matrix", "-n", "shop", "-o", "json"]):
            proc = subprocess.run([sys.executable, "-m", "knetsim.cli.main", *args, "-f", SHOP], env=env,
                                  capture_output=True, text=True, timeout=120)
            outputs.add((tuple(args), proc.stdout))
    assert len(outputs) == 4


def test_nothing_found_names_the_namespace_only_for_namespaced_kinds() -> None:
    assert run("get", "networkpolicies", "-f", SHOP).stderr == "No resources found in default namespace.\n"
    assert run("get", "customresourcedefinitions", "-f", SHOP).stderr == "No resources found.\n"


def test_naming_an_object_that_does_not_exist_is_bad_input() -> None:
    missing = run("get", "svc", "nosuch", "-f", SHOP, "-n", "shop")
    assert missing.exit_code == 2
    assert 'services "nosuch" not found in namespace "shop"' in missing.output
    assert run("endpoints", "nosuch", "-f", SHOP, "-n", "shop").exit_code == 2
    one = run("get", "svc", "nosuch", "-f", SHOP, "-n", "shop", "-o", "json")
    assert (one.exit_code, one.stdout) == (2, "")  # no empty List for the one object asked for
    # As kubectl: each missing name is reported, and the names that exist are printed all the same.
    some = run("get", "svc", "web", "nosuch", "db", "gone", "-f", SHOP, "-n", "shop")
    assert some.exit_code == 2
    assert [line.split()[0] for line in some.stdout.splitlines()] == ["NAME", "web", "db"]
    assert some.stderr.splitlines() == ['Error from server (NotFound): services "nosuch" not found in namespace "shop"',
                                        'Error from server (NotFound): services "gone" not found in namespace "shop"']
