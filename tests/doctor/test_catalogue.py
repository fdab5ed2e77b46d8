"""docs/doctor.md's catalogue is every finding the doctor can emit, each example in it produced here.

The codes the code can emit are read from the modules that make findings (the first argument of every
``...Finding(...)`` call, each route kind of a ``f"{kind}..."`` code, and the codes ingress and gateway findings
pick from tables); the catalogue's rows must be exactly those. Each row's example is the message the doctor
prints for a scenario below (examples/ or a break restated here), cut at 150 characters; a code no scenario
produces yet shows "—".

    python tests/doctor/test_catalogue.py   # prints the example column as it should be
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

import pytest
from bench.doctor_corpus import load as load_corpus

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.doctor.scenarios import CLIENT, INIT_WAITS, NAME_LABEL, UNKNOWN, web  # noqa: E402
from tests.doctor.test_debug_running_pods import CRASHING, EXEC_PROBE, SERVICE  # noqa: E402
from tests.doctor.test_probe_restarts import (  # noqa: E402
    CONFIG,
    CONFIG_UNREAD,
    LIVENESS_404,
    STARTUP_PORT,
    UNKNOWN_APP,
)

DOC = ROOT / "docs" / "doctor.md"
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute")
SOURCES = [*sorted((ROOT / "src/knetsim/doctor").glob("*.py")), ROOT / "src/knetsim/policy/lint.py",
           ROOT / "src/knetsim/policy/cluster_lint.py", ROOT / "src/knetsim/ingress/findings.py",
           ROOT / "src/knetsim/ingress/controllers.py", ROOT / "src/knetsim/gateway/findings.py",
           ROOT / "src/knetsim/dataplane/bootstrap.py", ROOT / "src/knetsim/dns/coredns.py",
           ROOT / "src/knetsim/policy/calico/lint.py", ROOT / "src/knetsim/policy/antrea/lint.py"]
# Codes picked from tables (a condition's reason → a code): the families they belong to.
FAMILY = re.compile(r"^(Gateway|ListenerSet|BackendTLSPolicy|Ingress|Ebpf)[A-Z][A-Za-z]+$")
# The gateway's code the doctor rewrites before printing (another implementation's class is not simulated).
REWRITTEN: set[str] = set()
EXAMPLE_WIDTH = 150


def emittable() -> set[str]:
    codes: set[str] = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and node.args and \
                    getattr(node.func, "id", getattr(node.func, "attr", "")).endswith(("Finding", "Problem")):
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    codes.add(first.value)
                elif isinstance(first, ast.JoinedStr) and isinstance(first.values[-1], ast.Constant):
                    codes.update(kind + str(first.values[-1].value) for kind in ROUTE_KINDS)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and FAMILY.match(node.value):
                codes.add(node.value)
            elif isinstance(node, ast.keyword) and node.arg == "code" and isinstance(node.value, ast.Constant):
                codes.add(str(node.value.value))
    return codes - REWRITTEN


def catalogue_rows() -> dict[str, list[str]]:
    """code → the row's cells (code, layer, break, example, fix); a route-kind row stands for all five kinds."""
    text = DOC.read_text()
    section = text.split("<!-- catalogue -->", 1)[1].split("<!-- end catalogue -->", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        code = cells[0].strip("`").split("`")[0]
        for name in ([kind + code[len("HTTPRoute"):] for kind in ROUTE_KINDS] if code.startswith("HTTPRoute")
                     else [code]):
            rows[name] = cells
    return rows


SCENARIO_DIRS = ["broken/selector-typo", "broken/wrong-targetport", "broken/dns-egress-blocked",
                 "broken/wrong-namespace", "broken/and-or-mistake", "broken/pass-after-deny",
                 "broken/equal-priorities", "broken/unknown-field", "changes", "cluster-policy", "zones/app",
                 "gateway/broken", "gateway/tls-broken", "ingress-nginx", "ingress-blog", "gateway/migration/old",
                 ]
SERVICE_BASE = """
apiVersion: v1
kind: Pod
metadata: {name: api, labels: {app: api}, annotations: {knetsim.io/ready: 'false'}}
spec:
  containers: [{name: api, image: nginx:1.27, ports: [{name: http, containerPort: 80}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: api2, labels: {app: api}}
spec:
  containers: [{name: api, image: nginx:1.27, ports: [{name: web, containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{name: http, port: 80, targetPort: http}, {name: udp, port: 81, targetPort: 80, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: two-ports}
spec:
  selector: {app: api}
  ports: [{port: 80}, {port: 81}]
"""

def _ingress(name: str, secret: str, *, backend: str = "web", class_name: str = "nginx") -> str:
    return f"""
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: {name}, namespace: shop}}
spec:
  ingressClassName: {class_name}
  tls: [{{hosts: [{name}.example.com], secretName: {secret}}}]
  rules:
  - host: {name}.example.com
    http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: {backend}, port: {{number: 80}}}}}}}}]}}
---"""


INGRESSES = ("""
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: certs}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: nothing, namespace: shop}
spec: {selector: {}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Secret
metadata: {name: other-tls, namespace: certs}
type: kubernetes.io/tls
data: {tls.crt: "", tls.key: ""}
---
apiVersion: v1
kind: Secret
metadata: {name: opaque-tls, namespace: shop}
type: Opaque
data: {cert.pem: aGVsbG8=}
---
apiVersion: v1
kind: Secret
metadata: {name: junk-tls, namespace: shop}
type: kubernetes.io/tls
data:
  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmJtOTBJR0VnWTJWeWRHbG1hV05oZEdVPQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==
  tls.key: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCmJtOTAKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo=
---"""
             + _ingress("missing", "missing-tls") + _ingress("elsewhere", "other-tls")
             + _ingress("opaque", "opaque-tls") + _ingress("junk", "junk-tls")
             + _ingress("nobackend", "", backend="webb") + _ingress("traefik", "", class_name="traefik") + """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: shop}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: dns-udp-only, namespace: shop}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {}}], ports: [{protocol: UDP, port: 53}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-client, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: clinet}}}]}]
""")
SCENARIO_TEXTS = [web(300), web(3, image="nginx:1.277"), UNKNOWN, NAME_LABEL, SERVICE_BASE, INGRESSES]
# After examples/: its selector typo is the better example of SelectorMatchesNothing. The env URL first: the DNS
# checks report an init container's wait under a code of their own where they run.
COREFILE = """apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        kubernetes cluster.local in-addr.arpa ip6.arpa
        forward . FORWARD
        loop
    }
"""
# The DNS server's own ingress isolated, a client no policy selects: its lookups are dropped at kube-dns.
DNS_SERVER_DENY = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-in, namespace: kube-system}
spec: {podSelector: {matchLabels: {k8s-app: kube-dns}}, policyTypes: [Ingress]}
---
apiVersion: v1
kind: Pod
metadata: {name: lookup, namespace: default, labels: {app: lookup}}
spec: {containers: [{name: c, image: busybox:1.36}]}
"""
LATE_TEXTS = [CLIENT, INIT_WAITS, CRASHING.replace(SERVICE, ""), EXEC_PROBE, LIVENESS_404, STARTUP_PORT, UNKNOWN_APP,
              CONFIG, CONFIG_UNREAD,
              COREFILE.replace("FORWARD", "127.0.0.1"), COREFILE.replace("FORWARD", "bogus.example"), DNS_SERVER_DENY]


@cache
def produced() -> dict[str, str]:
    """The first message the doctor prints for each code over the scenarios, in order."""
    from knetsim import Cluster

    out: dict[str, str] = {}
    clusters = [Cluster.from_yaml(text, strict=False) for text in SCENARIO_TEXTS]
    clusters += [Cluster.from_paths([str(ROOT / "examples" / d)], strict=False) for d in SCENARIO_DIRS]
    clusters += [Cluster.from_yaml(text, strict=False) for text in LATE_TEXTS]
    # Last, the corpus's broken states (tests/doctor/corpus/): the breaks no one here wrote give the examples the
    # scenarios above lack.
    clusters += [Cluster.from_paths([str(s.path / "broken")], strict=False) for s in load_corpus()]
    for cluster in clusters:
        for finding in cluster.doctor().findings:
            out.setdefault(finding.code, finding.message)
    return out


def example_cell(code: str) -> str:
    message = produced().get(code)
    if message is None:
        return "—"
    message = " ".join(message.split()).replace("|", "\\|")
    return message if len(message) <= EXAMPLE_WIDTH else message[:EXAMPLE_WIDTH - 1].rstrip() + "…"


def test_the_catalogue_lists_every_finding_the_doctor_can_emit() -> None:
    listed, can = set(catalogue_rows()), emittable()
    assert not can - listed, f"add rows to docs/doctor.md's catalogue for: {sorted(can - listed)}"
    assert not listed - can, f"docs/doctor.md lists codes nothing emits: {sorted(listed - can)}"


def test_every_example_in_the_catalogue_is_what_the_doctor_prints() -> None:
    rows = catalogue_rows()
    wrong = {code: (cells[3], example_cell(code)) for code, cells in rows.items()
             if not code.startswith(ROUTE_KINDS[1:]) and cells[3] != example_cell(code)}
    assert not wrong, "\n".join(f"{code}:\n  docs:     {a}\n  produced: {b}" for code, (a, b) in wrong.items())


def test_the_break_classes_of_issue_29_each_have_an_example() -> None:
    for code in ("SelectorMatchesNothing", "TargetPortNotListening", "PodsUnschedulable", "ServiceNotFound",
                 "StatefulSetServiceMissing", "DNSEgressBlocked", "NamespaceSelectorMatchesNothing",
                 "HTTPRouteParentNotSimulated", "ShortNameOtherNamespace", "ImagePullError"):
        assert catalogue_rows()[code][3] != "—", code


if __name__ == "__main__":
    for code in sorted(emittable()):
        print(f"{code}\t{example_cell(code)}")


def test_the_json_example_of_the_docs_is_what_the_doctor_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from click.testing import CliRunner

    from knetsim.cli.main import cli

    text = DOC.read_text()
    shown = text.split("## JSON (`-o json`)", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)  # the finding's source is the path as the command line gave it
    result = CliRunner().invoke(cli, ["doctor", "web", "-f", "examples/broken/wrong-targetport", "-o", "json"])
    assert result.exit_code == 1
    assert json.loads(result.output) == json.loads(shown)
