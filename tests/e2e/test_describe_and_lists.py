"""Events under `kubectl describe`, and `kubectl apply -f` of a `kind: List` file.

Given a Deployment created and scaled with kubectl, then describe shows what the scheduler, the
kubelet and the workload controllers recorded (core/v1 Events found by involvedObject field
selectors), and `kubectl get events` lists them. Given a v1 List (what `kubectl get -o yaml`
writes), then apply validates it on the client against /openapi/v2 and creates every item.
"""

from __future__ import annotations

import re

from .conftest import Cluster

LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    labels:
      app: web
  spec:
    replicas: 2
    selector:
      matchLabels:
        app: web
    template:
      metadata:
        labels:
          app: web
      spec:
        containers:
        - name: nginx
          image: nginx:1.27
          ports:
          - containerPort: 80
- apiVersion: v1
  kind: Service
  metadata:
    name: web
  spec:
    selector:
      app: web
    ports:
    - port: 80
      targetPort: 80
"""


def events_block(text: str) -> list[list[str]]:
    block = text.split("\nEvents:", 1)[1]
    rows = [re.split(r"\s{2,}", line.strip()) for line in block.splitlines()[3:] if line.strip()]
    return rows


def test_describe_pod_shows_scheduler_and_kubelet_events(k: Cluster) -> None:
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    pod = k.get_json("pods", "-l", "app=web")["items"][0]
    name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
    out = k.sh(f"kubectl describe pod {name}").stdout
    rows = events_block(out)
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("Normal", "Scheduled", "default-scheduler"), ("Normal", "Pulled", "kubelet"),
        ("Normal", "Created", "kubelet"), ("Normal", "Started", "kubelet")]
    assert rows[0][4] == f"Successfully assigned default/{name} to {node}"
    assert rows[1][4] == 'Container image "nginx:1.27" already present on machine'
    assert rows[2][4] == "Created container: nginx"
    assert rows[3][4] == "Started container nginx"
    # The kubelet's fields describe prints too: a start time, container and image IDs.
    assert re.search(r"Container ID:\s+containerd://[0-9a-f]{64}\n", out)
    assert re.search(r"Image ID:\s+docker.io/library/nginx@sha256:[0-9a-f]{64}\n", out)
    assert "Started:      Mon, 01 Jan 0001" not in out


def test_describe_deployment_and_replicaset_show_scaling(k: Cluster) -> None:
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 --port=80")
    k.sh("kubectl scale deployment web --replicas=3")
    k.sh("kubectl scale deployment web --replicas=1")
    rs = k.get_json("rs", "-l", "app=web")["items"][0]["metadata"]["name"]
    rows = events_block(k.sh("kubectl describe deployment web").stdout)
    assert [(r[1], r[3], r[4]) for r in rows] == [
        ("ScalingReplicaSet", "deployment-controller", f"Scaled up replica set {rs} from 0 to 2"),
        ("ScalingReplicaSet", "deployment-controller", f"Scaled up replica set {rs} from 2 to 3"),
        ("ScalingReplicaSet", "deployment-controller", f"Scaled down replica set {rs} from 3 to 1")]
    rows = events_block(k.sh(f"kubectl describe rs {rs}").stdout)
    reasons = [r[1] for r in rows]
    assert reasons == ["SuccessfulCreate"] * 3 + ["SuccessfulDelete"] * 2
    assert all(r[3] == "replicaset-controller" for r in rows)
    assert rows[0][4].startswith(f"Created pod: {rs}-")


def test_get_events_and_field_selectors(k: Cluster) -> None:
    k.sh("kubectl run web --image=nginx:1.27 --port=80")
    table = k.sh("kubectl get events").stdout.splitlines()
    assert table[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [line.split()[2] for line in table[1:]] == ["Scheduled", "Pulled", "Created", "Started"]
    assert all(line.split()[3] == "pod/web" for line in table[1:])
    uid = k.get_json("pod", "web")["metadata"]["uid"]
    # The query describe makes: every involvedObject field, as a field selector.
    out = k.sh("kubectl get events --field-selector involvedObject.kind=Pod,involvedObject.name=web,"
               f"involvedObject.uid={uid} -o jsonpath='{{.items[*].reason}}'").stdout
    assert out.split() == ["Scheduled", "Pulled", "Created", "Started"]
    out = k.sh("kubectl get events --field-selector reason=Started -o jsonpath='{.items[*].message}'").stdout
    assert out == "Started container web"
    # Through the Python client as well.
    from kubernetes import client as kclient

    api = k.client()
    evs = kclient.CoreV1Api(api).list_namespaced_event("default", field_selector="involvedObject.name=web")
    assert [e.source.component for e in evs.items if e.reason != "Scheduled"] == ["kubelet"] * 3
    api.close()


def test_apply_a_kind_list_file(k: Cluster) -> None:
    k.write("list.yaml", LIST)
    assert k.sh("kubectl apply -f list.yaml").stdout == "deployment.apps/web created\nservice/web created\n"
    assert k.sh("kubectl apply -f list.yaml").stdout == "deployment.apps/web unchanged\nservice/web unchanged\n"
    assert k.sh("kubectl apply --server-side -f list.yaml").stdout == \
        "deployment.apps/web serverside-applied\nservice/web serverside-applied\n"
    assert k.sh("kubectl get deploy web --no-headers").stdout.split()[1] == "2/2"
    # What `kubectl get -o yaml` writes is a List too; applying it records the fuller
    # last-applied configuration (hence "configured", as on a real cluster).
    k.sh("kubectl get deploy,svc -l app=web -o yaml > again.yaml")
    assert "kind: List" in (k.workdir / "again.yaml").read_text()
    assert k.sh("kubectl apply -f again.yaml").stdout == "deployment.apps/web configured\n"
    assert k.sh("kubectl delete -f list.yaml").stdout == \
        'deployment.apps "web" deleted\nservice "web" deleted\n'


def test_a_list_with_typos_is_rejected_by_client_side_validation(k: Cluster) -> None:
    k.write("bad.yaml", LIST.replace("      targetPort: 80", "      targetport: 80")
            .replace("    selector:\n      app: web", "    selectr:\n      app: web"))
    out = k.sh("kubectl apply -f bad.yaml", check=False)
    assert out.returncode == 1
    assert 'ValidationError(Service.spec.ports[0]): unknown field "targetport" in io.k8s.api.core.v1.ServicePort' \
        in out.stderr
    assert 'ValidationError(Service.spec): unknown field "selectr" in io.k8s.api.core.v1.ServiceSpec' in out.stderr
    # Nothing was created: validation runs before any write.
    assert k.sh("kubectl get deploy,svc -l app=web", check=False).stderr == \
        "No resources found in default namespace.\n"
    assert k.sh("kubectl apply --validate=false -f bad.yaml").returncode == 0
