"""``--validate=strict|warn|ignore``: kubectl's option on every command that reads manifests.

Given the shapes peer analysers accept and a v1.35 API server refuses (restated from the inputs
netpol-analyzer ships with its tests: a NetworkPolicy with ``status: {}``, a multi-port Service
without port names, pod templates trimmed to labels and ports), strict leaves them out (today's
default), warn admits what only had unknown fields, ignore analyses everything as written and says
so, object by object, in the answer. Values that mean nothing as written (a CIDR ``A``) stay out.
"""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path

import pytest
import yaml
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from knetsim import Cluster
from knetsim.cli.lazy import command_index
from knetsim.cli.main import cli
from knetsim.doctor import diagnose
from knetsim.policy.matrix import matrix

NETPOL_WITH_STATUS = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-api, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: api}}}], ports: [{port: 5432}]}]
status: {}
"""
# Pods as peer analysers' inputs often trim them: no container name, no image.
WORKLOADS = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{ports: [{containerPort: 8080, name: http}, {containerPort: 9090, name: metrics}]}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: shop}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: pg, image: postgres:16, ports: [{containerPort: 5432}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  selector: {app: api}
  ports: [{port: 8080, targetPort: http}, {port: 9090, targetPort: metrics}]
"""


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    (tmp_path / "netpol.yaml").write_text(NETPOL_WITH_STATUS)
    return tmp_path



def test_strict_is_the_default_and_leaves_out_what_the_api_server_refuses(inputs: Path) -> None:
    default, strict = run("matrix", "-f", str(inputs), "-o", "json"), run("matrix", "-f", str(inputs), "-o", "json",
                                                                         "--validate=strict")
    assert default.exit_code == strict.exit_code == 0
    assert default.stdout == strict.stdout and default.stderr == strict.stderr
    assert 'strict decoding error: unknown field "status"' in strict.stderr
    assert "spec.template.spec.containers[0].name: Required value" in strict.stderr
    assert "spec.ports[0].name: Required value" in strict.stderr
    assert json.loads(strict.stdout)["workloads"] == ["shop/db[Deployment]"]  # the api Deployment is refused


def test_warn_drops_unknown_fields_with_the_api_servers_warning(inputs: Path) -> None:
    result = run("matrix", "-f", str(inputs), "-o", "list", "--validate=warn")
    assert result.exit_code == 0
    assert ('netpol.yaml, document 1: NetworkPolicy shop/db-from-api: unknown field "status" (dropped, as the API '
            'server does with fieldValidation=Warn)') in result.stderr
    # The policy is in force (db admits nothing: api is refused by validation, which warn does not relax).
    assert "spec.ports[0].name: Required value" in result.stderr
    assert "=> shop/db[Deployment]" not in result.stdout


def test_ignore_analyses_everything_as_written_and_marks_each_object(inputs: Path) -> None:
    result = run("matrix", "-f", str(inputs), "-o", "json", "--validate=ignore")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["workloads"] == ["shop/api[Deployment]", "shop/db[Deployment]"]
    allowed = {(c["from"], c["to"]): c["allowed"] for c in doc["connections"]}
    assert allowed[("shop/api[Deployment]", "shop/db[Deployment]")] == [{"protocol": "TCP", "ports": [[5432, 5432]]}]
    marked = [n for n in doc["notes"] if "analysed as written (--validate=ignore)" in n]
    assert [n.split(": analysed")[0].rsplit(": ", 1)[1] for n in marked] == [
        "Deployment shop/api", "Service shop/api"]
    assert "spec.template.spec.containers[0].image: Required value" in marked[0]
    assert "spec.ports[0].name: Required value; spec.ports[1].name: Required value" in marked[1]
    # ...and on stderr, as every command reports it.
    assert result.stderr.count("analysed as written (--validate=ignore)") == 2


def test_kubectl_spellings_and_a_bad_value(inputs: Path) -> None:
    on, off = (run("matrix", "-f", str(inputs), "-o", "list", f"--validate={v}") for v in ("true", "false"))
    assert on.stdout == run("matrix", "-f", str(inputs), "-o", "list").stdout
    assert off.stdout == run("matrix", "-f", str(inputs), "-o", "list", "--validate=ignore").stdout
    bad = run("matrix", "-f", str(inputs), "--validate=loose")
    assert bad.exit_code == 2
    assert "invalid argument 'loose': must be one of strict, warn, ignore" in bad.output


def test_values_without_a_meaning_stay_out_even_as_written(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(WORKLOADS + textwrap.dedent("""\
        ---
        apiVersion: networking.k8s.io/v1
        kind: NetworkPolicy
        metadata: {name: bad-cidr, namespace: shop}
        spec:
          podSelector: {}
          ingress: [{from: [{ipBlock: {cidr: A}}]}]
        """))
    result = run("matrix", "-f", str(tmp_path), "-o", "list", "--validate=ignore")
    assert result.exit_code == 0
    assert 'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "A"' in result.stderr
    assert "shop/api[Deployment] => shop/db[Deployment] : All connections" in result.stdout  # no policy applies


def test_a_custom_kind_the_crd_refuses_is_analysed_as_written(inputs: Path) -> None:
    """An AdminNetworkPolicy whose subject names pods without the namespaceSelector the CRD requires (as
    netpol-analyzer's own inputs write it): left out by default, with the CRD's errors; analysed with ignore,
    the notice that the CEL rules were skipped deciding nothing."""
    (inputs / "anp.yaml").write_text(textwrap.dedent("""\
        apiVersion: policy.networking.k8s.io/v1alpha1
        kind: AdminNetworkPolicy
        metadata: {name: api-egress}
        spec:
          priority: 7
          subject: {pods: {podSelector: {matchLabels: {app: api}}}}
          egress:
            - {name: db, action: Allow, to: [{namespaces: {}}], ports: [{portNumber: {protocol: TCP, port: 5432}}]}
            - {name: rest, action: Deny, to: [{namespaces: {}}]}
        """))
    strict = run("matrix", "-f", str(inputs), "-o", "list")
    assert "AdminNetworkPolicy api-egress: spec.subject.pods.namespaceSelector: Required value" in strict.stderr
    assert "some validation rules were not checked" in strict.stderr
    ignore = run("matrix", "-f", str(inputs), "-o", "list", "--validate=ignore")
    assert ignore.exit_code == 0, ignore.output
    assert "AdminNetworkPolicy api-egress: analysed as written (--validate=ignore)" in ignore.stderr
    # The egress rules of the policy decide for api's pods; db's are left as the NetworkPolicy says.
    assert "shop/api[Deployment] => shop/db[Deployment] : TCP 5432" in ignore.stdout
    assert "shop/api[Deployment] => shop/db[Deployment] : TCP 5432" not in strict.stdout


def test_every_command_that_reads_manifests_takes_validate() -> None:
    index, _ = command_index()
    readers = []
    for name in sorted(index):
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        for sub in (command.commands.values() if hasattr(command, "commands") else [command]):
            options = {o for p in sub.params for o in getattr(p, "opts", [])}
            if "--filename" in options:
                readers.append(sub.name)
                assert "--validate" in options, f"{name} {sub.name}"
    assert {"matrix", "trace", "doctor", "get", "validate"} <= set(readers)


def _leaves(value: object, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in [(*path, k), *_leaves(v, (*path, k))]]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in [(*path, i), *_leaves(v, (*path, i))]]
    return []


def test_no_field_removed_from_an_object_analysed_as_written_breaks_an_answer() -> None:
    """Each field of each object of the selector-typo example deleted in turn: whatever ignore keeps, the
    matrix and the doctor answer (a removed name or pod template is refused instead)."""
    docs = list(yaml.safe_load_all((EXAMPLES / "broken" / "selector-typo" / "app.yaml").read_text()))
    kept = 0
    for i, doc in enumerate(docs):
        for path in _leaves(doc):
            if path[0] in ("apiVersion", "kind"):
                continue
            changed = copy.deepcopy(docs)
            parent = changed[i]
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
            cluster = Cluster.from_yaml(yaml.safe_dump_all(changed), strict=False, validation="ignore")
            kept += any(n.code == "InvalidKept" for n in cluster.notices)
            list(matrix(cluster.state).connections())
            diagnose(cluster.state, cluster.errors)
    assert kept >= 10
