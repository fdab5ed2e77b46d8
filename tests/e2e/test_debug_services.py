"""Seed "接続できないときの確認手順" (Debug Services), typed as the notes write it.

Given `web` from "Deployment を Service で公開", then each step's command answers as it would on
a kind cluster: the Service YAML, the EndpointSlice and pod labels, DNS from a throwaway busybox
pod (FQDN works; `nslookup web.default` hits busybox's search-list quirk and says NXDOMAIN while
wget resolves the same name), a direct wget, and the NetworkPolicies. Then a broken targetPort is
found by the same steps.
"""

from __future__ import annotations

import yaml

from .conftest import Cluster
from .seeds import DEFAULT_DENY_AND_DB

STEPS = """\
# 1. Service があり、port/targetPort が合っているか
kubectl get svc web -o yaml

# 2. selector が Pod を捕まえているか (ENDPOINTS が <none> なら selector/ラベルの不一致)
kubectl get endpointslices -l kubernetes.io/service-name=web
kubectl get pods -l app=web --show-labels

# 3. DNS が解決できるか (クラスタの中の一時的な Pod から、FQDN で)
kubectl run tmp --rm -it --image=busybox:1.36 --restart=Never -- nslookup web.default.svc.cluster.local

# 4. IP/ポートで直接つながるか
kubectl run tmp --rm -it --image=busybox:1.36 --restart=Never -- wget -qO- http://web.default:80

# 5. 対象の Pod にかかっている NetworkPolicy があるか
kubectl get networkpolicy -n default
kubectl describe networkpolicy -n default
"""


def commands() -> list[str]:
    return [line for line in STEPS.splitlines() if line.startswith("kubectl ")]


def setup_web(k: Cluster) -> tuple[str, list[str]]:
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    k.sh("kubectl expose deployment web --port=80 --target-port=80")
    ip = k.sh("kubectl get svc web -o jsonpath='{.spec.clusterIP}'").stdout
    pod_ips = sorted(k.sh("kubectl get pods -l app=web -o jsonpath='{.items[*].status.podIP}'").stdout.split())
    return ip, pod_ips


def test_the_whole_block_runs_as_a_script(k: Cluster) -> None:
    setup_web(k)
    k.write("steps.sh", STEPS)
    # Without a terminal, `-it` degrades to `-i` with kubectl's own notice; nothing fails.
    out = k.sh("bash -e steps.sh")
    assert out.stdout.count('pod "tmp" deleted') == 2
    assert "Unable to use a TTY - input is not a terminal or the right kind of file" in out.stderr
    assert "No resources found in default namespace." in out.stderr
    assert "warning" not in out.stderr


def test_each_step_answers_as_on_a_kind_cluster(k: Cluster) -> None:
    ip, pod_ips = setup_web(k)
    step1, step2a, step2b, step3, step4, step5a, step5b = commands()

    svc = yaml.safe_load(k.sh(step1).stdout)
    assert svc["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert svc["spec"]["selector"] == {"app": "web"}
    assert svc["metadata"]["resourceVersion"].isdigit()
    assert "generation" not in svc["metadata"]  # the Service registry keeps none

    lines = k.sh(step2a).stdout.splitlines()
    assert lines[0].split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    name, addr_type, ports, endpoints, _age = lines[1].split()
    assert name.startswith("web-")
    assert (addr_type, ports, sorted(endpoints.split(","))) == ("IPv4", "80", pod_ips)

    lines = k.sh(step2b).stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "LABELS"]
    assert len(lines) == 3
    for line in lines[1:]:
        cells = line.split()
        assert cells[1:4] == ["1/1", "Running", "0"]
        assert cells[5].startswith("app=web,pod-template-hash=")

    out = k.sh(step3)
    assert out.returncode == 0
    assert out.stdout.startswith("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n")
    assert f"Name:\tweb.default.svc.cluster.local\nAddress: {ip}\n" in out.stdout
    assert out.stdout.endswith('pod "tmp" deleted\n')

    out = k.sh(step4)
    assert "Welcome to nginx!" in out.stdout
    assert any(f"({p})" in out.stdout for p in pod_ips)

    assert k.sh(step5a).stderr == "No resources found in default namespace.\n"
    assert k.sh(step5b).stderr == "No resources found in default namespace.\n"


def test_busybox_nslookup_short_name_is_nxdomain_but_wget_resolves_it(k: Cluster) -> None:
    """busybox の nslookup は search リストをきちんと適用しない (busybox:1.36)."""
    setup_web(k)
    out = k.sh("kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- nslookup web.default", check=False)
    assert out.returncode == 1
    assert "** server can't find web.default: NXDOMAIN" in out.stdout
    assert 'pod "tmp" deleted' in out.stdout
    assert "pod default/tmp terminated (Error)" in out.stderr
    # kubelet's attach does not report the exit code: kubectl reads it from the pod status.
    assert "couldn't attach" not in out.stderr
    out = k.sh("kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- wget -qO- http://web.default:80")
    assert "Welcome to nginx!" in out.stdout


def test_step5_lists_and_describes_the_policies(k: Cluster) -> None:
    setup_web(k)
    k.write("deny.yaml", DEFAULT_DENY_AND_DB)
    k.sh("kubectl apply -f deny.yaml")
    *_, step5a, step5b = commands()
    assert [line.split()[0] for line in k.sh(step5a).stdout.splitlines()] == \
        ["NAME", "db-allow-backend", "default-deny-ingress"]
    out = k.sh(step5b).stdout
    assert out.count("Namespace:    default") == 2
    assert "Name:         default-deny-ingress" in out
    # Step 4 now times out: the default deny isolates web. -T keeps the wait short.
    run = k.sh("kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- wget -qO- -T 1 http://web.default:80",
               check=False)
    assert run.returncode == 1
    assert "wget: download timed out" in run.stderr


def test_a_wrong_target_port_is_found_by_the_steps(k: Cluster) -> None:
    """targetPort のチェック項目: targetPort が Pod が実際に listen しているポートか."""
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    k.sh("kubectl expose deployment web --port=80 --target-port=8080")
    step1, step2a, *_ = commands()
    assert yaml.safe_load(k.sh(step1).stdout)["spec"]["ports"][0]["targetPort"] == 8080
    # The slice is not empty (the selector is right) but carries 8080, where nginx does not listen.
    assert k.sh(step2a).stdout.splitlines()[1].split()[2] == "8080"
    run = k.sh("kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- wget -qO- http://web.default:80",
               check=False)
    assert run.returncode == 1
    assert "wget: can't connect to remote host" in run.stderr
    assert "Connection refused" in run.stderr
    # The fix: point targetPort at the container's port.
    k.sh("""kubectl patch svc web --type=json -p '[{"op":"replace","path":"/spec/ports/0/targetPort","value":80}]'""")
    assert "Welcome to nginx!" in k.sh("kubectl run tmp --rm -i --image=busybox:1.36 --restart=Never -- "
                                       "wget -qO- http://web.default:80").stdout
