"""No false alarm: the doctor reports no error on a healthy example, nor on a lab's starting state beyond the
break the lab asks the learner to repair (issue 34's general guard, offline; tests/e2e/test_healthy_live.py
reads the same clusters back live).

Which examples are healthy (each case says how the docs use it):

* healthy: every directory of examples/ with the manifests and cluster config its docs pass together, and
  the changes of examples/changes/ that are fixes or safe edits (selector-fix over broken/selector-typo,
  canary-50 over gateway/store);
* not healthy, by intent: examples/broken/* (each one classic mistake, examples/broken/README.md),
  examples/gateway/{broken,refused,tls-broken}, examples/kustomize/overlays/broken (docs/sources.md: the
  API server refuses it), examples/snapshot (its README: the policy also drops the Ingress controller's
  requests), examples/versions (docs/versions.md: legacy addresses a newer API server refuses),
  examples/changes/{pass-to-deny,default-deny-tenant-a} (docs/diff.md: changes that lose connections),
  ingress-nginx-tls-gateway without the bank's CA (docs/gateway.md: BackendTLSPolicy cannot verify);
* not a cluster: examples/intended (intents for `intent check`).

Warnings (and, in two places, an error) are allowed only where the example or lab means them; each is
listed with why. Notes (info) are never counted: they are caveats, not alarms.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from knetsim.cli.main import cli
from knetsim.labs.model import all_labs, load_lab

ROOT = Path(__file__).resolve().parents[2]
EX = "examples"

# (id, doctor arguments, the non-note findings the example means: (severity, code, subject)).
HEALTHY: list[tuple[str, list[str], set[tuple[str, str, str]]]] = [
    ("shop", ["-f", f"{EX}/shop"], set()),
    ("calico", ["-f", f"{EX}/calico/manifests", "--cluster-config", f"{EX}/calico/cluster.yaml"], set()),
    ("antrea", ["-f", f"{EX}/antrea/manifests", "--cluster-config", f"{EX}/antrea/cluster.yaml"], set()),
    # docs/policy.md: the same manifests on kindnet, which does not enforce Calico's own policies.
    ("calico-on-kindnet", ["-f", f"{EX}/calico/manifests", "--cluster-config", f"{EX}/calico/kindnet.yaml"], {
        ("warning", "PolicyNotEnforced", "GlobalNetworkPolicy.projectcalico.org security.prod-only"),
        ("warning", "PolicyNotEnforced", "NetworkPolicy.projectcalico.org shop/db-from-web")}),
    ("cluster-policy", ["-f", f"{EX}/cluster-policy"], {
        # The worked example of docs/policy.md: the Admin tier denies what this NetworkPolicy allows.
        ("warning", "NetworkPolicyAllowOverridden", "NetworkPolicy shop/db-allow-backend"),
        # The tenants' StatefulSets name a governing Service the example does not create (nothing looks up
        # app-0.app): true, and harmless here; the example's rule counts (docs/kernel.md) keep it as it is.
        ("warning", "StatefulSetServiceMissing", "StatefulSet tenant-a/app"),
        ("warning", "StatefulSetServiceMissing", "StatefulSet tenant-b/app")}),
    # docs/core.md: `empty` is there to show a dual-stack Service's EndpointSlices with no pod behind them.
    ("dual-stack", ["-f", f"{EX}/dual-stack/app", "--cluster-config", f"{EX}/dual-stack/cluster.yaml"], {
        ("error", "SelectorMatchesNothing", "Service dual/empty")}),
    # The Kubernetes docs' two Ingress examples both define foo.bar.com/bar (docs/doctor.md's example row).
    ("gateway-migration", ["-f", f"{EX}/gateway/migration/old", "-f", f"{EX}/gateway/migration/new"], {
        ("warning", "IngressPathShadowed", "Ingress default/ingress-wildcard-host")}),
    ("gateway-policies", ["-f", f"{EX}/gateway/policies"], set()),
    ("gateway-quickstart", ["-f", f"{EX}/gateway/quickstart"], set()),
    ("gateway-store", ["-f", f"{EX}/gateway/store"], set()),
    ("gateway-store-canary-50", ["-f", f"{EX}/gateway/store", "-f", f"{EX}/changes/canary-50.yaml"], set()),
    ("gateway-tls", ["-f", f"{EX}/gateway/tls"], set()),
    ("helm-shop", ["-f", f"{EX}/helm/shop"], set()),
    ("helm-shop-prod", ["-f", f"{EX}/helm/shop", "--values", f"{EX}/helm/shop/prod-values.yaml"], set()),
    ("ingress-blog", ["-f", f"{EX}/ingress-blog"], set()),
    # docs/ingress.md shows this warning: the canary's upstream also serves admin and old-shop.
    ("ingress-nginx", ["-f", f"{EX}/ingress-nginx"], {
        ("warning", "IngressCanaryShared", "Ingress store/store-canary")}),
    # Side by side during a migration (docs/gateway.md): the Ingresses and the Gateway serve the same hosts.
    ("ingress-nginx-and-gateway", ["-f", f"{EX}/ingress-nginx", "-f", f"{EX}/ingress-nginx-gateway"], {
        ("warning", "IngressCanaryShared", "Ingress store/store-canary")}),
    ("ingress-nginx-tls", ["-f", f"{EX}/ingress-nginx-tls"], set()),
    ("ingress-nginx-tls-and-gateway", ["-f", f"{EX}/ingress-nginx-tls", "-f", f"{EX}/ingress-nginx-tls-gateway",
                                       "-f", f"{EX}/ingress-nginx-tls-ca"], set()),
    ("kube-proxy-free", ["-f", f"{EX}/kube-proxy-free/app.yaml", "--cluster-config",
                         f"{EX}/kube-proxy-free/cluster-config.yaml"], set()),
    ("kustomize-base", ["-k", f"{EX}/kustomize/base"], set()),
    ("kustomize-prod", ["-k", f"{EX}/kustomize/overlays/prod"], set()),
    ("outside", ["-f", f"{EX}/outside"], set()),
    ("selector-typo-fixed", ["-f", f"{EX}/broken/selector-typo", "-f", f"{EX}/changes/selector-fix.yaml"], set()),
    # The README's tour ("three zones: hints, surprises"): zones/app/40-surprises.yaml holds both.
    ("zones", ["-f", f"{EX}/zones/app", "--cluster-config", f"{EX}/zones/cluster.yaml"], {
        ("warning", "PreferCloseIsZonal", "Service zones/logs"),
        ("warning", "TopologyAllEndpointsInOneZone", "Service zones/report")}),
]

# A lab's starting state holds the breaks its tasks ask the learner to repair: the doctor must name each (the
# code a task's statement describes, on its object) and nothing else. Decided from each lab's tasks:
LAB_BREAKS: dict[str, set[tuple[str, str, str]]] = {
    # task "catalog": the catalog Service's selector matches no pod.
    "services": {("error", "SelectorMatchesNothing", "Service lab-services/catalog")},
    # tasks not-ready, target-port, named-port: the three breaks of the Debug Services path.
    "debug-service": {("error", "PodsNotReady", "Service lab-debug/shop"),
                      ("error", "TargetPortNotListening", "Service lab-debug/shop"),
                      ("error", "NamedPortMissing", "Service lab-debug/orders")},
    # task legacy: the Ingress names a class by the old annotation no controller answers to.
    "ingress-classes": {("error", "IngressAnnotationNoController", "Ingress lab-ingress/legacy"),
                        ("error", "IngressPathFails", "Ingress lab-ingress/legacy")},
    # The lab teaches the tiers: the Admin tier overrides this NetworkPolicy's allow.
    "cluster-policy": {("warning", "NetworkPolicyAllowOverridden",
                        "NetworkPolicy lab-cnp-shop/api-allow-tenant-a-clients")},
    # netpol and gateway start healthy: the learner writes what is missing, nothing is broken.
    "netpol": set(),
    "gateway": set(),
}


def doctor_json(args: list[str]) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["doctor", *args, "-o", "json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def alarms(report: dict) -> set[tuple[str, str, str]]:
    """Errors and warnings: what a user acts on (notes are caveats)."""
    return {(f["severity"], f["code"], f["subject"]) for f in report["findings"] if f["severity"] != "info"}


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize(("args", "meant"), [pytest.param(a, m, id=i) for i, a, m in HEALTHY])
def test_healthy_example_raises_no_alarm_it_does_not_mean(args, meant):
    code, report = doctor_json(args)
    assert alarms(report) == meant, json.dumps([f for f in report["findings"] if f["severity"] != "info"],
                                               indent=1)
    assert code == (1 if any(s == "error" for s, _, _ in meant) else 0)


def test_every_example_directory_is_decided():
    """A new example must be put in HEALTHY or named here as broken on purpose (or as no cluster)."""
    not_healthy = {"broken", "gateway/broken", "gateway/refused", "gateway/tls-broken", "snapshot", "versions",
                   "intended", "changes", "kustomize/overlays/broken"}
    covered = {arg for _, args, _ in HEALTHY for arg in args if arg.startswith(f"{EX}/")}

    def decided(path: str) -> bool:
        rel = path.removeprefix(f"{EX}/")
        return (any(rel == n or rel.startswith(n + "/") for n in not_healthy)
                or any(c == path or c.startswith(path + "/") or path.startswith(c + "/") for c in covered))

    undecided = [str(p.relative_to(ROOT)) for p in sorted((ROOT / EX).glob("*/*")) if not decided(
        str(p.relative_to(ROOT)))]
    assert undecided == []


def lab_manifest(name: str) -> str:
    """The lab's setup as `knetsim lab start` applies it: in the lab's namespace where an object names none."""
    lab = load_lab(name)
    docs = []
    for raw in lab.setup:
        doc = copy.deepcopy(raw)
        if doc.get("kind") != "Namespace" and (doc.get("kind"), (doc.get("metadata") or {}).get("name")) not in \
                set(lab.cluster_objects):
            doc.setdefault("metadata", {}).setdefault("namespace", lab.namespace)
        docs.append(doc)
    return yaml.safe_dump_all(docs)


def test_every_lab_is_decided():
    assert sorted(LAB_BREAKS) == sorted(lab.name for lab in all_labs())


@pytest.mark.parametrize("name", sorted(LAB_BREAKS))
def test_lab_starting_state_shows_only_its_breaks(name, tmp_path):
    path = tmp_path / f"{name}.yaml"
    path.write_text(lab_manifest(name))
    code, report = doctor_json(["-f", str(path)])
    assert alarms(report) == LAB_BREAKS[name], json.dumps(
        [f for f in report["findings"] if f["severity"] != "info"], indent=1)
    assert code == (1 if any(s == "error" for s, _, _ in LAB_BREAKS[name]) else 0)


def test_a_forward_upstream_knetsim_does_not_know_is_a_note_not_an_error():
    """A real cluster read through --kubeconfig forwards to resolvers knetsim has no model of (AWS's VPC resolver
    10.0.0.2, a corporate nameserver for a stub domain): no evidence of a failure, so a note saying what was not
    checked, and outside names still resolve. Upstreams knetsim knows are silent stay errors."""
    from tests.conftest import cluster_from
    from tests.doctor.test_dns_workload import DNSUTILS, corefile_map

    from knetsim.dns.corefile import default_corefile

    kubeadm = default_corefile()
    cases = {
        "forward . 10.0.0.2": ("info", "CoreDNSUpstreamUnknown"),  # EKS: the VPC's resolver
        "forward . 10.0.0.2 8.8.8.8": None,  # one upstream knetsim knows answers
        "forward . 192.0.2.1": ("error", "CoreDNSUpstreamUnreachable"),  # RFC 5737: never a server
        "forward . 10.96.0.99": ("error", "CoreDNSUpstreamUnreachable"),  # a ClusterIP no Service holds
        "forward . 127.0.0.1": ("error", "CoreDNSForwardLoop"),
    }
    for forward, expected in cases.items():
        cluster = cluster_from(DNSUTILS + corefile_map(kubeadm.replace("forward . /etc/resolv.conf", forward)))
        found = [(f.severity, f.code) for f in cluster.doctor().findings if f.code.startswith(("CoreDNS", "Corefile"))]
        assert found == ([expected] if expected else []), (forward, found)
        if expected == ("info", "CoreDNSUpstreamUnknown"):
            note = next(f for f in cluster.doctor().findings if f.code == "CoreDNSUpstreamUnknown")
            assert "10.0.0.2" in note.message and "outside.hosts" in note.fix
            assert cluster.dns("example.com.", "default/dnsutils").outcome != "servfail"
            assert not [f for f in cluster.doctor().findings if f.severity == "error"]


# A frontend configured with the address of an optional component that is not installed (as
# GoogleCloudPlatform/microservices-demo's frontend names shoppingassistantservice:80, whose Service only its
# shopping-assistant component adds), and a client whose command certainly fetches a missing Service.
OPTIONAL_DEPENDENCY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend, namespace: default}
spec:
  selector: {matchLabels: {app: frontend}}
  template:
    metadata: {labels: {app: frontend}}
    spec:
      containers:
        - name: server
          image: nginx:1.27
          env:
            - {name: ASSISTANT_ADDR, value: "assistant:80"}
---
apiVersion: v1
kind: Pod
metadata: {name: poller, namespace: default}
spec:
  containers:
    - name: c
      image: busybox:1.36
      command: [sh, -c, "while true; do wget -qO- http://reports; sleep 5; done"]
"""


def test_a_service_only_an_env_value_names_is_a_warning_a_command_that_fetches_it_an_error():
    from knetsim import Cluster

    found = [f for f in Cluster.from_yaml(OPTIONAL_DEPENDENCY).doctor().findings if f.severity != "info"]
    frontend = [f for f in found if f.subject.startswith("Pod default/frontend-")]
    assert [(f.severity, f.code) for f in frontend] == [("warning", "ServiceNotFound")]
    assert "if the program uses ASSISTANT_ADDR, its lookups fail" in frontend[0].message
    poller = [(f.severity, f.code) for f in found if f.subject == "Pod default/poller"]
    assert poller == [("error", "NameDoesNotResolve")]


def mounted_nginx(mount: str, container_port: int | None) -> str:
    ports = f"\n          ports: [{{containerPort: {container_port}}}]" if container_port else ""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: site, namespace: default}}
data: {{default.conf: "server {{ listen 8080; location / {{ return 200 ok; }} }}"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: nginx
          image: nginx:1.27{ports}
          volumeMounts: [{{name: site, mountPath: {mount}}}]
      volumes: [{{name: site, configMap: {{name: site}}}}]
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: default}}
spec: {{selector: {{app: web}}, ports: [{{port: 80, targetPort: 8080}}]}}
"""


def test_nginx_with_its_configuration_mounted_listens_where_that_file_says():
    """nginx's site from a ConfigMap (`listen 8080;` at /etc/nginx/conf.d): the image's own port 80 no longer
    says where it listens, so the declared containerPort is taken (an assumption, said in a note), not refused."""
    from knetsim import Cluster

    for mount in ("/etc/nginx/conf.d", "/etc/nginx/conf.d/default.conf", "/etc/nginx/nginx.conf"):
        cluster = Cluster.from_yaml(mounted_nginx(mount, 8080))
        assert [f.code for f in cluster.doctor().findings if f.severity != "info"] == [], mount
        assert cluster.trace("default/" + next(p.name for p in cluster.state.pods.values()
                                               if p.name.startswith("web-")), "http://web/").outcome != "refused"
    # A mount that is not its configuration (certificates) changes nothing: nginx still listens on 80 only.
    certs = Cluster.from_yaml(mounted_nginx("/etc/nginx/certs", 8080))
    assert [f.code for f in certs.doctor().findings if f.severity == "error"] == ["TargetPortNotListening"]


UNDECLARED = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: default}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - {name: api, image: ghcr.io/example/orders-api:2.3.1}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: default}
spec: {selector: {app: api}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  containers:
    - name: c
      image: busybox:1.36
      command: [sh, -c, "while true; do wget -qO- http://api; sleep 5; done"]
"""


def test_an_unknown_image_that_declares_no_port_is_no_certain_refusal():
    """containerPort is optional: an image knetsim does not know, declaring none, may well listen on 8080. That
    nothing listens is an assumption, so the doctor warns (and its note says how to tell knetsim); declared
    ports that miss the targetPort, or a known image, stay errors."""
    from knetsim import Cluster

    found = {(f.severity, f.code) for f in Cluster.from_yaml(UNDECLARED).doctor().findings}
    assert ("warning", "TargetPortNotListening") in found and ("warning", "ClientCannotConnect") in found
    assert ("info", "ListenerAssumed") in found
    assert not [code for severity, code in found if severity == "error"]
    declared = UNDECLARED.replace("image: ghcr.io/example/orders-api:2.3.1}",
                                  "image: ghcr.io/example/orders-api:2.3.1, ports: [{containerPort: 9090}]}")
    errors = {code for severity, code in {(f.severity, f.code) for f in Cluster.from_yaml(declared).doctor().findings}
              if severity == "error"}
    assert errors == {"TargetPortNotListening", "ClientCannotConnect"}


CERT_MANAGER = """
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: default
  annotations: {cert-manager.io/cluster-issuer: letsencrypt-prod}
spec:
  ingressClassName: nginx
  tls: [{hosts: [www.example.com], secretName: web-tls}]
  rules:
    - host: www.example.com
      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: default
  annotations: {cert-manager.io/issuer: ca-issuer}
spec:
  gatewayClassName: eg
  listeners:
    - name: https
      hostname: api.example.com
      port: 443
      protocol: HTTPS
      tls: {mode: Terminate, certificateRefs: [{name: api-tls}]}
"""


def test_a_certificate_secret_cert_manager_issues_is_a_note_not_an_error():
    """The common TLS setup: cert-manager's annotation on the Ingress or Gateway, the Secret created by
    cert-manager, so never in the manifests. Without the annotation the missing Secret stays an error."""
    from knetsim import Cluster

    def found(text: str) -> set[tuple[str, str, str]]:
        return {(f.severity, f.code, f.subject) for f in Cluster.from_yaml(text).doctor().findings
                if f.subject in ("Ingress default/web", "Gateway default/gw")}

    assert found(CERT_MANAGER) == {("info", "IngressTLSSecretIssued", "Ingress default/web"),
                                   ("info", "GatewayCertificateIssued", "Gateway default/gw")}
    bare = CERT_MANAGER.replace("  annotations: {cert-manager.io/cluster-issuer: letsencrypt-prod}\n", "").replace(
        "  annotations: {cert-manager.io/issuer: ca-issuer}\n", "")
    assert found(bare) == {("error", "IngressTLSSecretNotFound", "Ingress default/web"),
                           ("error", "GatewayListenerCertificate", "Gateway default/gw")}
    # A cert-manager Certificate naming the Secret says the same without an annotation.
    certificate = bare + """
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec: {secretName: web-tls, dnsNames: [www.example.com], issuerRef: {name: letsencrypt-prod, kind: ClusterIssuer}}
"""
    assert ("info", "IngressTLSSecretIssued", "Ingress default/web") in found(certificate)


OTHER_CONTROLLER = """
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: traefik}
spec: {controller: traefik.io/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: on-traefik, namespace: default}
spec:
  ingressClassName: traefik
  rules: [{host: t.example.com, http: {paths: [{path: /, pathType: Prefix,
                                                backend: {service: {name: web, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: on-gke, namespace: default, annotations: {kubernetes.io/ingress.class: gce}}
spec:
  rules: [{host: g.example.com, http: {paths: [{path: /, pathType: Prefix,
                                                backend: {service: {name: web, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: typo, namespace: default, annotations: {kubernetes.io/ingress.class: ngnix}}
spec:
  rules: [{host: x.example.com, http: {paths: [{path: /, pathType: Prefix,
                                                backend: {service: {name: web, port: {number: 80}}}}]}}]
"""


def test_an_ingress_of_another_implementation_is_a_note_a_class_typo_an_error():
    """k3s's Traefik, GKE's gce, EKS's alb: knetsim simulates ingress-nginx only, so such an Ingress is not
    traced and not an error (read live from such a cluster, every Ingress was two errors). A class name no
    implementation uses (the ingress-classes lab's `ngnix`) is still an error."""
    from knetsim import Cluster

    found = {(f.severity, f.code, f.subject) for f in Cluster.from_yaml(OTHER_CONTROLLER).doctor().findings
             if f.subject.startswith("Ingress ")}
    assert found == {("info", "IngressClassOtherController", "Ingress default/on-traefik"),
                     ("info", "IngressClassOtherController", "Ingress default/on-gke"),
                     ("error", "IngressAnnotationNoController", "Ingress default/typo"),
                     ("error", "IngressPathFails", "Ingress default/typo")}
