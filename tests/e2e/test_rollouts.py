"""Rollouts as the Deployment controller does them (issue 13 point 1), with the real kubectl.

Given a Deployment of 3 nginx pods (maxSurge 1, maxUnavailable 0: the defaults' 25% of 3), then a
new image rolls out in visible steps and leaves the old ReplicaSet at 0 as revision history;
`rollout history`, `undo`, `pause`/`resume`, `restart` and `status` answer as on a cluster; an
image that cannot be pulled stalls the rollout with every old pod still serving, and fixing it
completes it; two quick scales are two events; a pod relabelled away and back is adopted again.
"""

from __future__ import annotations

import re
import subprocess
import time

from .conftest import KUBECTL, Cluster, wait_for


def web(k: Cluster, replicas: int = 3) -> None:
    k.sh(f"kubectl create deployment web --image=nginx:1.27 --replicas={replicas} --port=80")
    k.sh("kubectl expose deployment web --port=80")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")


def image(k: Cluster) -> str:
    return str(k.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}").stdout)


def replica_sets(k: Cluster) -> dict[str, tuple[str, int, int]]:
    """name -> (image, spec.replicas, revision)."""
    out = {}
    for rs in k.get_json("rs", "-l", "app=web")["items"]:
        out[rs["metadata"]["name"]] = (rs["spec"]["template"]["spec"]["containers"][0]["image"],
                                       rs["spec"]["replicas"],
                                       int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))
    return out


def history(k: Cluster) -> list[list[str]]:
    lines = k.kubectl("rollout", "history", "deployment/web").stdout.splitlines()
    assert lines[0].strip() == "deployment.apps/web" and lines[1].split() == ["REVISION", "CHANGE-CAUSE"]
    return [re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in lines[2:] if line.strip()]


def test_set_image_rolls_out_keeps_history_and_undo_restores_the_image(k: Cluster) -> None:
    web(k)
    k.sh("kubectl annotate deployment web kubernetes.io/change-cause='nginx 1.27'")
    k.sh("kubectl set image deployment/web nginx=nginx:1.28 && "
         "kubectl annotate deployment web kubernetes.io/change-cause='nginx 1.28' --overwrite")
    out = k.kubectl("rollout", "status", "deployment/web", "--timeout=20s").stdout
    assert out.endswith('deployment "web" successfully rolled out\n')
    sets = replica_sets(k)
    assert sorted(sets.values()) == [("nginx:1.27", 0, 1), ("nginx:1.28", 3, 2)]
    assert history(k) == [["1", "nginx 1.27"], ["2", "nginx 1.28"]]
    assert re.search(r"Image:\s+nginx:1.27\n", k.kubectl("rollout", "history", "deployment/web", "--revision=1").stdout)
    events = k.kubectl("describe", "deployment", "web").stdout
    old = next(n for n, v in sets.items() if v[0] == "nginx:1.27")
    new = next(n for n, v in sets.items() if v[0] == "nginx:1.28")
    # maxSurge 1 / maxUnavailable 0: one new pod up, then one old down, three times.
    assert re.findall(r"Scaled (?:up|down) replica set \S+ from \d+ to \d+", events)[1:] == [
        f"Scaled up replica set {new} from 0 to 1", f"Scaled down replica set {old} from 3 to 2",
        f"Scaled up replica set {new} from 1 to 2", f"Scaled down replica set {old} from 2 to 1",
        f"Scaled up replica set {new} from 2 to 3", f"Scaled down replica set {old} from 1 to 0"]
    assert re.search(r"Progressing\s+True\s+NewReplicaSetAvailable", events)
    assert re.search(r"Available\s+True\s+MinimumReplicasAvailable", events)
    assert f"NewReplicaSet:   {new} (3/3 replicas created)" in events

    assert k.kubectl("rollout", "undo", "deployment/web").stdout == "deployment.apps/web rolled back\n"
    k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert image(k) == "nginx:1.27"
    assert sorted(replica_sets(k).values()) == [("nginx:1.27", 3, 3), ("nginx:1.28", 0, 2)]
    assert history(k) == [["2", "nginx 1.28"], ["3", "nginx 1.27"]]
    pods = k.get_json("pods", "-l", "app=web")["items"]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.27"} and len(pods) == 3


def test_a_bad_image_stalls_the_rollout_with_the_old_pods_serving_until_fixed(k: Cluster) -> None:
    web(k)
    old_ips = sorted(p["status"]["podIP"] for p in k.get_json("pods", "-l", "app=web")["items"])
    k.sh("kubectl set image deployment/web nginx=nginx:doesnotexist-xyz")
    stalled = k.kubectl("rollout", "status", "deployment/web", "--timeout=3s", check=False)
    assert stalled.returncode == 1
    assert 'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...' \
        in stalled.stdout
    assert "timed out waiting for the condition" in stalled.stderr
    assert sorted(v[1] for v in replica_sets(k).values()) == [1, 3]  # one surge pod; no old one went
    served = k.get_json("endpoints", "web")["subsets"][0]
    assert sorted(a["ip"] for a in served["addresses"]) == old_ips
    assert len(served["notReadyAddresses"]) == 1
    row = k.sh("kubectl get deploy web --no-headers").stdout.split()
    assert row[1:4] == ["3/3", "1", "3"]  # READY, UP-TO-DATE, AVAILABLE
    k.sh("kubectl set image deployment/web nginx=nginx:1.28")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    sets = replica_sets(k)
    assert sorted(sets.values()) == [("nginx:1.27", 0, 1), ("nginx:1.28", 3, 3), ("nginx:doesnotexist-xyz", 0, 2)]
    assert len(k.get_json("pods", "-l", "app=web")["items"]) == 3


def test_the_steps_are_visible_with_get_rs_watch(k: Cluster) -> None:
    web(k)
    assert KUBECTL is not None
    watch = subprocess.Popen([KUBECTL, "get", "rs", "-l", "app=web", "-w", "--no-headers"], stdout=subprocess.PIPE,
                             text=True, env=k.env())
    try:
        time.sleep(1.0)
        k.sh("kubectl set image deployment/web nginx=nginx:1.28")
        k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
        time.sleep(1.0)
    finally:
        watch.terminate()
    seen = [line.split()[:4] for line in (watch.communicate(timeout=10)[0] or "").splitlines()]
    new = next(n for n, v in replica_sets(k).items() if v[0] == "nginx:1.28")
    desired = [int(row[1]) for row in seen if row[0] == new]
    assert desired[0] == 1 and desired[-1] == 3 and 2 in desired, seen
    old_desired = [int(row[1]) for row in seen if row[0] != new]
    assert old_desired[-1] == 0 and {2, 1} <= set(old_desired), seen


def test_pause_holds_a_template_change_resume_rolls_it_and_restart_makes_new_pods(k: Cluster) -> None:
    web(k, replicas=2)
    k.sh("kubectl set image deployment/web nginx=nginx:1.28")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    k.kubectl("rollout", "pause", "deployment/web")
    k.sh("kubectl set image deployment/web nginx=nginx:1.29")
    time.sleep(0.5)
    assert sorted(v[:2] for v in replica_sets(k).values()) == [("nginx:1.27", 0), ("nginx:1.28", 2)]
    assert re.search(r"Progressing\s+Unknown\s+DeploymentPaused", k.kubectl("describe", "deploy", "web").stdout)
    undo = k.kubectl("rollout", "undo", "deployment/web", check=False)
    assert undo.returncode == 1 and "you cannot rollback a paused deployment" in undo.stderr
    k.kubectl("rollout", "resume", "deployment/web")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert sorted(v[:2] for v in replica_sets(k).values()) == [("nginx:1.27", 0), ("nginx:1.28", 0),
                                                              ("nginx:1.29", 2)]
    before = {p["metadata"]["name"] for p in k.get_json("pods", "-l", "app=web")["items"]}
    k.kubectl("rollout", "restart", "deployment/web")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    pods = k.get_json("pods", "-l", "app=web")["items"]
    assert len(pods) == 2 and not before & {p["metadata"]["name"] for p in pods}
    assert all("kubectl.kubernetes.io/restartedAt" in p["metadata"]["annotations"] for p in pods)
    assert [r[0] for r in history(k)] == ["1", "2", "3", "4"]


def test_two_quick_scales_are_two_events(k: Cluster) -> None:
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=1")
    k.sh("kubectl scale deployment web --replicas=2 && kubectl scale deployment web --replicas=3")
    rs = k.get_json("rs", "-l", "app=web")["items"][0]["metadata"]["name"]
    messages = k.sh("kubectl get events --field-selector reason=ScalingReplicaSet "
                    "-o jsonpath='{range .items[*]}{.message}{\"\\n\"}{end}'").stdout.splitlines()
    assert messages == [f"Scaled up replica set {rs} from 0 to 1", f"Scaled up replica set {rs} from 1 to 2",
                        f"Scaled up replica set {rs} from 2 to 3"]


def test_a_pod_relabelled_away_and_back_is_adopted_again(k: Cluster) -> None:
    web(k, replicas=2)
    pod = sorted(p["metadata"]["name"] for p in k.get_json("pods", "-l", "app=web")["items"])[0]
    k.kubectl("label", "pod", pod, "app=debug", "--overwrite")
    assert wait_for(lambda: len(k.get_json("pods", "-l", "app=web")["items"]) == 2)
    assert len(k.get_json("pods")["items"]) == 3
    assert "ownerReferences" not in k.get_json("pod", pod)["metadata"]
    k.kubectl("label", "pod", pod, "app=web", "--overwrite")
    pods = k.get_json("pods")["items"]
    assert len(pods) == 2 and pod in {p["metadata"]["name"] for p in pods}
    assert k.get_json("pod", pod)["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    rs = k.get_json("rs", "-l", "app=web")["items"][0]["metadata"]["name"]
    events = k.kubectl("describe", "rs", rs).stdout
    assert events.count("SuccessfulCreate") == 3 and events.count("SuccessfulDelete") == 1
