"""The doctor on the Kubernetes docs' "Debugging DNS Resolution" and "Debug Services" breaks, restated as
objects: the broken state names the object and a fix, the repaired state has no error."""

from __future__ import annotations

import yaml
from click.testing import CliRunner
from tests.conftest import cluster_from

from knetsim.cli.main import cli
from knetsim.dns.corefile import default_corefile
from knetsim.labs.catalog import __file__ as catalog_init

# The docs' dnsutils pod (Debugging DNS Resolution) and a Service to look up.
DNSUTILS = """
apiVersion: v1
kind: Pod
metadata: {name: dnsutils, namespace: default}
spec:
  containers:
    - name: dnsutils
      image: registry.k8s.io/e2e-test-images/agnhost:2.39
      command: [sh, -c, "sleep infinity"]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: client, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      containers:
        - name: c
          image: busybox:1.36
          command: [sh, -c, "while true; do wget -qO- http://web; sleep 5; done"]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""

COREDNS_DEPLOYMENT = """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      dnsPolicy: Default
      containers:
        - name: coredns
          image: registry.k8s.io/coredns/coredns:v1.12.1
          args: [-conf, /etc/coredns/Corefile]
          ports: [{name: dns, containerPort: 53, protocol: UDP}, {name: dns-tcp, containerPort: 53}]
"""


def corefile_map(text: str) -> str:
    body = "\n".join("    " + line for line in text.strip("\n").splitlines())
    return f"""
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: coredns, namespace: kube-system}}
data:
  Corefile: |
{body}
"""


def errors(cluster) -> list:
    return [f for f in cluster.doctor().findings if f.severity == "error"]


def test_coredns_scaled_to_zero_names_the_deployment_not_a_policy():
    broken = cluster_from(DNSUTILS + COREDNS_DEPLOYMENT.replace("REPLICAS", "0"))
    found = errors(broken)
    codes = {f.code for f in found}
    assert "CoreDNSScaledToZero" in codes and "DNSEgressBlocked" not in codes
    scaled = next(f for f in found if f.code == "CoreDNSScaledToZero")
    assert scaled.subject == "Deployment kube-system/coredns"
    assert scaled.fix == "kubectl -n kube-system scale deployment coredns --replicas=2"
    assert "NetworkPolicy" not in " ".join(f.fix for f in found)
    # The client's wget fails at the dns layer, and the trace's fix is the same scale command.
    trace = broken.trace("default/deploy/client", "http://web/")
    assert trace.outcome == "dns-timeout" and "scale deployment coredns" in trace.findings[0].fix
    repaired = cluster_from(DNSUTILS + COREDNS_DEPLOYMENT.replace("REPLICAS", "2"))
    assert errors(repaired) == []


def test_broken_corefiles_each_have_a_finding_and_their_repair_none():
    kubeadm = default_corefile()
    cases = [
        ("CorefileInvalid", kubeadm.replace("forward . /etc/resolv.conf", "forward .")),
        ("CorefileInvalid", kubeadm.replace("forward . /etc/resolv.conf", "forward . 8.8.8.8:fiftythree")),
        ("CoreDNSForwardLoop", kubeadm.replace("forward . /etc/resolv.conf", "forward . 127.0.0.53")),
        ("CoreDNSUpstreamUnreachable", kubeadm.replace("forward . /etc/resolv.conf", "forward . 192.0.2.1")),
    ]
    for code, text in cases:
        found = errors(cluster_from(DNSUTILS + corefile_map(text)))
        mine = [f for f in found if f.code == code]
        assert mine and mine[0].subject == "ConfigMap kube-system/coredns", (code, found)
        assert "rollout restart deployment coredns" in mine[0].fix
    assert errors(cluster_from(DNSUTILS + corefile_map(kubeadm))) == []


def test_cli_doctor_on_a_broken_corefile(tmp_path):
    path = tmp_path / "dns.yaml"
    path.write_text(DNSUTILS + corefile_map(default_corefile().replace("    loop\n", "    loop\n    forwad\n")))
    result = CliRunner().invoke(cli, ["doctor", "-f", str(path)])
    assert result.exit_code == 1, result.output
    assert "CorefileInvalid" in result.output and "Unknown directive 'forwad'" in result.output


def test_nslookup_is_a_dns_lookup_not_a_connection():
    text = """
apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: default}
spec:
  containers:
    - name: c
      image: busybox:1.36
      command: [sh, -c, "while true; do nslookup kubernetes.default; sleep 10; done"]
"""
    found = cluster_from(text).doctor().findings
    assert not [f for f in found if f.code == "ClientCannotConnect"]


INIT_WAIT = """
apiVersion: v1
kind: Pod
metadata: {name: myapp-pod, namespace: default, labels: {app.kubernetes.io/name: MyApp}}
spec:
  containers:
    - {name: myapp-container, image: busybox:1.28, command: [sh, -c, "echo The app is running! && sleep 3600"]}
  initContainers:
    - name: init-myservice
      image: busybox:1.28
      command: [sh, -c, "until nslookup myservice.NSFILE.svc.cluster.local; do sleep 2; done"]
    - name: init-mydb
      image: busybox:1.28
      command: [sh, -c, "until nslookup mydb.NSFILE.svc.cluster.local; do echo waiting for mydb; sleep 2; done"]
"""
INIT_WAIT = INIT_WAIT.replace("NSFILE", "$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)")
SERVICES = """
---
apiVersion: v1
kind: Service
metadata: {name: myservice, namespace: default}
spec:
  ports: [{protocol: TCP, port: 80, targetPort: 9376}]
---
apiVersion: v1
kind: Service
metadata: {name: mydb, namespace: default}
spec:
  ports: [{protocol: TCP, port: 80, targetPort: 9377}]
"""


def test_init_container_waiting_for_a_missing_service_blocks_the_pod():
    """The docs' init-container example (Init Containers page): without the Services the pod stays Init:0/2."""
    found = [f for f in errors(cluster_from(INIT_WAIT)) if f.code == "InitContainerWaitsForName"]
    assert len(found) == 1 and found[0].subject == "Pod default/myapp-pod"
    assert "init-myservice" in found[0].message and "Init:0/2" in found[0].message
    only_first = [f for f in errors(cluster_from(INIT_WAIT + SERVICES.split("---\napiVersion: v1\nkind: Service\n"
                                                                          "metadata: {name: mydb")[0]))
                  if f.code == "InitContainerWaitsForName"]
    assert len(only_first) == 1 and "Init:1/2" in only_first[0].message
    assert [f for f in errors(cluster_from(INIT_WAIT + SERVICES)) if f.code == "InitContainerWaitsForName"] == []


def test_lab_netpol_starting_state_has_no_error():
    """issue 34 point 3: porter's SERVE_PORT_* values are reply text, not hosts the pod connects to."""
    from pathlib import Path

    lab = yaml.safe_load((Path(catalog_init).parent / "netpol.yaml").read_text())
    cluster = cluster_from(lab["setup"])
    assert [f for f in cluster.doctor(namespace="lab-netpol").findings if f.severity == "error"] == []


def test_blocked_init_container_shows_as_kubectl_would(tmp_path):
    path = tmp_path / "init.yaml"
    path.write_text(INIT_WAIT)
    out = CliRunner().invoke(cli, ["get", "pods", "-f", str(path)]).output
    assert "myapp-pod" in out and "Init:0/2" in out and "Pending" not in out.split("Init:0/2")[0].split("\n")[-1]
    pod = cluster_from(INIT_WAIT).state.pods["default/myapp-pod"]
    assert pod.phase == "Pending" and not pod.ready
    path.write_text(INIT_WAIT + SERVICES)
    out = CliRunner().invoke(cli, ["get", "pods", "-f", str(path)]).output
    assert "Init:" not in out and "Running" in out


def test_kube_dns_service_missing_or_selecting_nothing():
    """"Debugging DNS Resolution": is the DNS Service up, are its endpoints exposed?"""
    from knetsim.cluster.build import build_cluster
    from knetsim.doctor import diagnose
    from knetsim.model.loader import load_text

    result = build_cluster(load_text(DNSUTILS, "t.yaml").documents, authoritative=frozenset({"Service"}))
    found = [f for f in diagnose(result.state).findings if f.code == "KubeDNSServiceMissing"]
    assert found and found[0].subject == "Service kube-system/kube-dns" and "10.96.0.10" in found[0].fix
    typo = DNSUTILS + """
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: 10.96.0.10
  selector: {k8s-app: kube-dsn}
  ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
"""
    broken = cluster_from(typo)
    found = [f for f in errors(broken) if f.code == "KubeDNSNoEndpoints"]
    assert found and "k8s-app" in found[0].fix
    assert broken.trace("default/deploy/client", "http://web/").outcome == "dns-timeout"
    assert errors(cluster_from(typo.replace("kube-dsn", "kube-dns"))) == []


def test_systemd_resolved_stub_on_the_node_is_a_forwarding_loop():
    """The docs' known issue: the node's resolv.conf names 127.0.0.53 and the Corefile forwards to it."""
    from knetsim.cluster.config import ClusterConfig

    broken = cluster_from(DNSUTILS, config=ClusterConfig(upstream_nameservers=("127.0.0.53",)))
    found = [f for f in errors(broken) if f.code == "CoreDNSForwardLoop"]
    assert found and "Loop (127.0.0.1:53 -> :53) detected" in found[0].message


def test_a_pod_looking_up_a_service_that_does_not_exist():
    text = """
apiVersion: v1
kind: Pod
metadata: {name: checker, namespace: default}
spec:
  containers:
    - name: c
      image: busybox:1.36
      command: [sh, -c, "while true; do nslookup mydb; wget -qO- -T 2 http://myapi:8080/; sleep 5; done"]
"""
    found = [f for f in errors(cluster_from(text)) if f.code == "NameDoesNotResolve"]
    assert sorted(f.evidence[0].split(":")[0] for f in found) == ["myapi", "mydb"]
    repaired = text + """
---
apiVersion: v1
kind: Service
metadata: {name: mydb, namespace: default}
spec: {ports: [{port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: myapi, namespace: default}
spec: {ports: [{port: 8080}]}
"""
    assert [f for f in errors(cluster_from(repaired)) if f.code == "NameDoesNotResolve"] == []
