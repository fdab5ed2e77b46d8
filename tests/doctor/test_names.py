"""Names that resolve to nothing: each break, restated as objects, has its finding; its repaired twin has none."""

from __future__ import annotations

from knetsim import Cluster

# The init-container example of the Kubernetes docs ("Init Containers"): the pod waits until the Services
# myservice and mydb resolve. Without them it never starts.
NAMESPACE = "$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)"
INIT_WAITS = """
apiVersion: v1
kind: Pod
metadata: {name: myapp-pod, labels: {app.kubernetes.io/name: MyApp}}
spec:
  containers:
  - name: myapp-container
    image: busybox:1.28
    command: ['sh', '-c', 'echo The app is running! && sleep 3600']
  initContainers:
  - name: init-myservice
    image: busybox:1.28
    command: ['sh', '-c', "until nslookup myservice.NS.svc.cluster.local; do echo waiting for myservice; sleep 2; done"]
  - name: init-mydb
    image: busybox:1.28
    command: ['sh', '-c', "until nslookup mydb.NS.svc.cluster.local; do echo waiting for mydb; sleep 2; done"]
""".replace(".NS.", f".{NAMESPACE}.")
THE_SERVICES = """
---
apiVersion: v1
kind: Service
metadata: {name: myservice}
spec:
  ports: [{protocol: TCP, port: 80, targetPort: 9376}]
---
apiVersion: v1
kind: Service
metadata: {name: mydb}
spec:
  ports: [{protocol: TCP, port: 80, targetPort: 9377}]
"""


def findings(text: str, code: str) -> list:
    return [f for f in Cluster.from_yaml(text).doctor().findings if f.code == code]


# The DNS checks (doctor/dnschecks.py, from another branch) report an init container's wait themselves; where they
# run, this module's ServiceNotFound steps aside for that pod: either way the first wait is an error.
WAIT_CODES = ("ServiceNotFound", "InitContainerWaitsForName")


def test_init_containers_waiting_for_services_that_do_not_exist() -> None:
    found = [f for code in WAIT_CODES for f in findings(INIT_WAITS, code)]
    assert found and {f.subject for f in found} == {"Pod default/myapp-pod"}
    first = next(f for f in found if f.message.startswith("init container 'init-myservice'"))
    assert first.severity == "error" and "never start" in first.message
    assert not [f for code in WAIT_CODES for f in findings(INIT_WAITS + THE_SERVICES, code)]


CLIENT = """
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers:
  - name: client
    image: busybox:1.36
    command: [sh, -c, "while true; do wget -qO- $API_URL; sleep 5; done"]
    env: [{name: API_URL, value: "http://web-api:8080/"}]
---
apiVersion: v1
kind: Service
metadata: {name: web-apl}
spec:
  selector: {app: api}
  ports: [{port: 8080}]
"""


def test_a_client_of_a_service_that_does_not_exist_is_told_the_close_name() -> None:
    [found] = findings(CLIENT, "ServiceNotFound")
    assert "'web-api'" in found.message and "no Service web-api in namespace default" in found.message
    assert "did you mean Service default/web-apl?" in found.fix
    assert not findings(CLIENT.replace("name: web-apl", "name: web-api"), "ServiceNotFound")


def test_words_and_external_hosts_are_not_services() -> None:
    text = """
apiVersion: v1
kind: Pod
metadata: {name: tools}
spec:
  containers:
  - name: tools
    image: busybox:1.36
    command: [sh, -c, "echo hello world; sleep infinity"]
    env: [{name: MODE, value: production}, {name: HOME_URL, value: "https://example.com/"}]
"""
    assert not findings(text, "ServiceNotFound")


STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{name: web, containerPort: 80}]
"""
HEADLESS = """
---
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{name: web, port: 80}]
"""


LOOKS_UP_WEB_0 = """
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers:
  - name: client
    image: busybox:1.36
    command: [sh, -c, "until nslookup web-0.nginx; do sleep 2; done; wget -qO- http://web-0.nginx/"]
"""


def test_a_statefulset_without_its_governing_service() -> None:
    # Nothing looks the pods' names up yet: a latent break, a warning.
    [latent] = findings(STATEFULSET, "StatefulSetServiceMissing")
    assert latent.severity == "warning"
    [found] = findings(STATEFULSET + LOOKS_UP_WEB_0, "StatefulSetServiceMissing")
    assert found.subject == "StatefulSet default/web" and found.severity == "error"
    assert "default/client look(s) these names up" in found.message
    assert "web-0.nginx.default.svc.cluster.local" in found.message
    assert "clusterIP: None" in found.fix and "selector: {app: nginx}" in found.fix
    # The Service the fix writes repairs it.
    fix_yaml = found.fix.split("\n", 1)[1]
    assert not findings(STATEFULSET + "---\n" + fix_yaml, "StatefulSetServiceMissing")
    assert not findings(STATEFULSET + HEADLESS, "StatefulSetServiceMissing")
    not_headless = findings(STATEFULSET + HEADLESS.replace("  clusterIP: None\n", ""), "StatefulSetServiceNotHeadless")
    assert [f.severity for f in not_headless] == ["info"]
