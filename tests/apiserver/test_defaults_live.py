"""Issue 34 against `knetsim up` with the real kubectl (v1.32): what the API server stores as kube-apiserver does.

* kubectl 1.32's ``describe deploy`` dereferences a grpc probe's ``service``: knetsim stored the probe
  without it and kubectl panicked (microservices-demo's adservice).
* A ClusterIP another Service holds is refused in the API server's words.
* Init containers run one by one before the pod's containers, with statuses: ``kubectl get pod`` shows
  ``Init:N/M`` while one runs, ``kubectl logs POD -c INIT`` shows its output once the pod runs, and a failing
  one with restartPolicy Never fails the pod (``Init:Error``).
"""

from __future__ import annotations

import json

from .conftest import Live, wait_for

ADSERVICE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: adservice}
spec:
  selector: {matchLabels: {app: adservice}}
  template:
    metadata: {labels: {app: adservice}}
    spec:
      containers:
      - name: server
        image: us-central1-docker.pkg.dev/google-samples/microservices-demo/adservice:v0.10.2
        ports: [{containerPort: 9555}]
        readinessProbe: {initialDelaySeconds: 20, periodSeconds: 15, grpc: {port: 9555}}
        livenessProbe: {initialDelaySeconds: 20, periodSeconds: 15, grpc: {port: 9555}}
        lifecycle: {preStop: {httpGet: {port: 9555}}}
"""


def test_describe_deploy_with_a_grpc_probe_works(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=ADSERVICE)
    stored = json.loads(live.kubectl("get", "deploy", "adservice", "-o", "json").stdout)
    container = stored["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["grpc"] == {"port": 9555, "service": ""}
    assert container["lifecycle"]["preStop"]["httpGet"] == {"port": 9555, "path": "/", "scheme": "HTTP"}
    described = live.kubectl("describe", "deploy", "adservice")
    assert "panic" not in described.stderr
    assert "Readiness:" in described.stdout and "grpc <pod>:9555" in described.stdout


def service(name: str, cluster_ip: str) -> str:
    return (f"apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\n"
            f"spec: {{clusterIP: {cluster_ip}, selector: {{app: {name}}}, ports: [{{port: 80}}]}}\n")


def test_a_cluster_ip_another_service_holds_is_refused(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=service("first", "10.96.0.50"))
    refused = live.kubectl("apply", "-f", "-", input=service("second", "10.96.0.50"), check=False)
    assert refused.returncode == 1
    assert ('The Service "second" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.50"}: failed to '
            "allocate IP 10.96.0.50: provided IP is already allocated") in refused.stderr
    # kube-dns's address is held from the start.
    refused = live.kubectl("apply", "-f", "-", input=service("third", "10.96.0.10"), check=False)
    assert "failed to allocate IP 10.96.0.10: provided IP is already allocated" in refused.stderr


INIT_POD = """
apiVersion: v1
kind: Pod
metadata: {name: myapp}
spec:
  initContainers:
  - {name: hello, image: "busybox:1.36", command: [sh, -c, "echo hello from init"]}
  - {name: wait-db, image: "busybox:1.36", command: [sh, -c, "echo waiting for mydb; sleep 3; echo mydb is up"]}
  containers:
  - {name: app, image: "nginx:1.27"}
"""


def pod(live: Live, name: str) -> dict:
    return json.loads(live.kubectl("get", "pod", name, "-o", "json").stdout)


def status_column(live: Live, name: str) -> str:
    return live.kubectl("get", "pod", name, "--no-headers").stdout.split()[2]


def test_init_containers_run_first_and_keep_their_status_and_logs(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=INIT_POD)
    # The second init container runs (the first is through): kubectl's STATUS counts the finished ones.
    assert wait_for(lambda: status_column(live, "myapp") == "Init:1/2", timeout=10)
    waiting = pod(live, "myapp")["status"]
    assert waiting["phase"] == "Pending"
    initialized = next(c for c in waiting["conditions"] if c["type"] == "Initialized")
    assert (initialized["status"], initialized["reason"], initialized["message"]) == (
        "False", "ContainersNotInitialized", "containers with incomplete status: [wait-db]")
    assert waiting["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    # A running init container's log can be read already.
    assert "waiting for mydb" in live.kubectl("logs", "myapp", "-c", "wait-db").stdout

    assert wait_for(lambda: status_column(live, "myapp") == "Running", timeout=15)
    running = pod(live, "myapp")["status"]
    inits = {cs["name"]: cs for cs in running["initContainerStatuses"]}
    for name in ("hello", "wait-db"):
        terminated = inits[name]["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert (inits[name]["ready"], inits[name]["started"]) == (True, False)
    assert next(c for c in running["conditions"] if c["type"] == "Initialized")["status"] == "True"
    # What issue 34 saw: `kubectl logs -c INIT` said ContainerCreating on a Running pod.
    assert live.kubectl("logs", "myapp", "-c", "hello").stdout == "hello from init\n"
    assert live.kubectl("logs", "myapp", "-c", "wait-db").stdout == "waiting for mydb\nmydb is up\n"
    described = live.kubectl("describe", "pod", "myapp").stdout
    assert "Init Containers:" in described and "Reason:       Completed" in described
    events = live.kubectl("get", "events", "--field-selector", "involvedObject.name=myapp", "-o", "json").stdout
    started = [e["involvedObject"]["fieldPath"] for e in json.loads(events)["items"] if e["reason"] == "Started"]
    assert started == ["spec.initContainers{hello}", "spec.initContainers{wait-db}", "spec.containers{app}"]


def test_a_failing_init_container_fails_a_pod_that_never_restarts(live: Live) -> None:
    live.kubectl("run", "doomed", "--image=nginx:1.27", "--restart=Never", "--overrides", json.dumps({
        "spec": {"initContainers": [{"name": "check", "image": "busybox:1.36",
                                     "command": ["sh", "-c", "echo no database; exit 3"]}]}}))
    assert wait_for(lambda: status_column(live, "doomed") == "Init:Error", timeout=10)
    status = pod(live, "doomed")["status"]
    assert status["phase"] == "Failed"
    assert status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert live.kubectl("logs", "doomed", "-c", "check").stdout == "no database\n"


EVERY_KIND = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: "postgres:16"
        env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        volumeMounts: [{name: config, mountPath: /etc/db}]
        startupProbe: {exec: {command: [pg_isready]}}
      volumes: [{name: config, configMap: {name: db}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "busybox:1.36", command: [sleep, "3600"]}]
      volumes: [{name: token, projected: {sources: [{serviceAccountToken: {path: token}}]}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: once, image: "busybox:1.36", command: [echo, hi]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: tick, image: "busybox:1.36", command: [date]}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{ports: [{port: 5432}]}]
"""


def test_kubectl_describe_reads_every_kind_as_stored(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=EVERY_KIND)
    sts = json.loads(live.kubectl("get", "sts", "db", "-o", "json").stdout)["spec"]
    assert sts["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["template"]["spec"]["volumes"][0]["configMap"]["defaultMode"] == 420
    job = json.loads(live.kubectl("get", "job", "once", "-o", "json").stdout)["spec"]
    assert (job["suspend"], job["podReplacementPolicy"]) == (False, "TerminatingOrFailed")
    for kind, name in (("statefulset", "db"), ("daemonset", "agent"), ("job", "once"), ("cronjob", "tick"),
                       ("service", "db"), ("networkpolicy", "db")):
        described = live.kubectl("describe", kind, name, check=False)
        assert described.returncode == 0 and "panic" not in described.stderr, (kind, described.stderr)
    # And every kind served, all of its objects at once (the system's included). Not ServiceCIDR and IPAddress:
    # kubectl 1.32's describers read them at networking.k8s.io/v1beta1, which knetsim does not serve.
    for plural in ("pods", "services", "endpoints", "endpointslices", "deployments", "replicasets", "statefulsets",
                   "daemonsets", "jobs", "cronjobs", "ingresses", "ingressclasses", "networkpolicies", "configmaps",
                   "secrets", "serviceaccounts", "namespaces", "nodes"):
        described = live.kubectl("describe", plural, "-A", check=False)
        assert described.returncode == 0 and "panic" not in described.stderr, (plural, described.stderr)
