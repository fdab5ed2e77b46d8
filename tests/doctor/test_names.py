"""Names that resolve to nothing: each break, restated as objects, has its finding; its repaired twin has none."""

from __future__ import annotations

from tests.doctor.scenarios import CLIENT, INIT_WAITS

from knetsim import Cluster

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


def test_a_tool_options_value_is_not_a_name_it_looks_up() -> None:
    # `nc -z -w 2 db 5432`: 2 is nc's timeout; it was read as a Service named '2' (a false ServiceNotFound).
    from knetsim.doctor.names import _LOOKUP

    for command, name in (("nc -z -w 2 db 5432", "db"), ("nc -w2 -z api 80", "api"), ("ping -c 3 -W 1 web", "web"),
                          ("nslookup -type=a mydb", "mydb"), ("nc -zv db 80", "db")):
        assert [m.group(1) for m in _LOOKUP.finditer(command)] == [name], command
