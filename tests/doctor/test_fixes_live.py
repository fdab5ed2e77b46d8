"""The doctor's fixes on `knetsim up`, as a user meets them: break the cluster with kubectl, run `knetsim doctor
--kubeconfig`, run the fix it prints, exactly as printed, and the doctor has nothing left to say about it."""

from __future__ import annotations

import json
import subprocess

from tests.live import Cluster, knetsim_argv, wait_for

# This module starts clusters itself (tests/cluster.py marks the fixtures' users).


def doctor(cluster: Cluster) -> dict:
    out = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig, "-o", "json"),
                         capture_output=True, text=True, env=cluster.env(), timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def codes(report: dict) -> set[str]:
    return {f["code"] for f in report["findings"] if f["severity"] != "info"}


def fix_of(report: dict, code: str) -> str:
    [fix] = {f["fix"] for f in report["findings"] if f["code"] == code}
    return fix


def test_a_selector_with_a_wrong_key_is_fixed_by_the_printed_patch(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    cluster.kubectl("create", "service", "clusterip", "web", "--tcp=80:80")
    # `kubectl set selector` replaces the selector: appp=web selects nothing; a strategic merge patch of
    # app=web would keep appp and still select nothing.
    cluster.kubectl("set", "selector", "service", "web", "appp=web")
    assert wait_for(lambda: "SelectorMatchesNothing" in codes(doctor(cluster)), timeout=30)
    fix = fix_of(doctor(cluster), "SelectorMatchesNothing")
    assert "--type=merge" in fix and '"appp":null' in fix
    cluster.sh(fix)
    assert cluster.get_json("service", "web")["spec"]["selector"] == {"app": "web"}
    assert wait_for(lambda: not codes(doctor(cluster)) & {"SelectorMatchesNothing", "PodsNotReady"}, timeout=30)


def test_a_wrong_target_port_is_fixed_by_the_printed_patch(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "api", "--image=nginx:1.27", "--replicas=2")
    cluster.kubectl("create", "service", "clusterip", "api", "--tcp=80:8080")
    assert wait_for(lambda: "TargetPortNotListening" in codes(doctor(cluster)), timeout=30)
    fix = fix_of(doctor(cluster), "TargetPortNotListening")
    assert "--type=json" in fix
    cluster.sh(fix)
    assert cluster.get_json("service", "api")["spec"]["ports"][0]["targetPort"] == 80
    assert wait_for(lambda: "TargetPortNotListening" not in codes(doctor(cluster)), timeout=30)
