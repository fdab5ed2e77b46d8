"""Reading a cluster that is not knetsim: kubeconfigs as kind, minikube and clouds write them, and the
answers a real API server gives (pages, 401, 403, resources it does not serve).

The server is tests/fakeapi.py on loopback (kube-apiserver's wire format for reads); the client is
the official ``kubernetes`` package, driven through ``knetsim ... --kubeconfig``.

Address plan: DESIGN defaults (pods 10.244.0.0/16, services 10.96.0.0/12, nodes 172.18.0.x).
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from tests.conftest import EXAMPLES
from tests.fakeapi import FakeAPI, fake_api, kubeconfig_for, snapshot_of
from tests.helpers import knetsim_raising

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.sources import KubeconfigError, KubeError, connect


def knetsim(*args: str, **env: str) -> Result:
    return knetsim_raising(*args, env=env or None)


def write(tmp_path: Path, doc: dict[str, Any], name: str = "config") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(scope="module")
def typo_objects() -> list[dict[str, Any]]:
    return snapshot_of([str(EXAMPLES / "broken" / "selector-typo")])


@pytest.fixture
def kind(tmp_path: Path, typo_objects: list[dict[str, Any]]) -> Iterator[tuple[FakeAPI, str]]:
    with fake_api(typo_objects, token="s3cret") as api:
        yield api, write(tmp_path, kubeconfig_for(api.url, {"token": "s3cret"}))


# --- kubeconfigs --------------------------------------------------------------------------------


def test_a_kubeconfig_as_kind_writes_it(tmp_path: Path) -> None:
    cert, key, ca = b"-----CERT-----\n", b"-----KEY-----\n", b"-----CA-----\n"
    path = write(tmp_path, kubeconfig_for("https://127.0.0.1:6443", {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode()}, namespace="team",
        cluster={"certificate-authority-data": base64.b64encode(ca).decode()}))
    api = connect(path)
    assert (api.server, api.context, api.namespace, api.target.user) == ("https://127.0.0.1:6443", "kind-kind",
                                                                          "team", "kind-kind")
    configuration = api._client.configuration
    assert [Path(f).read_bytes() for f in (configuration.cert_file, configuration.key_file,
                                           configuration.ssl_ca_cert)] == [cert, key, ca]


def test_files_named_in_a_kubeconfig_are_relative_to_it(tmp_path: Path) -> None:
    """minikube writes paths; a relative one is read from the kubeconfig's directory, as kubectl does."""
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_bytes(b"CA")
    path = write(tmp_path, kubeconfig_for("https://192.168.49.2:8443", {"token": "t0k"},
                                          cluster={"certificate-authority": "certs/ca.crt"}))
    configuration = connect(path)._client.configuration
    assert Path(configuration.ssl_ca_cert).read_bytes() == b"CA"
    assert configuration.api_key == {"BearerToken": "Bearer t0k"}


def test_the_context_is_chosen_by_name(tmp_path: Path) -> None:
    doc = kubeconfig_for("https://a:6443", {"token": "a"}, context="a")
    other = kubeconfig_for("https://b:6443", {"token": "b"}, context="b", namespace="team-b")
    for key in ("clusters", "contexts", "users"):
        doc[key] += other[key]
    path = write(tmp_path, doc)
    assert connect(path).server == "https://a:6443"
    assert (connect(path, "b").server, connect(path, "b").namespace) == ("https://b:6443", "team-b")
    with pytest.raises(KubeconfigError, match=r"Expected object with name c in .*contexts list"):
        connect(path, "c")


@pytest.mark.parametrize(("user", "message"), [
    ({"client-certificate": "missing.crt", "client-key": "k"}, r"File does not exist: .*missing\.crt"),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "sh",
               "args": ["-c", "echo 'token expired: run aws sso login' >&2; exit 1"]}},
     r"credentials of user 'kind-kind' could not be obtained: exec: process returned 1\. token expired: run aws sso "
     r"login"),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/nonexistent/gke-gcloud-auth-plugin"}},
     r"could not be obtained: .*No such file or directory"),
])
def test_kubeconfig_problems_are_named(tmp_path: Path, user: dict[str, Any], message: str) -> None:
    with pytest.raises(KubeconfigError, match=message):
        connect(write(tmp_path, kubeconfig_for("https://127.0.0.1:6443", user)))


def test_a_missing_or_broken_kubeconfig_is_exit_2(tmp_path: Path) -> None:
    out = knetsim("doctor", "--kubeconfig", str(tmp_path / "nope"))
    assert (out.exit_code, out.output) == (2, f"error: kubeconfig {tmp_path / 'nope'}: No such file or directory\n")
    (tmp_path / "broken").write_text("clusters: [\n")
    out = knetsim("doctor", "--kubeconfig", str(tmp_path / "broken"))
    assert out.exit_code == 2 and out.output.startswith(f"error: kubeconfig {tmp_path / 'broken'}: not valid YAML")


# --- a cluster that is not knetsim ----------------------------------------------------------------


def test_doctor_reads_a_real_cluster_and_finds_the_typo(kind: tuple[FakeAPI, str]) -> None:
    api, path = kind
    out = knetsim("doctor", "--kubeconfig", path)
    assert out.exit_code == 1, out.output
    assert "Service default/web: SelectorMatchesNothing" in out.output
    assert "closest existing label app=web (value differs by 1 character(s))" in out.output
    assert {r.authorization for r in api.requests} == {"Bearer s3cret"}


def test_only_the_kinds_knetsim_analyses_are_listed_and_only_where_served(kind: tuple[FakeAPI, str]) -> None:
    """Cilium, the network-policy-api CRDs and Gateway API are not installed here: not one request for them.
    No v1 Endpoints or ConfigMaps either (but kube-proxy's own, by name, for its mode, and CoreDNS's, for its
    Corefile); Secrets are listed, and kept without any value but a certificate's
    (tests/sources/test_live_secrets.py)."""
    api, path = kind
    assert knetsim("get", "pods", "-A", "--kubeconfig", path).exit_code == 0
    listed = {r.path for r in api.requests if r.path not in ("/version", "/api", "/apis")}
    assert listed == {"/api/v1/namespaces", "/api/v1/nodes", "/api/v1/pods", "/api/v1/services", "/api/v1/secrets",
                      "/api/v1/replicationcontrollers", "/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes",
                      "/apis/apps/v1/deployments", "/apis/apps/v1/replicasets", "/apis/apps/v1/statefulsets",
                      "/apis/apps/v1/daemonsets", "/apis/batch/v1/jobs", "/apis/batch/v1/cronjobs",
                      "/apis/discovery.k8s.io/v1/endpointslices",
                      "/apis/networking.k8s.io/v1/ingresses", "/apis/networking.k8s.io/v1/ingressclasses",
                      "/apis/networking.k8s.io/v1/networkpolicies", "/apis/networking.k8s.io/v1/servicecidrs",
                      "/api/v1/namespaces/kube-system/configmaps/kube-proxy",
                      "/api/v1/namespaces/kube-system/configmaps/coredns"}


def test_secrets_arrive_without_their_private_data(tmp_path: Path) -> None:
    """Whole Secrets arrive; all but the certificate is dropped on arrival (the key's name stays, emptied)."""
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
              "metadata": {"name": "shop-tls", "namespace": "default", "uid": "u1", "resourceVersion": "3"},
              "data": {"tls.crt": base64.b64encode(b"CERT").decode(), "tls.key": base64.b64encode(b"KEY").decode()}}
    with fake_api([secret], token="") as api:
        path = write(tmp_path, kubeconfig_for(api.url, {}))
        cluster = Cluster.from_kubeconfig(path)
    (kept,) = [o.raw for (kind, _), o in cluster.state.others.items() if kind == "Secret"]
    assert kept["data"] == {"tls.crt": base64.b64encode(b"CERT").decode(), "tls.key": ""}
    assert kept["type"] == "kubernetes.io/tls" and kept["metadata"]["name"] == "shop-tls"


def test_a_cloud_cluster_read_live_has_only_its_own_system_objects(tmp_path: Path) -> None:
    """A cluster without kind's ingress-nginx (a cloud one) read live: what it lacks of the kinds listed,
    it lacks. No IngressClass nginx, ingress-nginx namespace or Service, or kind node appears, so an
    Ingress without class is served by nobody."""
    def meta(name: str, namespace: str = "") -> dict[str, Any]:
        out = {"name": name, "uid": f"u-{namespace}-{name}", "resourceVersion": "1"}
        return {**out, "namespace": namespace} if namespace else out

    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("default")},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("kube-system")},
        {"apiVersion": "v1", "kind": "Node", "metadata": meta("gke-pool-1-abcd"),
         "spec": {"podCIDR": "10.8.0.0/24"},
         "status": {"addresses": [{"type": "InternalIP", "address": "10.128.0.5"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta("kube-dns-5f8b9-x1", "kube-system"),
         "spec": {"nodeName": "gke-pool-1-abcd", "containers": [{"name": "kubedns", "image": "gke.gcr.io/kube-dns"}]},
         "status": {"phase": "Running", "podIP": "10.8.0.3", "hostIP": "10.128.0.5"}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta("web", "default"),
         "spec": {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
             "service": {"name": "web", "port": {"number": 80}}}}]}}]}},
    ]
    with fake_api(objects, token="") as api:
        cluster = Cluster.from_kubeconfig(write(tmp_path, kubeconfig_for(api.url, {})))
    state = cluster.state
    assert list(state.nodes) == ["gke-pool-1-abcd"]
    assert state.ingress_classes == {}
    assert sorted(state.namespaces) == ["default", "kube-system"]
    assert not [k for k in state.services if k.startswith("ingress-nginx/")]
    assert [f.code for f in cluster.doctor().findings if f.code == "IngressNoClass"] == ["IngressNoClass"]


def test_the_contexts_namespace_is_the_default_one_as_for_kubectl(tmp_path: Path) -> None:
    """Without -n, names are in the kubeconfig context's namespace (`endpoints web` is team/web), and a
    manifest without namespace applied over the cluster lands there; -n still wins."""
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": f"u-{ns}"}}
               for ns in ("default", "team")]
    objects += [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns, "uid": f"s-{ns}"},
                 "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "clusterIP": ip, "clusterIPs": [ip]}}
                for ns, ip in (("default", "10.96.0.50"), ("team", "10.96.0.60"))]
    with fake_api(objects, token="") as api:
        config = write(tmp_path, kubeconfig_for(api.url, {}, namespace="team"))
        assert "Service:   team/web" in knetsim("endpoints", "web", "--kubeconfig", config).output
        assert "Service:   default/web" in knetsim("endpoints", "web", "-n", "default", "--kubeconfig", config).output
        extra = tmp_path / "extra.yaml"
        extra.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: extra}\nspec: {ports: [{port: 80}]}\n")
        listed = knetsim("get", "services", "--kubeconfig", config, "-f", str(extra)).output
    assert [line.split()[0] for line in listed.splitlines()[1:]] == ["extra", "web"]


def test_a_big_cluster_is_read_page_by_page_with_progress_on_stderr(tmp_path: Path) -> None:
    namespaces = [{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": f"team-{i:04d}", "uid": f"u{i}", "resourceVersion": "1"}} for i in range(1203)]
    with fake_api(namespaces, token="") as api:
        path = write(tmp_path, kubeconfig_for(api.url, {}))
        out = CliRunner().invoke(cli, ["get", "namespaces", "--kubeconfig", path], catch_exceptions=False)
    assert out.exit_code == 0
    assert [r.query.get("continue") for r in api.requests if r.path == "/api/v1/namespaces"] == [None, "500", "1000"]
    assert all(r.query.get("limit") == "500" for r in api.requests if r.path == "/api/v1/namespaces")
    names = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    assert sum(n.startswith("team-") for n in names) == 1203
    assert "cluster kind-kind: 500 namespaces so far…\ncluster kind-kind: 1000 namespaces so far…\n" in out.stderr


def test_a_refused_token_is_exit_2_in_the_servers_words(kind: tuple[FakeAPI, str], tmp_path: Path) -> None:
    api, _ = kind
    path = write(tmp_path, kubeconfig_for(api.url, {"token": "wrong"}), "wrong")
    out = knetsim("doctor", "--kubeconfig", path)
    assert out.exit_code == 2
    assert out.output == (f"error: {api.url}: the server did not accept the credentials of user kind-kind (context "
                          "kind-kind): Unauthorized (401 Unauthorized)\n")


def test_forbidden_pods_is_exit_2_forbidden_secrets_a_warning(tmp_path: Path,
                                                              typo_objects: list[dict[str, Any]]) -> None:
    with fake_api(typo_objects, token="", forbidden=["secrets"]) as api:
        path = write(tmp_path, kubeconfig_for(api.url, {}))
        out = CliRunner().invoke(cli, ["endpoints", "web", "--kubeconfig", path], catch_exceptions=False)
    assert out.exit_code == 1, out.output  # the answer (no endpoint: the typo), not a failure to read
    assert "Verdict:   no pod in namespace 'default' matches the selector app=wbe" in out.stdout
    assert out.stderr.startswith('Warning: cluster kind-kind: cannot list secrets (secrets is forbidden: User "alice" '
                                 'cannot list resource "secrets" in API group "" at the cluster scope); Ingress TLS '
                                 "Secrets cannot be checked\n")
    with fake_api(typo_objects, token="", forbidden=["pods"]) as api:
        path = write(tmp_path, kubeconfig_for(api.url, {}))
        out = CliRunner().invoke(cli, ["endpoints", "web", "--kubeconfig", path], catch_exceptions=False)
    assert out.exit_code == 2
    assert out.stderr == (f'error: {api.url}: pods is forbidden: User "alice" cannot list resource "pods" in API '
                          'group "" at the cluster scope (403 Forbidden)\n')


def test_an_unreachable_server_is_exit_2_at_once(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = write(tmp_path, kubeconfig_for(f"https://127.0.0.1:{port}", {"token": "t"}))
    out = knetsim("trace", "--kubeconfig", path, "--from", "default/client", "http://web")
    assert out.exit_code == 2
    assert out.output == (f"error: cannot reach the API server https://127.0.0.1:{port} (context kind-kind, "
                          f"kubeconfig {path}): Connection refused\n")


def test_an_exec_credential_plugin_logs_in(tmp_path: Path, typo_objects: list[dict[str, Any]]) -> None:
    """As `gke-gcloud-auth-plugin` or `aws eks get-token` do: a program prints an ExecCredential with a token."""
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\n[ -n \"$KUBERNETES_EXEC_INFO\" ] || exit 3\n"
                      "echo '{\"apiVersion\": \"client.authentication.k8s.io/v1\", \"kind\": \"ExecCredential\", "
                      "\"status\": {\"token\": \"from-the-plugin\"}}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    with fake_api(typo_objects, token="from-the-plugin") as api:
        path = write(tmp_path, kubeconfig_for(api.url, {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}}))
        out = knetsim("get", "svc", "web", "--kubeconfig", path)
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[1].split()[:2] == ["web", "ClusterIP"]
    assert {r.authorization for r in api.requests} == {"Bearer from-the-plugin"}


def test_context_alone_reads_the_default_kubeconfig(tmp_path: Path, kind: tuple[FakeAPI, str]) -> None:
    """--context without --kubeconfig: $KUBECONFIG's cluster of that context, as kubectl --context does."""
    _, path = kind
    out = knetsim("get", "svc", "web", "--context", "kind-kind", KUBECONFIG=path, HOME=str(tmp_path))
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[1].split()[:2] == ["web", "ClusterIP"]
    assert os.environ.get("KUBECONFIG") != path


def test_a_server_that_never_answers_is_given_up_on(tmp_path: Path) -> None:
    """A server that accepts the connection and then says nothing (a hung apiserver, a proxy) is bounded."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        api = connect(write(tmp_path, kubeconfig_for(url, {})), timeout=0.5)
        with pytest.raises(KubeError) as caught:
            api.version()
    assert str(caught.value) == (f"the API server {url} (context kind-kind, kubeconfig {tmp_path / 'config'}) did "
                                 "not answer within 0.5s")


def test_a_clusters_own_crds_of_knetsims_kinds_admit_its_objects(tmp_path: Path) -> None:
    """Given a cluster running network-policy-api's experimental channel (its CRD served, a ClusterNetworkPolicy
    with a nodes peer), then the cluster's CRD is read by name and admits the policy, and validate says so; where
    the CRD cannot be read, knetsim's standard definition refuses the peer and the note says why."""
    from knetsim.model.crd import builtin_crd

    crd = builtin_crd("policy.networking.k8s.io", "ClusterNetworkPolicy", "experimental")
    policy = {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
              "metadata": {"name": "no-nodes", "uid": "u-cnp", "resourceVersion": "7"},
              "spec": {"tier": "Admin", "priority": 1, "subject": {"namespaces": {}},
                       "egress": [{"action": "Deny", "to": [{"nodes": {}}]}]}}
    groups = {"apiextensions.k8s.io": ["v1"], "policy.networking.k8s.io": ["v1alpha2"]}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "uid": "u-ns"}}
    with fake_api([namespace, policy, {**crd, "metadata": {**crd["metadata"], "uid": "u-crd"}}], token="",
                  groups=groups) as api:
        config = write(tmp_path, kubeconfig_for(api.url, {}))
        out = knetsim("validate", "--kubeconfig", config)
        asked = {r.path for r in api.requests}
    assert out.exit_code == 0, out.output
    assert ("ClusterNetworkPolicy: checked against CustomResourceDefinition clusternetworkpolicies.policy.networking."
            "k8s.io from cluster kind-kind (bundle-version v0.2.0, channel experimental)") in out.output
    assert "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusternetworkpolicies.policy.networking.k8s.io" \
        in asked
    assert "/apis/apiextensions.k8s.io/v1/customresourcedefinitions" not in asked  # never every CRD of the cluster
    with fake_api([namespace, policy], token="", groups=groups, forbidden=["customresourcedefinitions"]) as api:
        out = knetsim("validate", "--kubeconfig", write(tmp_path, kubeconfig_for(api.url, {})))
    assert out.exit_code == 2
    assert "cannot read CustomResourceDefinitions" in out.output and "knetsim's own definitions" in out.output
    assert "ClusterNetworkPolicy no-nodes: spec.egress[0].to[0]: " in out.output


# --- the data plane a cluster runs ---------------------------------------------------------------


def _daemonset(name: str, args: list[str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": f"example/{name}:1"}
    if args:
        container["args"] = args
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system", "uid": f"u-{name}", "resourceVersion": "1",
                         "labels": {"k8s-app": name}},
            "spec": {"selector": {"matchLabels": {"k8s-app": name}},
                     "template": {"metadata": {"labels": {"k8s-app": name}}, "spec": {"containers": [container]}}}}


def _config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "kube-system", "uid": f"u-cm-{name}", "resourceVersion": "1"},
            "data": data}


def _proxy_config(mode: str) -> dict[str, Any]:
    return _config_map("kube-proxy", {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
                                                     f"kind: KubeProxyConfiguration\nmode: {mode}\n"})


def _static_pod(name: str, labels: dict[str, str], args: list[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "kube-system", "uid": f"u-{name}", "resourceVersion": "1",
                         "labels": labels},
            "spec": {"nodeName": "kind-worker", "hostNetwork": True,
                     "containers": [{"name": "kube-proxy", "image": "example/kube-proxy:1", "args": args}]},
            "status": {"phase": "Running"}}


@pytest.mark.parametrize(("system", "first_line", "note"), [
    ([_daemonset("cilium")], "# knetsim: Cilium kube-proxy replacement (BPF maps)",
     "data plane: ebpf (kube-system runs Cilium (DaemonSet cilium) and no kube-proxy: Cilium replaces it)"),
    ([_daemonset("kube-proxy"), _proxy_config("nftables")], "# knetsim: kube-proxy nftables mode",
     "data plane: nftables (kube-proxy runs in nftables mode (ConfigMap kube-system/kube-proxy))"),
    ([_daemonset("kube-proxy", ["--proxy-mode=nftables"])], "# knetsim: kube-proxy nftables mode",
     "data plane: nftables (kube-proxy runs in nftables mode (its --proxy-mode flag))"),
    ([_daemonset("kube-proxy"), _proxy_config('""')], "# knetsim: kube-proxy iptables mode", None),
    # kube-proxy as static pods (kOps, RKE2, k3s-like distributions) next to Cilium as the CNI only.
    ([_daemonset("cilium"), _static_pod("kube-proxy-node1", {"component": "kube-proxy"}, ["--proxy-mode=nftables"])],
     "# knetsim: kube-proxy nftables mode",
     "data plane: nftables (kube-proxy runs in nftables mode (its --proxy-mode flag))"),
    # Cilium says it does not replace kube-proxy: nothing is inferred (the defaults stand).
    ([_daemonset("cilium"), _config_map("cilium-config", {"kube-proxy-replacement": "false"})],
     "# knetsim: kube-proxy iptables mode", None),
    ([_daemonset("cilium"), _config_map("cilium-config", {"kube-proxy-replacement": "true"})],
     "# knetsim: Cilium kube-proxy replacement (BPF maps)",
     "data plane: ebpf (kube-system runs Cilium (DaemonSet cilium) and no kube-proxy: Cilium replaces it "
     "(cilium-config: kube-proxy-replacement))"),
])
def test_a_cluster_read_live_is_analysed_with_the_data_plane_it_runs(
        tmp_path: Path, typo_objects: list[dict[str, Any]], system: list[dict[str, Any]], first_line: str,
        note: str | None) -> None:
    """No --cluster-config: what kube-system runs says what moves Service traffic (Cilium without kube-proxy,
    or kube-proxy in the mode its flag or its ConfigMap names), so a Cilium cluster's CiliumNetworkPolicies
    are enforced in the answers and an nftables cluster's rules are rendered as nft."""
    # The snapshot without its own node add-ons (kind's kube-proxy and kindnet, their DaemonSets and pods).
    objects = [o for o in typo_objects if not (o["metadata"].get("namespace") == "kube-system" and (
        o["kind"] == "DaemonSet" or o["metadata"]["name"].startswith(("kube-proxy-", "kindnet-"))))]
    with fake_api([*objects, *system], token="") as api:
        result = knetsim("render", "--kubeconfig", write(tmp_path, kubeconfig_for(api.url, {})))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(first_line)
    notes = [line for line in result.stderr.splitlines() if "data plane:" in line]
    assert notes == ([f"Warning: {note}"] if note else [])


def _proxy_config_with(text: str) -> dict[str, Any]:
    return _config_map("kube-proxy", {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
                                                     f"kind: KubeProxyConfiguration\n{text}"})


@pytest.mark.parametrize(("system", "rule", "note"), [
    ([_daemonset("kube-proxy", ["--nodeport-addresses=primary"])], "-d 172.18.0.3 -j KUBE-NODEPORTS",
     "kube-proxy nodePortAddresses: primary (its --nodeport-addresses flag)"),
    ([_daemonset("kube-proxy"),
      _proxy_config_with("mode: iptables\nnodePortAddresses: [172.18.0.0/16, 127.0.0.0/8]\n")],
     "-d 127.0.0.1 -j KUBE-NODEPORTS",
     "kube-proxy nodePortAddresses: 172.18.0.0/16, 127.0.0.0/8 (ConfigMap kube-system/kube-proxy)"),
    ([_daemonset("kube-proxy"), _proxy_config_with("mode: iptables\nnodePortAddresses: null\n")],
     "-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS", None),
])
def test_a_cluster_read_live_takes_its_kube_proxys_nodeport_addresses(
        tmp_path: Path, typo_objects: list[dict[str, Any]], system: list[dict[str, Any]], rule: str,
        note: str | None) -> None:
    """No --cluster-config: the node addresses that take NodePorts (localhost among them or not) are those the
    cluster's kube-proxy takes, from its flag or its ConfigMap (dataplane/nodeports.py)."""
    objects = [o for o in typo_objects if not (o["metadata"].get("namespace") == "kube-system" and (
        o["kind"] == "DaemonSet" or o["metadata"]["name"].startswith(("kube-proxy-", "kindnet-"))))]
    with fake_api([*objects, *system], token="") as api:
        result = knetsim("render", "iptables", "--node", "worker", "--kubeconfig",
                         write(tmp_path, kubeconfig_for(api.url, {})))
    assert result.exit_code == 0, result.output
    assert rule in result.stdout
    notes = [line for line in result.stderr.splitlines() if "nodePortAddresses" in line]
    assert notes == ([f"Warning: {note}"] if note else [])


def test_a_cilium_cluster_read_live_keeps_the_agents_cluster_name(tmp_path: Path,
                                                                   typo_objects: list[dict[str, Any]]) -> None:
    """A Cilium cluster's endpoints carry io.cilium.k8s.policy.cluster = its cilium-config cluster-name; read through
    a kubeconfig, that ConfigMap's policy keys are read by name (nothing else of it is held), so a policy that
    selects by the cluster name selects there as the agent does. Before, every cluster read live was `default`."""
    from knetsim.policy.cilium.labels import cluster_name

    config = _config_map("cilium-config", {"cluster-name": "prod-east", "enable-policy": "default",
                                           "kube-proxy-replacement": "true", "ipam": "kubernetes"})
    with fake_api([*typo_objects, _daemonset("cilium"), config], token="") as api:
        cluster = Cluster.from_kubeconfig(write(tmp_path, kubeconfig_for(api.url, {})))
    kept = cluster.state.others[("ConfigMap", "kube-system/cilium-config")].raw
    assert kept["data"] == {"cluster-name": "prod-east", "enable-policy": "default"}
    assert cluster_name(cluster.state) == "prod-east"
