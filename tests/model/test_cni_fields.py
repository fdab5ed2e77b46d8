"""The fields of Calico's, Cilium's and Antrea's kinds (model/apis/cni.py): a misspelt or misplaced field is refused
as the CNI's API server (or CRD) refuses it under kubectl's strict field validation, offline as live (tests/policy/
test_calico_live.py, test_antrea_live.py, tests/e2e/test_cilium_policies_live.py), instead of being kept as a key
nothing reads.

A GlobalNetworkPolicy whose ``selector`` is misspelt ``selectr`` would otherwise select every endpoint (an empty
selector is ``all()`` to Calico): a deny meant for one app that denies the whole cluster, with no word said. A
CiliumNetworkPolicy whose ``ingress`` is misspelt ``ingres`` would select its pods and allow nothing in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.helpers import knetsim

from knetsim.model.apis.cni import object_schema, roots
from knetsim.model.kinds import CILIUM, CNI_KINDS, KINDS

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
    cilium = {(k.group, k.kind) for k in KINDS if k.cni == CILIUM}
    assert cilium == {("cilium.io", "CiliumNetworkPolicy"), ("cilium.io", "CiliumClusterwideNetworkPolicy")}
    assert set(roots()) == {(k.group, k.kind) for k in CNI_KINDS} | cilium


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


# Cilium's docs (docs.cilium.io, security/policy: "Layer 3 examples", "Layer 7 examples", "DNS based", "Deny
# policies", "Host policies") and its connectivity-test manifests, restated: one policy using every kind of field
# the CRD has at each place, all of which a Cilium v1.18 cluster stores.
CILIUM_FROM_THE_DOCS = """\
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: l3-l4-l7, namespace: default}
spec:
  description: "L3-L4-L7 policy to restrict access to a backend"
  endpointSelector: {matchLabels: {role: backend}}
  enableDefaultDeny: {ingress: true, egress: false}
  labels: [{key: team, value: web, source: k8s}]
  log: {value: backend-policy}
  ingress:
  - fromEndpoints:
    - matchLabels: {role: frontend}
      matchExpressions: [{key: env, operator: In, values: [prod]}]
    authentication: {mode: required}
    toPorts:
    - ports: [{port: "80", protocol: TCP}, {port: "8000", endPort: 8100, protocol: TCP}]
      rules:
        http:
        - method: GET
          path: "/public/.*"
          host: "api.example.com"
          headers: ["X-My-Header: true"]
          headerMatches: [{name: X-Token, secret: {name: token, namespace: default}, mismatch: LOG, value: v}]
  - fromCIDR: [10.0.0.0/8]
    fromCIDRSet: [{cidr: 192.168.0.0/16, except: [192.168.1.0/24]}, {cidrGroupRef: office},
                  {cidrGroupSelector: {matchLabels: {site: hq}}}]
    icmps: [{fields: [{type: 8, family: IPv4}, {type: EchoRequest, family: IPv6}]}]
  - fromEntities: [host, remote-node]
    fromNodes: [{matchLabels: {node-role.kubernetes.io/control-plane: ""}}]
    fromGroups: [{aws: {securityGroupsIds: [sg-1], securityGroupsNames: [web], region: us-east-1,
                        labels: {a: b}}}]
  - fromEndpoints: [{matchLabels: {app: kafka-client}}]
    toPorts:
    - ports: [{port: "9092", protocol: TCP}]
      rules: {kafka: [{role: produce, topic: deathstar-plans}, {apiKey: fetch, apiVersion: "1", clientID: c}]}
  - toPorts:
    - ports: [{port: "4444"}]
      rules: {l7proto: r2d2, l7: [{cmd: READ, file: "/public/.*"}]}
  ingressDeny:
  - fromEndpoints: [{matchLabels: {role: attacker}}]
    toPorts: [{ports: [{port: "22", protocol: TCP}]}]
    icmps: [{fields: [{type: 0}]}]
  egress:
  - toEndpoints: [{matchLabels: {"k8s:io.kubernetes.pod.namespace": kube-system, "k8s:k8s-app": kube-dns}}]
    toPorts:
    - ports: [{port: "53", protocol: ANY}]
      rules: {dns: [{matchPattern: "*"}, {matchName: cilium.io}]}
  - toFQDNs: [{matchName: api.github.com}, {matchPattern: "*.cilium.io"}]
    toPorts:
    - ports: [{port: "443", protocol: TCP}]
      serverNames: [api.github.com]
      terminatingTLS: {secret: {name: tls, namespace: default}, certificate: tls.crt, privateKey: tls.key}
      originatingTLS: {secret: {name: ca}, trustedCA: ca.crt}
  - toServices:
    - k8sService: {serviceName: db, namespace: default}
    - k8sServiceSelector: {selector: {matchLabels: {tier: db}}, namespace: default}
  - toCIDR: [1.1.1.1/32]
    toCIDRSet: [{cidr: 0.0.0.0/0, except: [10.0.0.0/8]}]
    toEntities: [world]
    toGroups: [{aws: {securityGroupsIds: [sg-2]}}]
    toNodes: [{matchLabels: {zone: a}}]
    icmps: [{fields: [{type: 8}]}]
  - toEndpoints: [{}]
    toPorts:
    - ports: [{port: "8080"}]
      listener: {envoyConfig: {kind: CiliumEnvoyConfig, name: envoy-lb}, name: envoy-lb-listener, priority: 10}
  egressDeny:
  - toEntities: [world]
    toCIDRSet: [{cidr: 169.254.169.254/32}]
    toPorts: [{ports: [{port: "25"}]}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: host-fw}
specs:
- description: "a host policy: what may reach the control plane's nodes"
  nodeSelector: {matchLabels: {node-role.kubernetes.io/control-plane: ""}}
  ingress:
  - fromEntities: [cluster]
    toPorts: [{ports: [{port: "6443", protocol: TCP}]}]
- endpointSelector: {}
  egressDeny:
  - toEndpoints: [{matchLabels: {"k8s:io.kubernetes.pod.namespace": secret}}]
"""

L3_RULE = """\
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: l3-rule}
spec:
  endpointSelector: {matchLabels: {role: backend}}
  ingress:
  - fromEndpoints: [{matchLabels: {role: frontend}}]
"""


def test_every_field_cilium_declares_is_accepted_where_cilium_takes_it(tmp_path: Path) -> None:
    result = knetsim("validate", "-f", write(tmp_path, CILIUM_FROM_THE_DOCS))
    assert result.exit_code == 0, result.output
    assert "2 objects valid" in result.output


def test_validate_refuses_a_misspelt_cilium_field_naming_file_object_and_path(tmp_path: Path) -> None:
    path = write(tmp_path, L3_RULE.replace("  ingress:", "  ingres:"))
    result = knetsim("validate", "-f", path)
    assert result.exit_code == 2
    line = result.output.splitlines()[0]
    assert line == (
        f'error: {path}, document 1: CiliumNetworkPolicy default/l3-rule: CiliumNetworkPolicy in version "v2" cannot '
        'be handled as a CiliumNetworkPolicy: strict decoding error: unknown field "spec.ingres"')
    docs = (Path(__file__).parents[2] / "docs" / "admission.md").read_text()
    assert line.replace(path, "in.yaml") in docs.splitlines()  # docs/admission.md shows this line
    assert knetsim("validate", "-f", write(tmp_path, L3_RULE)).exit_code == 0


def test_fields_cilium_takes_in_one_place_only_are_refused_elsewhere(tmp_path: Path) -> None:
    """toFQDNs is an egress allow rule's (an ingress rule has no DNS names to match); a deny rule's toPorts have no
    layer 7 rules; a clusterwide policy's second rule is checked as the first."""
    fqdn_in = L3_RULE.replace("fromEndpoints: [{matchLabels: {role: frontend}}]", "toFQDNs: [{matchName: a.io}]")
    result = knetsim("validate", "-f", write(tmp_path, fqdn_in))
    assert result.exit_code == 2
    assert 'strict decoding error: unknown field "spec.ingress[0].toFQDNs"' in result.output
    assert knetsim("validate", "-f", write(tmp_path, fqdn_in.replace("ingress:", "egress:"))).exit_code == 0

    l7_deny = L3_RULE.replace("ingress:", "ingressDeny:").replace(
        "frontend}}]\n", "frontend}}]\n    toPorts: [{ports: [{port: '80'}], rules: {http: [{path: /}]}}]\n")
    result = knetsim("validate", "-f", write(tmp_path, l7_deny))
    assert result.exit_code == 2
    assert 'unknown field "spec.ingressDeny[0].toPorts[0].rules"' in result.output

    specs = CILIUM_FROM_THE_DOCS.split("---\n")[1].replace("  egressDeny:", "  egresDeny:")
    result = knetsim("validate", "-f", write(tmp_path, specs))
    assert result.exit_code == 2
    assert 'CiliumClusterwideNetworkPolicy host-fw: ' in result.output
    assert 'unknown field "specs[1].egresDeny"' in result.output


def test_a_refused_cilium_policy_is_left_out_of_the_answer(tmp_path: Path) -> None:
    """The cluster never stores the misspelt policy: b stays open to a, and stderr says why."""
    policy = L3_RULE.replace("role: backend", "app: b").replace("role: frontend", "app: nobody")
    (tmp_path / "cluster.yaml").write_text("cni: cilium\n")
    args = ["policy", "check", "--cluster-config", str(tmp_path / "cluster.yaml"),
            "--from", "default/a", "--to", "default/b", "--port", "80"]
    misspelt = knetsim(*args, "-f", write(tmp_path, PODS, policy.replace("  ingress:", "  ingres:")))
    assert misspelt.stdout.startswith("ALLOWED"), misspelt.output
    assert 'unknown field "spec.ingres"' in misspelt.stderr
    spelt = knetsim(*args, "-f", write(tmp_path, PODS, policy))
    assert spelt.stdout.startswith("DENIED"), spelt.output


def _cilium_crd_paths() -> set[str]:
    """Every property path of cilium/cilium's CRD (pkg/k8s/apis/cilium.io/client/crds/v2/
    ciliumnetworkpolicies.yaml, main; ciliumclusterwidenetworkpolicies.yaml has the same), read off it."""
    sel = {"matchExpressions": {"key": {}, "operator": {}, "values": {}}, "matchLabels": {}}
    icmps = {"fields": {"family": {}, "type": {}}}
    cidr_set = {"cidr": {}, "cidrGroupRef": {}, "cidrGroupSelector": sel, "except": {}}
    groups = {"aws": {"labels": {}, "region": {}, "securityGroupsIds": {}, "securityGroupsNames": {}}}
    ports = {"ports": {"endPort": {}, "port": {}, "protocol": {}}}
    secret = {"name": {}, "namespace": {}}
    tls = {"certificate": {}, "privateKey": {}, "secret": secret, "trustedCA": {}}
    fqdn = {"matchName": {}, "matchPattern": {}}
    port_rule = {**ports, "listener": {"envoyConfig": {"kind": {}, "name": {}}, "name": {}, "priority": {}},
                 "originatingTLS": tls, "terminatingTLS": tls, "serverNames": {},
                 "rules": {"dns": fqdn, "http": {"headerMatches": {"mismatch": {}, "name": {}, "secret": secret,
                                                                   "value": {}},
                                                 "headers": {}, "host": {}, "method": {}, "path": {}}}}
    services = {"k8sService": {"namespace": {}, "serviceName": {}},
                "k8sServiceSelector": {"namespace": {}, "selector": sel}}
    egress = {"icmps": icmps, "toCIDR": {}, "toCIDRSet": cidr_set, "toEndpoints": sel, "toEntities": {},
              "toGroups": groups, "toNodes": sel, "toRequires": {}, "toServices": services}
    ingress = {"fromCIDR": {}, "fromCIDRSet": cidr_set, "fromEndpoints": sel, "fromEntities": {},
               "fromGroups": groups, "fromNodes": sel, "fromRequires": {}, "icmps": icmps}
    rule = {"description": {}, "enableDefaultDeny": {"egress": {}, "ingress": {}}, "endpointSelector": sel,
            "egress": {**egress, "authentication": {"mode": {}}, "toFQDNs": fqdn, "toPorts": port_rule},
            "egressDeny": {**egress, "toPorts": ports},
            "ingress": {**ingress, "authentication": {"mode": {}}, "toPorts": port_rule},
            "ingressDeny": {**ingress, "toPorts": ports},
            "labels": {"key": {}, "source": {}, "value": {}}, "log": {"value": {}}, "nodeSelector": sel}
    node_status = {"annotations": {}, "enforcing": {}, "error": {}, "lastUpdated": {}, "localPolicyRevision": {},
                   "ok": {}}
    conditions = {"lastTransitionTime": {}, "message": {}, "reason": {}, "status": {}, "type": {}}
    tree = {"apiVersion": {}, "kind": {}, "metadata": {}, "spec": rule, "specs": rule,
            "status": {"conditions": conditions, "derivativePolicies": node_status}}

    def walk(node: dict, prefix: str) -> Iterator[str]:
        for key, sub in node.items():
            yield prefix + key
            yield from walk(sub, f"{prefix}{key}.")
    return set(walk(tree, ""))


def _schema_paths(node: dict, prefix: str = "") -> Iterator[str]:
    """Property paths, through list items and map values (a path names no index or key, as the CRD's tree)."""
    while True:
        inner = node.get("items") or node.get("additionalProperties")
        if not isinstance(inner, dict) or not ("properties" in inner or "items" in inner):
            break
        node = inner
    for key, sub in (node.get("properties") or {}).items():
        yield prefix + key
        yield from _schema_paths(sub, f"{prefix}{key}.")


def test_every_field_of_ciliums_crd_is_declared_no_false_alarm() -> None:
    """A field the CRD has and knetsim lacks would refuse a valid policy. What knetsim adds is what older
    releases take (v1.18's kafka/l7proto/l7 rules, status.nodes before v1.15)."""
    upstream = _cilium_crd_paths()
    for kind in ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"):
        declared = set(_schema_paths(object_schema("cilium.io", kind) or {}))
        assert upstream - declared == set()
        extra = {p.split(".")[-1] if "rules." in p else p.split(".")[1] for p in declared - upstream}
        assert extra <= {"kafka", "l7proto", "l7", "role", "apiKey", "apiVersion", "clientID", "topic", "nodes"}


def test_a_value_of_the_wrong_type_or_a_missing_action_is_refused_as_the_crd_refuses_it(tmp_path: Path) -> None:
    """Calico's CRD types its fields: a string where rules go, or a rule without its action, is refused with
    apiextensions' words (the CRD form a cluster without calico-apiserver stores), never read as an empty policy."""
    cases = ((DENY_B + "  ingress: allow-all\n",
              'spec.ingress: Invalid value: "string": spec.ingress in body must be of type array: "string"'),
             (DENY_B + "  ingress: [{source: {selector: app == 'a'}}]\n", "spec.ingress[0].action: Required value"))
    for text, said in cases:
        result = knetsim("validate", "-f", write(tmp_path, text))
        assert result.exit_code == 2, result.output
        assert f"GlobalNetworkPolicy deny-to-b: {said}" in result.output


def test_validate_refuses_what_the_cnis_own_admission_refuses(tmp_path: Path) -> None:
    """Beyond the fields: a Calico selector that does not parse (calico-apiserver's 422) and an Antrea policy in a
    tier that does not exist (Antrea's webhook) are refused by `knetsim validate` as by `kubectl apply` live; a
    Tier the input creates is one that exists."""
    result = knetsim("validate", "-f", write(tmp_path, DENY_B.replace("app == 'b'", "app = = 'b'")))
    assert result.exit_code == 2
    assert ('GlobalNetworkPolicy.projectcalico.org "deny-to-b" is invalid: spec.selector: Invalid value: '
            "\"app = = 'b'\"") in result.output
    in_tier = ANTREA_FQDN_INGRESS.replace("ingress:", "egress:").replace("from:", "to:").replace(
        "priority: 5", "priority: 5\n  tier: securityopps")
    result = knetsim("validate", "-f", write(tmp_path, in_tier))
    assert result.exit_code == 2
    assert ('admission webhook "acnpvalidator.antrea.io" denied the request: tier securityopps does not exist'
            in result.output)
    tier = "apiVersion: crd.antrea.io/v1beta1\nkind: Tier\nmetadata: {name: securityopps}\nspec: {priority: 10}\n"
    assert knetsim("validate", "-f", write(tmp_path, tier, in_tier)).exit_code == 0


def test_a_namespaced_cni_policy_is_checked_by_its_cni_and_an_old_requires_selector_is_kept(tmp_path: Path) -> None:
    """Calico's and Antrea's NetworkPolicy share the Kubernetes kind's name: validate checks them by group, as their
    CNI refuses them. Cilium's deprecated fromRequires took endpoint selectors in earlier releases: kept."""
    calico_np = ("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: np, namespace: default}\n"
                 "spec: {selector: app = 'web', types: [Ingress]}\n")
    result = knetsim("validate", "-f", write(tmp_path, calico_np))
    assert result.exit_code == 2 and 'NetworkPolicy.projectcalico.org "np" is invalid: spec.selector' in result.output
    requires = ("apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: req, namespace: default}\n"
                "spec:\n  endpointSelector: {}\n  ingress: [{fromRequires: [{matchLabels: {env: prod}}]}]\n")
    assert knetsim("validate", "-f", write(tmp_path, requires)).exit_code == 0
