"""The kubelet's troubleshooting classics (issue 13), with the real kubectl against `knetsim up`.

A container that refers to a ConfigMap or Secret that does not exist waits in
CreateContainerConfigError (env) or ContainerCreating (volume) with the kubelet's events, and
starts once the object exists, its values in the environment and its files under the mount.
Probes: a readiness probe on a port nothing listens on keeps the pod 0/1 with `Unhealthy`
events and a not-ready endpoint; a failing liveness probe restarts the container (`Killing`).
"""

from __future__ import annotations

import re

from .conftest import Cluster, wait_for

ENV_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: ["sleep", "3600"]
    env:
    - name: MODE
      valueFrom:
        configMapKeyRef:
          name: cfg
          key: mode
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    envFrom:
    - secretRef:
        name: creds
        optional: true
      prefix: DB_
"""

VOLUME_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    volumeMounts:
    - name: site
      mountPath: /usr/share/nginx/html
  volumes:
  - name: site
    configMap:
      name: site
"""


def row(k: Cluster, pod: str) -> list[str]:
    return k.kubectl("get", "pod", pod, "--no-headers").stdout.split()


def events(k: Cluster, pod: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of `kubectl describe pod`'s Events, in order."""
    text = k.sh(f"kubectl describe pod {pod}").stdout.split("Events:", 1)[1]
    lines = [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()[2:]]
    return [(line[0], line[1], line[-1]) for line in lines if len(line) >= 4]


def test_a_missing_configmap_key_holds_the_container_until_it_exists(k: Cluster) -> None:
    k.write("pod.yaml", ENV_POD)
    k.kubectl("apply", "-f", "pod.yaml")
    assert wait_for(lambda: row(k, "app")[1:3] == ["0/1", "CreateContainerConfigError"], 10), row(k, "app")
    pod = k.get_json("pod", "app")
    assert pod["status"]["phase"] == "Pending"
    assert pod["status"]["containerStatuses"][0]["state"] == {"waiting": {
        "reason": "CreateContainerConfigError", "message": 'configmap "cfg" not found'}}
    assert wait_for(lambda: ("Warning", "Failed", 'Error: configmap "cfg" not found') in events(k, "app"), 5)
    assert ("Normal", "Pulled", 'Container image "busybox:1.36" already present on machine') in events(k, "app")
    logs = k.kubectl("logs", "app", check=False)
    assert logs.returncode == 1
    assert 'container "app" in pod "app" is waiting to start: CreateContainerConfigError' in logs.stderr

    # The ConfigMap without the key: the next try names the key.
    k.kubectl("create", "configmap", "cfg", "--from-literal=speed=fast")
    key_error = "couldn't find key mode in ConfigMap default/cfg"
    assert wait_for(lambda: ("Warning", "Failed", f"Error: {key_error}") in events(k, "app"), 5), events(k, "app")
    assert k.get_json("pod", "app")["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == key_error

    k.sh("kubectl create configmap cfg --from-literal=mode=fast --dry-run=client -o yaml | kubectl apply -f -")
    assert wait_for(lambda: row(k, "app")[1:3] == ["1/1", "Running"], 5), row(k, "app")
    assert ("Normal", "Started", "Started container app") in events(k, "app")
    assert k.kubectl("exec", "app", "--", "sh", "-c", "echo $MODE $POD_NAME").stdout == "fast app\n"
    env = k.kubectl("exec", "app", "--", "env").stdout.splitlines()
    assert "MODE=fast" in env and not any(line.startswith("DB_") for line in env)
    # The environment is fixed when the container starts: a later change does not reach it.
    k.sh("kubectl create configmap cfg --from-literal=mode=slow --dry-run=client -o yaml | kubectl apply -f -")
    assert k.kubectl("exec", "app", "--", "printenv", "MODE").stdout == "fast\n"


def test_a_missing_secret_volume_keeps_the_pod_creating_until_it_exists(k: Cluster) -> None:
    k.write("pod.yaml", VOLUME_POD.replace("configMap:\n      name: site", "secret:\n      secretName: site"))
    k.kubectl("apply", "-f", "pod.yaml")
    assert wait_for(lambda: row(k, "web")[1:3] == ["0/1", "ContainerCreating"], 10), row(k, "web")
    mount = 'MountVolume.SetUp failed for volume "site" : secret "site" not found'
    assert wait_for(lambda: ("Warning", "FailedMount", mount) in events(k, "web"), 5), events(k, "web")
    assert not [e for e in events(k, "web") if e[1] in ("Pulled", "Started")]
    k.kubectl("create", "secret", "generic", "site", "--from-literal=index.html=<h1>hello</h1>")
    assert wait_for(lambda: row(k, "web")[1:3] == ["1/1", "Running"], 5), row(k, "web")
    assert k.kubectl("exec", "web", "--", "cat", "/usr/share/nginx/html/index.html").stdout == "<h1>hello</h1>"
    assert k.kubectl("exec", "web", "--", "ls", "/usr/share/nginx/html").stdout == "index.html\n"


def test_a_missing_configmap_volume_names_the_volume_and_recovers(k: Cluster) -> None:
    k.write("pod.yaml", VOLUME_POD)
    k.kubectl("apply", "-f", "pod.yaml")
    mount = 'MountVolume.SetUp failed for volume "site" : configmap "site" not found'
    assert wait_for(lambda: ("Warning", "FailedMount", mount) in events(k, "web"), 5), events(k, "web")
    assert row(k, "web")[1:3] == ["0/1", "ContainerCreating"]
    k.kubectl("create", "configmap", "site", "--from-literal=index.html=hi")
    assert wait_for(lambda: row(k, "web")[1:3] == ["1/1", "Running"], 5), row(k, "web")
    assert k.kubectl("exec", "web", "--", "cat", "/usr/share/nginx/html/index.html").stdout == "hi"
