"""The fields of Calico's and Antrea's kinds (model/apis/cni.py): a misspelt or misplaced field is refused as the
CNI's API server refuses it under kubectl's strict field validation, offline as live (tests/policy/
test_calico_live.py, test_antrea_live.py), instead of being kept as a key nothing reads.

A GlobalNetworkPolicy whose ``selector`` is misspelt ``selectr`` would otherwise select every endpoint (an empty
selector is ``all()`` to Calico): a deny meant for one app that denies the whole cluster, with no word said.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import knetsim

from knetsim.model.apis.cni import ROOTS
from knetsim.model.kinds import CNI_KINDS

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: a, labels: {app: a}}
spec: {containers: [{name: c, image: nginx, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, labels: {app: b}}
spec: {containers: [{name: c, image: nginx, ports: [{containerPort: 80}]}]}
"""

DENY_B = """\
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-to-b}
spec:
  selector: app == 'b'
  types: [Ingress]
"""

ANTREA_FQDN_INGRESS = """\
apiVersion: crd.antrea.io/v1beta1
kind: ClusterNetworkPolicy
metadata: {name: fqdn-in}
spec:
  priority: 5
  appliedTo: [{podSelector: {matchLabels: {app: b}}}]
  ingress:
  - action: Drop
    from: [{fqdn: example.com}]
"""


def write(tmp_path: Path, *documents: str) -> str:
    (tmp_path / "in.yaml").write_text("---\n".join(documents))
    return str(tmp_path / "in.yaml")


def test_every_cni_kind_has_its_fields_declared() -> None:
    assert set(ROOTS) == {(k.group, k.kind) for k in CNI_KINDS}


def test_validate_refuses_a_misspelt_calico_field_naming_file_object_and_path(tmp_path: Path) -> None:
    path = write(tmp_path, DENY_B.replace("  selector:", "  selectr:"))
    result = knetsim("validate", "-f", path)
    assert result.exit_code == 2
    line = result.output.splitlines()[0]
    assert line == (
        f'error: {path}, document 1: GlobalNetworkPolicy deny-to-b: GlobalNetworkPolicy in version "v3" cannot be '
        'handled as a GlobalNetworkPolicy: strict decoding error: unknown field "spec.selectr"')
    docs = (Path(__file__).parents[2] / "docs" / "admission.md").read_text()
    assert line.replace(path, "in.yaml") in docs.splitlines()  # docs/admission.md shows this line


def test_a_field_antrea_takes_only_in_egress_is_refused_in_an_ingress_peer(tmp_path: Path) -> None:
    result = knetsim("validate", "-f", write(tmp_path, ANTREA_FQDN_INGRESS))
    assert result.exit_code == 2
    assert 'strict decoding error: unknown field "spec.ingress[0].from[0].fqdn"' in result.output
    assert knetsim("validate", "-f", write(tmp_path, ANTREA_FQDN_INGRESS.replace("ingress:", "egress:")
                                           .replace("from:", "to:"))).exit_code == 0


def test_the_refused_policy_is_left_out_of_the_answer_as_kubectl_apply_leaves_it_out(tmp_path: Path) -> None:
    """The cluster never stores the misspelt policy, so b is reachable there: the answer says so, and says why on
    stderr. Spelt right, the same policy denies."""
    args = ["policy", "check", "--from", "default/a", "--to", "default/b", "--port", "80"]
    misspelt = knetsim(*args, "-f", write(tmp_path, PODS, DENY_B.replace("  selector:", "  selectr:")))
    assert misspelt.stdout.startswith("ALLOWED"), misspelt.output
    assert 'unknown field "spec.selectr"' in misspelt.stderr
    spelt = knetsim(*args, "-f", write(tmp_path, PODS, DENY_B))
    assert spelt.stdout.startswith("DENIED"), spelt.output
