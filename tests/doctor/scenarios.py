"""The doctor tests' scenarios that more than one module reads (test_catalogue.py checks each finding the
others trigger): a helper module, so that no test module imports another.
"""

from __future__ import annotations

NAME_LABEL = """
apiVersion: v1
kind: Namespace
metadata: {name: backend}
---
apiVersion: v1
kind: Namespace
metadata: {name: frontend}
---
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: backend, labels: {app: api}}
spec:
  containers: [{name: api, image: nginx:1.27, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: frontend, labels: {app: web}}
spec:
  containers: [{name: web, image: nginx:1.27}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api-from-frontend, namespace: backend}
spec:
  podSelector: {matchLabels: {app: api}}
  policyTypes: [Ingress]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {name: frontend}}
    ports: [{port: 80}]
"""


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


# NGINX Gateway Fabric's cafe example, cut down: its GatewayClass names NGF's controller.
NGF = """
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: nginx}
spec: {controllerName: gateway.nginx.org/nginx-gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway}
spec:
  gatewayClassName: nginx
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: coffee}
spec:
  parentRefs: [{name: gateway}]
  hostnames: [cafe.example.com]
  rules: [{backendRefs: [{name: coffee, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: coffee}
spec:
  selector: {app: coffee}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: coffee, labels: {app: coffee}}
spec: {containers: [{name: c, image: nginx:1.27, ports: [{containerPort: 80}]}]}
"""


# The same objects under a class whose controller no simulated implementation has.
UNKNOWN = NGF.replace("gateway.nginx.org/nginx-gateway-controller", "example.com/in-house-gateway-controller")


WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: web
        image: {image}
        ports: [{{containerPort: 80}}]
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80}}]
"""


def web(replicas: int, image: str = "nginx:1.27") -> str:
    return WEB.format(replicas=replicas, image=image)
