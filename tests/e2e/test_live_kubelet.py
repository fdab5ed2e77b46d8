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
    # No sandbox before the volumes: no address, so no endpoint for a Service either.
    k.kubectl("expose", "pod", "web", "--port=80", "--selector=app=web")
    k.kubectl("label", "pod", "web", "app=web")
    assert k.kubectl("get", "pod", "web", "-o", "wide", "--no-headers").stdout.split()[5] == "<none>"
    status = k.get_json("pod", "web")["status"]
    assert status["phase"] == "Pending" and "podIP" not in status
    assert {c["type"]: c["status"] for c in status["conditions"]}["PodReadyToStartContainers"] == "False"
    slices = k.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
    assert [e for s in slices for e in s.get("endpoints") or []] == []
    # The volume manager retries with its backoff (0.5 s, 1 s, 2 s ...): the event is counted.
    assert wait_for(lambda: re.search(r"\(x[3-9] over \d+s\)\s+kubelet\s+MountVolume.SetUp failed",
                                      k.sh("kubectl describe pod web").stdout), 6)
    k.kubectl("create", "secret", "generic", "site", "--from-literal=index.html=<h1>hello</h1>")
    assert wait_for(lambda: row(k, "web")[1:3] == ["1/1", "Running"], 5), row(k, "web")
    ip = k.get_json("pod", "web")["status"]["podIP"]
    assert wait_for(lambda: [e["addresses"] for s in k.get_json("endpointslices", "-l",
                                                                   "kubernetes.io/service-name=web")["items"]
                             for e in s.get("endpoints") or []] == [[ip]], 5)
    assert [e[1] for e in events(k, "web")].count("Started") == 1
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


def probed_pod(k: Cluster, probes: str, image: str = "nginx:1.27", command: str = "") -> None:
    k.write("probed.yaml", f"""\
apiVersion: v1
kind: Pod
metadata:
  name: probed
  labels:
    app: probed
spec:
  containers:
  - name: main
    image: {image}
{command}    ports:
    - containerPort: 80
{probes}""")
    k.kubectl("apply", "-f", "probed.yaml")


def status_of(k: Cluster, pod: str) -> dict[str, object]:
    return k.get_json("pod", pod)["status"]["containerStatuses"][0]  # type: ignore[no-any-return]


def test_a_readiness_probe_on_a_wrong_port_keeps_the_pod_unready_with_unhealthy_events(k: Cluster) -> None:
    probed_pod(k, """\
    readinessProbe:
      httpGet:
        path: /healthz
        port: 8080
      periodSeconds: 1
""")
    k.kubectl("expose", "pod", "probed", "--port=80")
    assert wait_for(lambda: row(k, "probed")[1:3] == ["0/1", "Running"], 10), row(k, "probed")
    ip = k.get_json("pod", "probed")["status"]["podIP"]
    unhealthy = ("Warning", "Unhealthy", f'Readiness probe failed: Get "http://{ip}:8080/healthz": dial tcp '
                                         f"{ip}:8080: connect: connection refused")
    assert wait_for(lambda: unhealthy in events(k, "probed"), 5), events(k, "probed")
    # The probe keeps failing each period: one event, counted.
    assert wait_for(lambda: re.search(r"\(x[2-9] over \d+s\)\s+kubelet\s+Readiness probe failed",
                                      k.sh("kubectl describe pod probed").stdout), 6)
    slices = k.get_json("endpointslices", "-l", "kubernetes.io/service-name=probed")["items"]
    assert [(e["addresses"], e["conditions"]["ready"]) for s in slices for e in s.get("endpoints") or []] == [
        ([ip], False)]
    assert status_of(k, "probed")["ready"] is False and status_of(k, "probed")["started"] is True
    # Fixed (the probe on the port nginx listens on): ready at the next probe.
    k.kubectl("delete", "pod", "probed")
    probed_pod(k, """\
    readinessProbe:
      tcpSocket:
        port: 80
      periodSeconds: 1
""")
    assert wait_for(lambda: row(k, "probed")[1:3] == ["1/1", "Running"], 10), row(k, "probed")
    assert not [e for e in events(k, "probed") if e[1] == "Unhealthy"]


def test_a_failing_liveness_probe_restarts_the_container_then_backs_off(k: Cluster) -> None:
    probed_pod(k, """\
    livenessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
      failureThreshold: 2
""")
    killing = ("Normal", "Killing", "Container main failed liveness probe, will be restarted")
    assert wait_for(lambda: killing in events(k, "probed"), 10), events(k, "probed")
    ip = k.get_json("pod", "probed")["status"]["podIP"]
    assert ("Warning", "Unhealthy", f"Liveness probe failed: dial tcp {ip}:8080: connect: connection refused") in \
        events(k, "probed")
    assert wait_for(lambda: int(row(k, "probed")[3]) >= 1, 5), row(k, "probed")
    last = status_of(k, "probed")["lastState"]["terminated"]  # type: ignore[index]
    assert (last["exitCode"], last["reason"]) == (0, "Completed")  # nginx stops cleanly on SIGTERM
    # The second kill is followed by the kubelet's restart backoff.
    assert wait_for(lambda: row(k, "probed")[2] == "CrashLoopBackOff", 10), row(k, "probed")
    assert ("Warning", "BackOff", "Back-off restarting failed container main in pod probed_default("
            f"{k.get_json('pod', 'probed')['metadata']['uid']})") in events(k, "probed")


def test_an_exec_liveness_probe_sees_the_containers_files(k: Cluster) -> None:
    probed_pod(k, """\
    livenessProbe:
      exec:
        command: ["cat", "/tmp/healthy"]
      periodSeconds: 1
      failureThreshold: 1
""", image="busybox:1.36", command="""\
    command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm -f /tmp/healthy; sleep 600"]
""")
    assert wait_for(lambda: row(k, "probed")[1:3] == ["1/1", "Running"], 5), row(k, "probed")
    assert ("Normal", "Killing", "Container main failed liveness probe, will be restarted") not in events(k, "probed")
    unhealthy = ("Warning", "Unhealthy", "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or "
                                         "directory")
    assert wait_for(lambda: unhealthy in events(k, "probed"), 8), events(k, "probed")
    assert wait_for(lambda: int(row(k, "probed")[3]) >= 1, 5), row(k, "probed")
    last = status_of(k, "probed")["lastState"]["terminated"]  # type: ignore[index]
    assert (last["exitCode"], last["reason"]) == (137, "Error")


def test_a_startup_probe_holds_liveness_and_readiness_until_it_fails(k: Cluster) -> None:
    probed_pod(k, """\
    startupProbe:
      httpGet:
        port: 8080
      periodSeconds: 1
      failureThreshold: 3
    livenessProbe:
      httpGet:
        port: 8080
      periodSeconds: 1
""")
    assert wait_for(lambda: row(k, "probed")[1:3] == ["0/1", "Running"], 5), row(k, "probed")
    assert status_of(k, "probed")["started"] is False
    killing = ("Normal", "Killing", "Container main failed startup probe, will be restarted")
    assert wait_for(lambda: killing in events(k, "probed"), 8), events(k, "probed")
    assert not [e for e in events(k, "probed") if e[2].startswith("Liveness")]
    assert [e[2].split(":")[0] for e in events(k, "probed") if e[1] == "Unhealthy"] == ["Startup probe failed"]


def test_a_passing_startup_probe_starts_the_container(k: Cluster) -> None:
    probed_pod(k, """\
    startupProbe:
      httpGet:
        port: 80
      initialDelaySeconds: 1
      periodSeconds: 1
""")
    assert wait_for(lambda: status_of(k, "probed").get("started") is False, 5)
    assert row(k, "probed")[1] == "0/1"
    assert wait_for(lambda: row(k, "probed")[1:3] == ["1/1", "Running"], 5), row(k, "probed")
    assert status_of(k, "probed")["started"] is True


def test_an_exec_readiness_probe_follows_the_file_it_checks(k: Cluster) -> None:
    probed_pod(k, """\
    readinessProbe:
      exec:
        command: ["cat", "/tmp/ready"]
      periodSeconds: 1
""", image="busybox:1.36", command="""\
    command: ["sleep", "3600"]
""")
    unhealthy = ("Warning", "Unhealthy", "Readiness probe failed: cat: can't open '/tmp/ready': No such file or "
                                         "directory")
    assert wait_for(lambda: unhealthy in events(k, "probed"), 8), events(k, "probed")
    assert wait_for(lambda: row(k, "probed")[1:3] == ["0/1", "Running"], 5), row(k, "probed")
    # A label change has the control plane compute readiness again; the probe's verdict still holds.
    k.kubectl("label", "pod", "probed", "tier=web")
    assert not wait_for(lambda: row(k, "probed")[1] == "1/1", 1.5)
    k.kubectl("exec", "probed", "--", "touch", "/tmp/ready")
    assert wait_for(lambda: row(k, "probed")[1:3] == ["1/1", "Running"], 5), row(k, "probed")
    k.kubectl("exec", "probed", "--", "rm", "/tmp/ready")
    assert wait_for(lambda: row(k, "probed")[1] == "0/1", 6), row(k, "probed")  # 3 failures at 1 s
