"""knetsim's analysis pointed at live clusters: the running `knetsim up` (no -f), and any other cluster
through --kubeconfig, with the real kubectl making the objects there.

Two clusters run: the module's `cluster` is "the running knetsim" ($KNETSIM_STATE points at its state
dir), `second` another `knetsim up` (its own state dir, port 0) that only a kubeconfig reaches. Every
knetsim command runs as a user runs it: a whole CLI process, KUBECONFIG unset.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16 a /24 per node, services
10.96.0.0/12, kube-dns 10.96.0.10).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .conftest import Cluster, knetsim_argv, start, stop

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 80}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {role: client}}
spec: {containers: [{name: c, image: "busybox:1.36", command: [sleep, "86400"]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-client}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress: [{from: [{podSelector: {matchLabels: {role: client}}}], ports: [{port: 80}]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx
  rules:
  - host: web.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
"""


def knetsim(running: Cluster | None, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`knetsim ARGS` with `running` as the running knetsim (None: none runs), KUBECONFIG unset."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    if running is not None:
        env.update(KNETSIM_STATE=str(running.state), HOME=str(running.home))
    else:
        env["KNETSIM_STATE"] = str(Path(os.environ["KNETSIM_STATE"]))
    return subprocess.run(knetsim_argv(*args), capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory, cluster: Cluster) -> Iterator[Cluster]:
    c = start(tmp_path_factory.mktemp("second"))
    try:
        yield c
    finally:
        stop(c)


@pytest.fixture(scope="module")
def app(cluster: Cluster) -> Cluster:
    cluster.kubectl("apply", "-f", "-", input=APP)
    cluster.kubectl("wait", "--for=condition=Ready", "pod", "--all", "-n", "default", "--timeout=30s")
    return cluster


# --- the running knetsim, no -f ------------------------------------------------------------------


def test_get_and_overview_show_what_kubectl_shows(app: Cluster) -> None:
    out = knetsim(app, "get", "pods", "-A")
    assert out.returncode == 0, out.stderr
    theirs = app.kubectl("get", "pods", "-A").stdout
    # Every cell kubectl prints, AGE included (measured from the moment of reading, as kubectl's); a
    # second may tick between the two reads.
    assert [line.split()[:-1] for line in out.stdout.splitlines()] == [line.split()[:-1]
                                                                      for line in theirs.splitlines()]
    ages = [(a.split()[-1], b.split()[-1]) for a, b in zip(out.stdout.splitlines()[1:], theirs.splitlines()[1:],
                                                             strict=True)]
    assert all(a == b or a.endswith("s") for a, b in ages), ages
    cluster_ip = app.get_json("service", "web")["spec"]["clusterIP"]
    out = knetsim(app, "overview")
    assert out.returncode == 0 and "default/web" in out.stdout and cluster_ip in out.stdout


def test_endpoints_trace_dns_and_packet_follow_the_live_objects(app: Cluster) -> None:
    slices = app.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
    addresses = sorted(a for s in slices for e in s["endpoints"] for a in e["addresses"])
    cluster_ip = app.get_json("service", "web")["spec"]["clusterIP"]
    client_ip = app.get_json("pod", "client")["status"]["podIP"]

    out = knetsim(app, "endpoints", "web", "-o", "json")
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(out.stdout)["ready_addresses"]) == addresses

    out = knetsim(app, "trace", "--from", "default/client", "http://web", "-o", "json")
    assert out.returncode == 0, out.stdout
    trace = json.loads(out.stdout)
    assert trace["outcome"] == "connected" and trace["backend"]["ip"] in addresses

    out = knetsim(app, "dns", "web", "--from", "default/client", "-o", "json")
    assert out.returncode == 0, out.stderr
    assert cluster_ip in out.stdout

    out = knetsim(app, "packet", "--src", client_ip, "--dst", cluster_ip, "--dport", "80")
    assert out.returncode == 0, out.stderr
    assert any(f"{a}:80" in out.stdout for a in addresses)

    out = knetsim(app, "render", "nftables")
    assert out.returncode == 0 and cluster_ip in out.stdout


def test_policy_route_matrix_and_doctor_read_the_running_cluster(app: Cluster) -> None:
    web_pod = app.get_json("pods", "-l", "app=web")["items"][0]["metadata"]["name"]
    out = knetsim(app, "policy", "check", "--from", "default/client", "--to", f"default/{web_pod}", "--port", "80")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "web-from-client" in out.stdout
    out = knetsim(app, "policy", "describe", "web-from-client")
    assert out.returncode == 0 and "pods with role=client in namespace default" in out.stdout
    out = knetsim(app, "policy", "lint")
    assert out.returncode in (0, 1) and "Namespace default" in out.stdout

    out = knetsim(app, "route", "--host", "web.example.com")
    assert out.returncode == 0 and "Ingress:     default/web" in out.stdout

    out = knetsim(app, "matrix", "-n", "default", "-o", "json")
    assert out.returncode == 0, out.stderr
    assert "default/client" in out.stdout and "default/web" in out.stdout

    # The policy admits only the client: the Ingress controller's requests are dropped, which the
    # doctor finds on the live objects as it would in manifests.
    out = knetsim(app, "doctor")
    assert out.returncode == 1
    assert "Ingress default/web: IngressPathFails" in out.stdout


def test_no_input_and_no_running_knetsim_is_exit_2(tmp_path: Path) -> None:
    out = knetsim(None, "doctor")
    assert out.returncode == 2
    assert out.stderr.startswith("error: nothing to analyse: no -f FILE|DIR|- given, no --kubeconfig, and no knetsim "
                                 "runs with state dir ")


def test_the_exported_kubeconfig_of_a_running_knetsim_is_read_and_no_other(second: Cluster, tmp_path: Path) -> None:
    """`knetsim up --state DIR` prints `export KUBECONFIG=DIR/kubeconfig`: after it, `knetsim doctor` with no
    -f reads that cluster. The same file copied elsewhere (any kubeconfig of a cluster that is not a running
    knetsim) is only named in the hint: pointing the analysis at a real cluster takes --kubeconfig."""
    second.kubectl("create", "service", "clusterip", "exported", "--tcp=80:80")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KNETSIM_STATE=str(tmp_path / "none"), KUBECONFIG=str(second.kubeconfig))
    out = subprocess.run(knetsim_argv("get", "services"), capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "exported" in out.stdout

    copy = tmp_path / "elsewhere" / "config"
    copy.parent.mkdir()
    copy.write_text(Path(second.kubeconfig).read_text())
    env["KUBECONFIG"] = str(copy)
    out = subprocess.run(knetsim_argv("get", "services"), capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2
    assert f"(KUBECONFIG is set: --kubeconfig {copy} reads that cluster)" in out.stderr


# --- another cluster, through its kubeconfig ---------------------------------------------------------


def test_doctor_with_a_kubeconfig_finds_the_typo_made_there_with_kubectl(app: Cluster, second: Cluster) -> None:
    """Given a mistyped selector applied with kubectl to the second cluster only, `doctor --kubeconfig`
    of that cluster finds it, and the running knetsim, asked without one, has no such problem."""
    second.kubectl("create", "deployment", "shop", "--image=nginx:1.27", "--replicas=2")
    second.kubectl("create", "service", "clusterip", "shop", "--tcp=80:80")
    second.kubectl("set", "selector", "service", "shop", "app=shpo")
    out = knetsim(app, "doctor", "--kubeconfig", second.kubeconfig)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Service default/shop: SelectorMatchesNothing" in out.stdout
    assert "closest existing label app=shop (value differs" in out.stdout
    assert "Service default/shop" not in knetsim(app, "doctor").stdout

    # -f with --kubeconfig: the fix applied over that cluster, before it is applied for real.
    fix = second.write("fix.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: shop}\n"
                                   "spec: {selector: {app: shop}, ports: [{port: 80, targetPort: 80}]}\n")
    out = knetsim(app, "endpoints", "shop", "--kubeconfig", second.kubeconfig, "-f", str(fix))
    assert out.returncode == 0 and "Verdict:   2 ready endpoint(s)" in out.stdout, out.stdout + out.stderr


def test_an_exec_credential_plugin_logs_in_with_the_clusters_token(second: Cluster, tmp_path: Path) -> None:
    """As gke-gcloud-auth-plugin or `aws eks get-token` do: a program prints an ExecCredential."""
    plugin = tmp_path / "token-plugin"
    plugin.write_text("#!/bin/sh\nprintf '%s' '" + json.dumps({
        "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
        "status": {"token": (second.state / "token").read_text().strip()}}) + "'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    config = yaml.safe_load(Path(second.kubeconfig).read_text())
    config["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                                           "interactiveMode": "Never"}}
    kubeconfig = tmp_path / "exec-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    assert second.kubectl("--kubeconfig", str(kubeconfig), "get", "ns", "default").returncode == 0
    out = knetsim(None, "get", "svc", "-n", "kube-system", "--kubeconfig", str(kubeconfig))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].split()[:3] == ["kube-dns", "ClusterIP", "10.96.0.10"]


def test_a_bad_token_an_unknown_certificate_or_an_unreachable_server_is_exit_2(second: Cluster, tmp_path: Path) -> None:
    config = yaml.safe_load(Path(second.kubeconfig).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    config["users"][0]["user"] = {"token": "not-the-token"}
    bad = tmp_path / "bad-token"
    bad.write_text(yaml.safe_dump(config))
    out = knetsim(None, "doctor", "--kubeconfig", str(bad))
    assert out.returncode == 2
    assert out.stderr == (f"error: {server}: the server did not accept the credentials of user knetsim (context "
                          "knetsim): Unauthorized (401 Unauthorized)\n")

    config = yaml.safe_load(Path(second.kubeconfig).read_text())
    del config["clusters"][0]["cluster"]["certificate-authority-data"]  # the server's certificate is then unknown
    untrusted = tmp_path / "untrusted"
    untrusted.write_text(yaml.safe_dump(config))
    out = knetsim(None, "get", "pods", "--kubeconfig", str(untrusted))
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: cannot reach the API server {server} (context knetsim, kubeconfig "
                                 f"{untrusted}): TLS failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify "
                                 "failed"), out.stderr

    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    gone = tmp_path / "unreachable"
    gone.write_text(yaml.safe_dump(config))
    out = knetsim(None, "trace", "--from", "default/client", "http://web", "--kubeconfig", str(gone))
    assert out.returncode == 2
    assert out.stderr == ("error: cannot reach the API server https://127.0.0.1:1 (context knetsim, kubeconfig "
                          f"{gone}): Connection refused\n")


# --- a snapshot of a real server ------------------------------------------------------------------------


def test_a_snapshot_of_the_server_reuses_its_slices_without_drift(second: Cluster) -> None:
    """Given 150 pods behind one Service (two slices, spread as the server's controller spread them),
    `kubectl get -A -o yaml` fed back with -f, and the live read, report no drift, and keep the slices."""
    second.kubectl("create", "deployment", "big", "--image=nginx:1.27", "--replicas=150")
    second.kubectl("expose", "deployment", "big", "--port=80")
    second.kubectl("wait", "--for=condition=Available", "deployment/big", "--timeout=60s")
    names = sorted(s["metadata"]["name"]
                   for s in second.get_json("endpointslices", "-l", "kubernetes.io/service-name=big")["items"])
    assert len(names) == 2
    snap = second.write("snap.yaml", second.kubectl(
        "get", "namespaces,nodes,pods,services,endpointslices,deployments,replicasets,ingressclasses", "-A",
        "-o", "yaml").stdout)
    for how in (["-f", str(snap)], ["--kubeconfig", second.kubeconfig]):
        out = knetsim(None, "endpoints", "big", *how, "-o", "json")
        assert out.returncode == 0, out.stderr
        assert "EndpointSlice" not in out.stderr, out.stderr
        got = json.loads(out.stdout)
        assert sorted(got["slices"]) == names and len(got["ready_addresses"]) == 150
