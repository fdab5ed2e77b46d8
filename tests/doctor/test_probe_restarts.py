"""Pods that are not what they seem, offline: a liveness or startup probe that fails for certain, and a command
that exits at once, make the kubelet restart the container for ever. The offline build gives those pods the
status the live kubelet writes (STATUS CrashLoopBackOff, not Ready, no ready endpoint), and the doctor names the
probe or the command, why, and a fix that works when applied (broken state and repaired state, as
tests/doctor/test_debug_running_pods.py does for the "Debug Running Pods" page)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.doctor.test_fixes_apply import apply_with_kubectl, needs_kubectl

from knetsim import Cluster
from knetsim.cli.main import cli


def deployment(container: str, *, name: str = "web", command: str = "") -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: {name}
{command}{container}---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80}}]}}
"""


NGINX = "        image: nginx:1.27\n        ports: [{containerPort: 80}]\n"
# nginx's default site has no /healthz: 404, a failure for the kubelet's HTTP prober (200-399 passes).
LIVENESS_404 = deployment(NGINX + "        livenessProbe:\n          httpGet: {path: /healthz, port: 80}\n")
LIVENESS_FIXED = deployment(NGINX + "        livenessProbe:\n          httpGet: {path: /, port: 80}\n")
# HTTPS against nginx's plain HTTP: Go's client gets an HTTP answer to its TLS handshake.
LIVENESS_HTTPS = deployment(NGINX + "        livenessProbe:\n          httpGet: {path: /, port: 80, scheme: HTTPS}\n")
# A startup probe on a port nginx does not listen on: the container is killed before it ever starts.
STARTUP_PORT = deployment(NGINX + "        startupProbe:\n          tcpSocket: {port: 8080}\n          "
                          "failureThreshold: 30\n", name="api")
STARTUP_FIXED = deployment(NGINX + "        startupProbe:\n          tcpSocket: {port: 80}\n          "
                           "failureThreshold: 30\n", name="api")
# An exec liveness probe busybox runs for certain: `false` exits 1.
BUSYBOX = '        image: busybox:1.36\n        command: ["sleep", "3600"]\n'
EXEC_FALSE = deployment(BUSYBOX + "        livenessProbe:\n          exec: {command: [\"false\"]}\n", name="tool")
EXEC_TRUE = deployment(BUSYBOX + "        livenessProbe:\n          exec: {command: [\"true\"]}\n", name="tool")
# A bare Pod with a liveness probe on the wrong port: its probes cannot be patched in place.
BARE = """apiVersion: v1
kind: Pod
metadata: {name: solo, labels: {app: solo}}
spec:
  containers:
  - name: web
    image: nginx:1.27
    livenessProbe:
      httpGet: {path: /, port: PORT}
"""
# An app knetsim does not know: where it listens is its declared port, what it answers on /healthz is unknown.
UNKNOWN_APP = deployment("        image: registry.example.com/shop/api:2.1\n        ports: [{containerPort: 8080}]\n"
                         "        livenessProbe:\n          httpGet: {path: /healthz, port: 8080}\n", name="shop"
                         ).replace("ports: [{port: 80}]", "ports: [{port: 80, targetPort: 8080}]")


def pod(text: str, *, name: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: app
    image: busybox:1.36
{text}"""


CRASH = pod('    command: ["sh", "-c", "echo starting; exit 1"]\n', name="crash")
BAD_FLAG = pod('    command: ["sleep", "forever"]\n', name="sleepy")
ECHO = pod('    command: ["echo", "hello"]\n', name="hello")
# An env value from a ConfigMap key that is not there (a typo of DB_HOST), no `optional`: the container is never
# created (CreateContainerConfigError), as the live kubelet reports it.
CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {LOG_LEVEL: info, DB_HOST: db}
---
""" + deployment(NGINX + "        env:\n        - name: DB\n          valueFrom: {configMapKeyRef: {name: app-config, "
                 "key: DB_HOTS}}\n", name="app").replace("replicas: 2", "replicas: 1")
CONFIG_FIXED = CONFIG.replace("key: DB_HOTS", "key: DB_HOST")
# A ConfigMap that is not among the objects read may be made elsewhere (a kustomize overlay, `kubectl create`).
CONFIG_UNREAD = CONFIG.replace("name: app-config, key", "name: app-settings, key")


def statuses(text: str) -> dict[str, str]:
    """`knetsim get pods`: NAME → (READY, STATUS, RESTARTS), as kubectl prints them."""
    result = CliRunner().invoke(cli, ["get", "pods", "-f", "-"], input=text)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()[1:] if line.strip()]
    return {r[0]: " ".join(r[1:4]) for r in rows}


def findings(text: str, code: str) -> list:
    return [f for f in Cluster.from_yaml(text).doctor().findings if f.code == code]


def errors(text: str) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in Cluster.from_yaml(text).doctor().findings if f.severity == "error"]


# --- the pods' status --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [LIVENESS_404, LIVENESS_HTTPS, STARTUP_PORT, EXEC_FALSE, CRASH, BAD_FLAG, ECHO])
def test_a_container_restarted_for_ever_reads_crashloopbackoff_and_is_no_endpoint(text: str) -> None:
    rows = statuses(text)
    assert rows and all(row == "0/1 CrashLoopBackOff 1" for row in rows.values()), rows
    cluster = Cluster.from_yaml(text)
    for p in cluster.state.pods.values():
        if p.namespace == "default":
            assert not p.ready and p.phase == "Running"
    for svc in [s for s in cluster.state.services.values() if s.namespace == "default" and s.selector]:
        endpoints = [e for es in cluster.state.slices_for(svc) for e in es.endpoints]
        assert endpoints and not any(e.ready for e in endpoints), endpoints


def test_a_connection_straight_to_a_crash_looping_pod_is_refused() -> None:
    """Past the Service (whose endpoints are not ready), to the pod's own address: between restarts no process holds
    the port, so the kernel refuses; the hop names the container and why it is down."""
    for text, port in ((LIVENESS_404, 80), (LIVENESS_FIXED, 80)):
        cluster = Cluster.from_yaml(text + "---\n" + pod('    command: ["sleep", "3600"]\n', name="client"))
        pod_ = next(p for p in cluster.state.pods.values() if p.namespace == "default" and p.name != "client")
        t = cluster.trace("default/client", f"http://{pod_.pod_ip}:{port}/")
        hop = next(h for h in t.hops if h.layer == "listener")
        if text is LIVENESS_FIXED:
            assert t.outcome == "connected" and hop.verdict == "ok"
        else:
            assert t.outcome == "refused", t.outcome
            assert hop.detail == (f"container 'web' of {pod_.key}, which would listen on 80/TCP, is not running "
                                  "(CrashLoopBackOff): connection refused")


@pytest.mark.parametrize("text", [LIVENESS_FIXED, STARTUP_FIXED, EXEC_TRUE, UNKNOWN_APP,
                                  CRASH.replace("exit 1", "sleep 3600"), BAD_FLAG.replace("forever", "infinity")])
def test_a_probe_that_passes_or_cannot_be_judged_leaves_the_pod_running(text: str) -> None:
    rows = statuses(text)
    assert rows and all(row == "1/1 Running 0" for row in rows.values()), rows


def test_the_last_run_is_recorded_as_the_kubelet_records_it() -> None:
    def last(text: str) -> dict:
        p = next(p for p in Cluster.from_yaml(text).state.pods.values() if p.namespace == "default")
        return p.raw["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last(CRASH) == {"exitCode": 1, "reason": "Error"}
    assert last(ECHO) == {"exitCode": 0, "reason": "Completed"}
    # nginx stops cleanly on the runtime's stop signal; busybox's sleep is killed.
    assert last(LIVENESS_404) == {"exitCode": 0, "reason": "Completed"}
    assert last(EXEC_FALSE) == {"exitCode": 137, "reason": "Error"}


def test_a_task_that_runs_once_is_not_restarted() -> None:
    never = CRASH.replace("spec:\n", "spec:\n  restartPolicy: Never\n", 1)
    done = ECHO.replace("spec:\n", "spec:\n  restartPolicy: OnFailure\n", 1)
    assert "CrashLoopBackOff" not in statuses(never).get("crash", "")
    assert "CrashLoopBackOff" not in statuses(done).get("hello", "")
    failing = CRASH.replace("spec:\n", "spec:\n  restartPolicy: OnFailure\n", 1)
    assert statuses(failing)["crash"] == "0/1 CrashLoopBackOff 1"


# --- the doctor ---------------------------------------------------------------------------------------------------


def test_a_liveness_probe_on_a_404_path_is_named_with_a_patch_that_works(tmp_path: Path) -> None:
    found = findings(LIVENESS_404, "LivenessProbeFails")
    assert len(found) == 1 and found[0].subject == "Deployment default/web" and found[0].layer == "kubelet"
    assert "HTTP probe failed with statuscode: 404 (GET /healthz on port 80" in found[0].message
    assert "STATUS CrashLoopBackOff" in found[0].message
    assert found[0].patch is not None and '"path":"/spec/template/spec/containers/0/livenessProbe/httpGet/path"' \
        in found[0].fix and '"value":"/"' in found[0].fix
    # The Service's not-ready finding points at the pods' own finding, not at a probe or an image.
    not_ready = findings(LIVENESS_404, "PodsNotReady")
    assert not_ready and "CrashLoopBackOff" in not_ready[0].fix and not_ready[0].patch is None
    assert errors(LIVENESS_FIXED) == []


@needs_kubectl
def test_the_printed_patch_applied_by_kubectl_clears_every_error(tmp_path: Path) -> None:
    for broken in (LIVENESS_404, STARTUP_PORT, LIVENESS_HTTPS):
        fix = next(f for f in Cluster.from_yaml(broken).doctor().findings
                   if f.code in ("LivenessProbeFails", "StartupProbeFails")).fix
        repaired = apply_with_kubectl(broken, fix, tmp_path)
        assert errors(repaired) == [], fix


def test_a_startup_probe_on_a_port_nothing_listens_on_is_named() -> None:
    found = findings(STARTUP_PORT, "StartupProbeFails")
    assert len(found) == 1 and found[0].subject == "Deployment default/api"
    assert "startup probe tcpSocket of container 'api' targets port 8080, where nothing listens" in found[0].message
    assert "after 30 failures in a row" in found[0].message
    assert "the liveness and readiness probes do not run" in found[0].message
    assert '"path":"/spec/template/spec/containers/0/startupProbe/tcpSocket/port","value":80' in found[0].fix
    assert errors(STARTUP_FIXED) == []


def test_an_exec_liveness_probe_that_fails_for_certain_is_named_without_a_guessed_patch() -> None:
    found = findings(EXEC_FALSE, "LivenessProbeFails")
    assert found and "liveness probe of container 'tool' failed: exit status 1" in found[0].message
    assert "exit code 137" in found[0].message and found[0].patch is None
    assert "kubectl describe deployment/tool -n default" in found[0].fix
    assert errors(EXEC_TRUE) == []


def test_a_bare_pod_is_told_to_be_recreated_with_the_verified_value() -> None:
    found = findings(BARE.replace("PORT", "8080"), "LivenessProbeFails")
    assert found and found[0].subject == "Pod default/solo" and found[0].patch is None
    assert found[0].fix.startswith("re-create pod solo with livenessProbe.httpGet.port: 80")
    assert errors(BARE.replace("PORT", "80")) == []


def test_a_probe_knetsim_cannot_judge_is_a_note_not_a_silent_pass() -> None:
    found = findings(UNKNOWN_APP, "ProbeNotJudged")
    assert found and found[0].severity == "info"
    assert "asks GET /healthz on port 8080 of an app knetsim does not know" in found[0].message
    assert "taken as passing" in found[0].message
    assert errors(UNKNOWN_APP) == []


def test_a_crash_looping_command_is_named_with_its_last_words() -> None:
    crash = findings(CRASH, "ContainerExits")
    assert crash and "exits with code 1 (Error), its last words: 'starting'" in crash[0].message
    sleepy = findings(BAD_FLAG, "ContainerExits")
    assert sleepy and "its last words: \"sleep: invalid number 'forever'\"" in sleepy[0].message
    assert sleepy[0].fix.startswith("give sleep a duration")
    assert errors(BAD_FLAG.replace("forever", "3600")) == []


# --- a container its configuration keeps from being created ------------------------------------------------------


def test_a_missing_configmap_key_keeps_the_container_from_being_created() -> None:
    assert list(statuses(CONFIG).values()) == ["0/1 CreateContainerConfigError 0"]
    pod = next(p for p in Cluster.from_yaml(CONFIG).state.pods.values() if p.namespace == "default")
    assert pod.phase == "Pending" and not pod.ready
    optional = CONFIG.replace("key: DB_HOTS}", "key: DB_HOTS, optional: true}")
    assert list(statuses(optional).values()) == ["1/1 Running 0"]
    assert list(statuses(CONFIG_FIXED).values()) == ["1/1 Running 0"]
    # Not judged, and said so.
    unread = CONFIG_UNREAD
    assert list(statuses(unread).values()) == ["1/1 Running 0"]
    note = findings(unread, "ConfigMapNotRead")
    assert note and note[0].severity == "info" and "ConfigMap app-settings, which is not among the objects read" \
        in note[0].message
    assert errors(unread) == []


def test_the_offline_words_are_the_live_kubelets() -> None:
    from knetsim.kubelet.podconfig import waiting_states

    for text in (CONFIG, CONFIG.replace("LOG_LEVEL: info", "LOG_LEVEL: info}\n---\napiVersion: v1\nkind: ConfigMap\n"
                                        "metadata: {name: other}\ndata: {X: y")):
        cluster = Cluster.from_yaml(text)
        pod = next(p for p in cluster.state.pods.values() if p.namespace == "default")
        stored = {("ConfigMap", o.namespace, o.name): o.raw for o in cluster.state.objects_of("ConfigMap")}
        live = waiting_states(pod.raw, lambda kind, ns, name, stored=stored: stored.get((kind, ns, name)))
        offline = pod.raw["status"]["containerStatuses"][0]["state"]["waiting"]
        assert live == {"app": offline}, (live, offline)


def test_a_misspelt_key_is_named_with_a_patch_that_works(tmp_path: Path) -> None:
    found = findings(CONFIG, "ContainerConfigError")
    assert len(found) == 1 and found[0].layer == "kubelet"
    assert "couldn't find key DB_HOTS in ConfigMap default/app-config" in found[0].message
    assert '"path":"/spec/template/spec/containers/0/env/0/valueFrom/configMapKeyRef/key","value":"DB_HOST"' \
        in found[0].fix
    assert "CreateContainerConfigError" in findings(CONFIG, "PodsNotReady")[0].fix
    assert errors(CONFIG_FIXED) == []


@needs_kubectl
def test_the_printed_key_patch_applied_by_kubectl_clears_every_error(tmp_path: Path) -> None:
    fix = findings(CONFIG, "ContainerConfigError")[0].fix
    assert errors(apply_with_kubectl(CONFIG, fix, tmp_path)) == []


# The same with a Secret: a secretKeyRef to a key the Secret lacks (the kubelet's words: "couldn't find key passwd
# in Secret default/db"), and an envFrom secretRef to a Secret that is not among the objects read.
SECRET = """apiVersion: v1
kind: Secret
metadata: {name: db}
type: Opaque
stringData: {password: s3cret}
---
""" + deployment(NGINX + "        env:\n        - name: DB_PASSWORD\n          valueFrom: {secretKeyRef: {name: db, "
                 "key: passwd}}\n", name="app").replace("replicas: 2", "replicas: 1")


def test_a_missing_secret_key_keeps_the_container_from_being_created_and_its_patch_works(tmp_path: Path) -> None:
    assert list(statuses(SECRET).values()) == ["0/1 CreateContainerConfigError 0"]
    found = findings(SECRET, "ContainerConfigError")
    assert len(found) == 1 and found[0].layer == "kubelet" and found[0].subject.startswith("Pod default/app-")
    assert "couldn't find key passwd in Secret default/db" in found[0].message
    assert '"path":"/spec/template/spec/containers/0/env/0/valueFrom/secretKeyRef/key","value":"password"' \
        in found[0].fix
    assert errors(SECRET.replace("key: passwd", "key: password")) == []
    assert list(statuses(SECRET.replace("key: passwd}", "key: passwd, optional: true}")).values()) == \
        ["1/1 Running 0"]
    if shutil.which("kubectl"):
        assert errors(apply_with_kubectl(SECRET, found[0].fix, tmp_path)) == []


def test_a_secret_not_read_is_a_note_and_the_offline_words_are_the_live_kubelets() -> None:
    from knetsim.kubelet.podconfig import waiting_states

    unread = SECRET.replace("valueFrom: {secretKeyRef: {name: db, key: passwd}}",
                            "valueFrom: {secretKeyRef: {name: db, key: password}}\n        envFrom: "
                            "[{secretRef: {name: api-extra}}]")
    assert list(statuses(unread).values()) == ["1/1 Running 0"]
    note = findings(unread, "SecretNotRead")
    assert note and note[0].severity == "info" and "Secret api-extra, which is not among the objects read" \
        in note[0].message
    assert errors(unread) == []
    cluster = Cluster.from_yaml(SECRET)
    pod = next(p for p in cluster.state.pods.values() if p.namespace == "default")
    stored = {("Secret", o.namespace, o.name): o.raw for o in cluster.state.objects_of("Secret")}
    live = waiting_states(pod.raw, lambda kind, ns, name: stored.get((kind, ns, name)))
    assert live == {"app": pod.raw["status"]["containerStatuses"][0]["state"]["waiting"]}


def test_the_overview_shows_the_status_kubectl_would() -> None:
    result = CliRunner().invoke(cli, ["overview", "-f", "-"], input=CRASH + "---\n" + CONFIG)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[3] for line in result.output.splitlines() if line.startswith("default/")}
    assert rows["default/crash"] == "CrashLoopBackOff"
    assert next(v for k, v in rows.items() if k.startswith("default/app-")) == "CreateContainerConfigError"


def test_a_port_an_unknown_image_does_not_declare_is_not_a_certain_failure() -> None:
    # containerPort is informational: a process need not declare where it listens, so knetsim cannot tell.
    undeclared = deployment("        image: registry.example.com/shop/api:2.1\n        livenessProbe:\n"
                            "          tcpSocket: {port: 8080}\n", name="shop"
                            ).replace("ports: [{port: 80}]", "ports: [{port: 80, targetPort: 8080}]")
    assert set(statuses(undeclared).values()) == {"1/1 Running 0"}
    note = findings(undeclared, "ProbeNotJudged")
    assert note and "targets port 8080, which its image 'registry.example.com/shop/api:2.1' does not declare" \
        in note[0].message
    assert not findings(undeclared, "LivenessProbeFails")
    # The same port on nginx, whose listeners knetsim knows, fails for certain.
    known = undeclared.replace("registry.example.com/shop/api:2.1", "nginx:1.27")
    assert set(statuses(known).values()) == {"0/1 CrashLoopBackOff 1"}


def test_a_named_port_the_container_lacks_errors_and_never_kills() -> None:
    # The prober cannot resolve the port: "Liveness probe errored", its result thrown away (worker.go doProbe).
    named = BARE.replace("PORT", "health")
    assert statuses(named)["solo"] == "1/1 Running 0"
    assert not findings(named, "LivenessProbeFails")


INIT_FAILS = """apiVersion: v1
kind: Pod
metadata: {name: initfail}
spec:
  initContainers:
  - {name: setup, image: busybox:1.36, command: ["sh", "-c", "echo migrating; exit 2"]}
  containers:
  - {name: app, image: nginx:1.27}
"""


def test_an_init_container_that_fails_at_once_holds_the_pod_in_init_crashloopbackoff() -> None:
    assert statuses(INIT_FAILS) == {"initfail": "0/1 Init:CrashLoopBackOff 1"}
    pod = Cluster.from_yaml(INIT_FAILS).state.pods["default/initfail"]
    assert pod.phase == "Pending" and not pod.ready
    assert pod.raw["status"]["initContainerStatuses"][0]["lastState"] == {"terminated": {"exitCode": 2,
                                                                                         "reason": "Error"}}
    found = findings(INIT_FAILS, "ContainerExits")
    assert found and "init container 'setup' runs `sh -c 'echo migrating; exit 2'`, which exits with code 2 " \
        "(Error), its last words: 'migrating'" in found[0].message
    assert "kubectl logs pod/initfail -n default -c setup --previous" in found[0].fix
    fixed = INIT_FAILS.replace("exit 2", "exit 0")
    assert statuses(fixed) == {"initfail": "1/1 Running 0"} and errors(fixed) == []


def test_https_against_plain_http_is_fixed_by_the_scheme() -> None:
    found = findings(LIVENESS_HTTPS, "LivenessProbeFails")
    assert found and "http: server gave HTTP response to HTTPS client" in found[0].message
    assert '"path":"/spec/template/spec/containers/0/livenessProbe/httpGet/scheme","value":"HTTP"' in found[0].fix


def test_a_missing_secret_the_kubelet_reported_is_an_error_and_no_note() -> None:
    # Read from a live cluster: the kubelet's status says the Secret is not there; "not among the objects read"
    # would contradict it.
    body = next(d for d in yaml.safe_load_all(SECRET) if d and d["kind"] == "Deployment")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app", "labels": {"app": "app"}},
           "spec": body["spec"]["template"]["spec"],
           "status": {"phase": "Pending", "containerStatuses": [{"name": "app", "ready": False, "state": {"waiting": {
               "reason": "CreateContainerConfigError", "message": 'secret "db" not found'}}}]}}
    codes = [f.code for f in Cluster.from_yaml(yaml.safe_dump(pod)).doctor().findings]
    assert "ContainerConfigError" in codes and "SecretNotRead" not in codes
