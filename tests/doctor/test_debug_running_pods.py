"""Kubernetes' "Debug Running Pods" (kubernetes.io/docs/tasks/debug/debug-application/debug-running-pod/),
restated as objects, broken and repaired: for each break the doctor names the layer, the object and a fix, and
the repaired objects (the fix applied) give no such finding."""

from __future__ import annotations

import pytest

from knetsim import Cluster

SERVICE = """---
apiVersion: v1
kind: Service
metadata: {name: app}
spec: {selector: {app: app}, ports: [{port: 80}]}
"""


def pod(container: str, *, spec: str = "") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: app, labels: {{app: app}}}}
spec:
{spec}  containers:
  - name: app
{container}""" + SERVICE


# The page's "My pod stays pending": no node takes it (a nodeSelector no node matches).
PENDING = pod("    image: nginx:1.27\n", spec="  nodeSelector: {disktype: ssd}\n")
PENDING_FIXED = pod("    image: nginx:1.27\n")
# The page's first example: more CPU requested than any node has.
TOO_BIG = pod("    image: nginx:1.27\n    resources: {requests: {cpu: \"100\"}}\n")
TOO_BIG_FIXED = pod("    image: nginx:1.27\n    resources: {requests: {cpu: 100m}}\n")
# "My pod stays waiting": an image that cannot be pulled (a typo in its name).
IMAGE_TYPO = pod("    image: nignx:1.27\n")
IMAGE_FIXED = pod("    image: nginx:1.27\n")
# "My pod is crashing": a command that fails.
CRASHING = pod('    image: busybox:1.36\n    command: ["sh", "-c", "echo starting; exit 1"]\n')
CRASHING_FIXED = pod('    image: busybox:1.36\n    command: ["sh", "-c", "echo starting; sleep 3600"]\n')
# A container whose command ends (`echo`): Completed, then restarted for ever.
EXITS = """apiVersion: apps/v1
kind: Deployment
metadata: {name: toolbox}
spec:
  replicas: 2
  selector: {matchLabels: {app: toolbox}}
  template:
    metadata: {labels: {app: toolbox}}
    spec:
      containers:
      - name: toolbox
        image: busybox:1.36
"""
EXITS_FIXED = EXITS + '        command: ["sleep", "3600"]\n'
EXITS += '        command: ["echo", "hello"]\n'
# An exec probe knetsim cannot run offline: assumed to pass, and said so.
EXEC_PROBE = pod("    image: nginx:1.27\n    readinessProbe:\n      exec:\n        command: [cat, /tmp/healthy]\n")

SCENARIOS = {
    "pending": (PENDING, PENDING_FIXED, "PodsUnschedulable", "scheduler", "Service default/app", "nodeSelector"),
    "resources": (TOO_BIG, TOO_BIG_FIXED, "PodsUnschedulable", "scheduler", "Service default/app",
                  "kubectl set resources pod/app -n default --requests=cpu=100m"),
    "image": (IMAGE_TYPO, IMAGE_FIXED, "ImagePullError", "kubelet", "Pod default/app",
              "kubectl set image pod/app -n default app=nginx:1.27"),
    "crashing": (CRASHING, CRASHING_FIXED, "ContainerExits", "kubelet", "Pod default/app", "sleep 3600"),
    "exits": (EXITS, EXITS_FIXED, "ContainerExits", "kubelet", "Deployment default/toolbox",
              "kubectl logs deployment/toolbox -n default -c toolbox --previous"),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_break_is_named_and_the_repair_clears_it(name: str) -> None:
    broken, fixed, code, layer, subject, fix = SCENARIOS[name]
    found = [f for f in Cluster.from_yaml(broken).doctor().findings if f.code == code]
    assert found, [f.code for f in Cluster.from_yaml(broken).doctor().findings]
    assert (found[0].layer, found[0].subject, found[0].severity) == (layer, subject, "error")
    assert fix in found[0].fix, found[0].fix
    after = Cluster.from_yaml(fixed).doctor().findings
    assert not [f for f in after if f.severity == "error"], [(f.code, f.message) for f in after]


def test_the_exit_code_and_what_runs_are_named() -> None:
    finding = next(f for f in Cluster.from_yaml(CRASHING).doctor().findings if f.code == "ContainerExits")
    assert "runs `sh -c 'echo starting; exit 1'`, which exits with code 1 (Error)" in finding.message
    grouped = next(f for f in Cluster.from_yaml(EXITS).doctor().findings if f.code == "ContainerExits")
    assert grouped.message.startswith("2 pods of Deployment default/toolbox")
    assert "runs `echo hello`, which exits with code 0 (Completed)" in grouped.message


def test_a_pod_that_runs_its_task_once_is_not_crashing() -> None:
    once = CRASHING.replace("spec:\n", "spec:\n  restartPolicy: Never\n", 1)
    assert "ContainerExits" not in [f.code for f in Cluster.from_yaml(once).doctor().findings]
    interactive = pod("    image: busybox:1.36\n    stdin: true\n    tty: true\n")
    assert "ContainerExits" not in [f.code for f in Cluster.from_yaml(interactive).doctor().findings]


def test_an_exec_probe_offline_is_assumed_to_pass_and_said_so() -> None:
    cluster = Cluster.from_yaml(EXEC_PROBE)
    assert cluster.state.pods["default/app"].ready
    caveat = [f for f in cluster.doctor().findings if f.code == "ExecProbeNotJudged"]
    assert len(caveat) == 1 and caveat[0].severity == "info" and caveat[0].subject == "Pod default/app"
    assert "runs `cat /tmp/healthy`" in caveat[0].message and "taken as Ready" in caveat[0].message
    assert "kubectl exec pod/app -n default -c app -- cat /tmp/healthy" in caveat[0].fix


def test_a_pod_larger_than_every_node_is_pending_with_the_schedulers_words() -> None:
    cluster = Cluster.from_yaml(TOO_BIG, strict=False)
    finding = next(f for f in cluster.doctor().findings if f.code == "PodsUnschedulable")
    assert "2 Insufficient cpu" in finding.message and "No preemption victims found" in finding.message
    assert cluster.state.pods["default/app"].phase == "Pending"


def test_a_pod_no_node_selects_is_pending_with_the_schedulers_words() -> None:
    """kube-scheduler's NodeAffinity filter says whose affinity did not match: the Pod's."""
    pinned = pod("    image: busybox:1.36\n").replace("spec:\n", "spec:\n  nodeSelector: {disk: ssd}\n", 1)
    cluster = Cluster.from_yaml(pinned, strict=False)
    finding = next(f for f in cluster.doctor().findings if f.code == "PodsUnschedulable")
    assert "node(s) didn't match Pod's node affinity/selector" in finding.message, finding.message


HOST_PORTS = """
apiVersion: v1
kind: Pod
metadata: {name: first}
spec:
  nodeSelector: {kubernetes.io/hostname: worker}
  containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80, hostPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: second}
spec:
  nodeSelector: {kubernetes.io/hostname: worker}
  containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80, hostPort: 8080}]}]
"""


def test_a_pod_pending_for_a_taken_host_port_is_named_with_the_way_out() -> None:
    """No Service selects these pods, so no Service's check names them: the pod that never runs is named itself."""
    findings = [f for f in Cluster.from_yaml(HOST_PORTS, strict=False).doctor().findings
                if f.code == "PodsUnschedulable"]
    assert [(f.subject, f.severity) for f in findings] == [("Pod default/second", "warning")]
    assert "didn't have free ports for the requested pod ports" in findings[0].message
    assert "already holds the hostPort" in findings[0].fix and "drop hostPort" in findings[0].fix


def test_a_pending_pod_a_service_selects_is_named_once_by_the_service() -> None:
    service = ("---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
               "spec:\n  selector: {app: web}\n  ports: [{port: 80}]\n")
    labelled = HOST_PORTS.replace("metadata: {name: second}", "metadata: {name: second, labels: {app: web}}")
    findings = [f for f in Cluster.from_yaml(labelled + service, strict=False).doctor().findings
                if f.code == "PodsUnschedulable"]
    assert [f.subject for f in findings] == ["Service default/web"]


NEVER_INIT = """apiVersion: v1
kind: Pod
metadata: {name: task}
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: busybox:1.36, command: [sh, -c, "echo no config; exit 3"]}
  containers:
  - {name: main, image: busybox:1.36, command: [sleep, "3600"]}
"""


def test_an_init_container_that_fails_under_restart_policy_never_fails_the_pod_for_good() -> None:
    # The kubelet does not run it again (Init:Error, phase Failed); with OnFailure it would crash-loop.
    cluster = Cluster.from_yaml(NEVER_INIT)
    pod = cluster.state.pods["default/task"]
    assert pod.phase == "Failed" and not pod.ready
    init = pod.raw["status"]["initContainerStatuses"][0]
    assert init["state"] == {"terminated": {"exitCode": 3, "reason": "Error"}} and init["restartCount"] == 0
    finding = next(f for f in cluster.doctor().findings if f.code == "ContainerExits")
    assert (finding.layer, finding.subject, finding.severity) == ("kubelet", "Pod default/task", "error")
    assert "STATUS Init:Error" in finding.message and "exits with code 3" in finding.message
    assert "re-create the pod" in finding.fix
    retried = Cluster.from_yaml(NEVER_INIT.replace("Never", "OnFailure"))
    assert retried.state.pods["default/task"].phase == "Pending"
    fixed = Cluster.from_yaml(NEVER_INIT.replace("exit 3", "exit 0"))
    assert fixed.state.pods["default/task"].phase == "Running"
    assert "ContainerExits" not in [f.code for f in fixed.doctor().findings]


def test_init_containers_that_wait_for_each_other_hold_the_pod_at_init() -> None:
    # A file only the app container writes: the app container starts after every init container, so never.
    waits_for_app = """apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  initContainers:
  - {name: wait, image: busybox:1.36, command: [sh, -c, "while [ ! -f /shared/up ]; do sleep 1; done"]}
  containers:
  - {name: app, image: busybox:1.36, command: [sh, -c, "touch /shared/up; sleep 3600"]}
"""
    cluster = Cluster.from_yaml(waits_for_app)
    assert cluster.state.pods["default/app"].phase == "Pending"
    finding = next(f for f in cluster.doctor().findings if f.code == "InitContainersDeadlock")
    assert "the app container 'app' writes" in finding.message and "Init:0/1" in finding.message
    # An init container before it writes the file: it is through, nothing waits for ever.
    written_first = waits_for_app.replace("  initContainers:\n", "  initContainers:\n  - {name: make, image: "
                                          "busybox:1.36, command: [sh, -c, \"touch /shared/up\"]}\n")
    assert "InitContainersDeadlock" not in [f.code for f in Cluster.from_yaml(written_first).doctor().findings]
    assert Cluster.from_yaml(written_first).state.pods["default/app"].phase == "Running"
