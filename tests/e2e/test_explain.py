"""Seed "kubectl explain": the seven commands of the notes, and the fields each comment names.

Given the OpenAPI v3 documents `knetsim up` serves (schemas from kubernetes-validate), then explain
prints the field, its type and the sub-fields the notes list next to each command.
"""

from __future__ import annotations

import re

import pytest

from .conftest import Cluster

EXPLAIN = """\
kubectl explain service.spec.ports               # port、targetPort、nodePort、name
kubectl explain service.spec.type
kubectl explain ingress.spec.rules.http.paths    # path、pathType、backend
kubectl explain ingress.spec.ingressClassName
kubectl explain networkpolicy.spec.ingress.from  # podSelector、namespaceSelector、ipBlock
kubectl explain networkpolicy.spec.egress
kubectl explain networkpolicy.spec.policyTypes
"""

CASES = [
    # (command line, KIND, GROUP or "", FIELD line, sub-fields that must be listed)
    (0, "Service", "", "FIELD: ports <[]ServicePort>", ["port", "targetPort", "nodePort", "name", "protocol"]),
    (1, "Service", "", "FIELD: type <string>", []),
    (2, "Ingress", "networking.k8s.io", "FIELD: paths <[]HTTPIngressPath>", ["path", "pathType", "backend"]),
    (3, "Ingress", "networking.k8s.io", "FIELD: ingressClassName <string>", []),
    (4, "NetworkPolicy", "networking.k8s.io", "FIELD: from <[]NetworkPolicyPeer>",
     ["podSelector", "namespaceSelector", "ipBlock"]),
    (5, "NetworkPolicy", "networking.k8s.io", "FIELD: egress <[]NetworkPolicyEgressRule>", ["to", "ports"]),
    (6, "NetworkPolicy", "networking.k8s.io", "FIELD: policyTypes <[]string>", []),
]


@pytest.mark.parametrize(("line", "kind", "group", "field", "subfields"), CASES)
def test_explain_as_in_the_notes(cluster: Cluster, line: int, kind: str, group: str, field: str,
                                 subfields: list[str]) -> None:
    out = cluster.sh(EXPLAIN.splitlines()[line]).stdout
    assert f"KIND:       {kind}\n" in out
    assert "VERSION:    v1\n" in out
    assert (f"GROUP:      {group}\n" in out) == bool(group)
    assert field in out
    listed = set(re.findall(r"^  (\w+)\t<", out, flags=re.M))
    assert set(subfields) <= listed, listed


def test_explain_type_documents_the_four_service_types(cluster: Cluster) -> None:
    out = cluster.sh("kubectl explain service.spec.type").stdout
    for value in ("ExternalName", "ClusterIP", "NodePort", "LoadBalancer"):
        assert value in out


def test_explain_path_type_is_required_and_enumerated(cluster: Cluster) -> None:
    out = cluster.sh("kubectl explain ingress.spec.rules.http.paths").stdout
    assert re.search(r"^  pathType\t<string> -required-$", out, flags=re.M)
    assert re.search(r"^  backend\t<IngressBackend> -required-$", out, flags=re.M)


def test_explain_an_unknown_field_fails_like_kubectl(cluster: Cluster) -> None:
    out = cluster.sh("kubectl explain service.spec.nope", check=False)
    assert out.returncode == 1
    assert 'field "nope" does not exist' in out.stderr
