"""The seeds' manifests, copied as the notes write them (003_*.txt, "例").

The lines are the notes' own, comments included, so a test that applies one of these applies
what a reader of the notes would paste.
"""

NAMED_TARGET_PORT = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
    - name: http
      port: 80
      targetPort: http-web
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
    - name: nginx
      image: nginx:1.27
      ports:
        - containerPort: 80
          name: http-web
"""

HEADLESS = """\
apiVersion: v1
kind: Service
metadata:
  name: web-headless
spec:
  clusterIP: None
  selector:
    app: web
  ports:
    - port: 80
"""

SHOP_INGRESS = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
spec:
  ingressClassName: nginx
  rules:
    - host: shop.example.com
      http:
        paths:
          - path: /api
            pathType: Prefix
            backend:
              service:
                name: api
                port:
                  number: 8080
          - path: /
            pathType: Prefix
            backend:
              service:
                name: web
                port:
                  number: 80
"""

CREATE_INGRESS = """\
kubectl create ingress shop --class=nginx \\
  --rule="shop.example.com/api*=api:8080" \\
  --rule="shop.example.com/*=web:80"
"""

DEFAULT_DENY_AND_DB = """\
# namespace のすべての Pod を ingress isolated に
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny-ingress
spec:
  podSelector: {}
  policyTypes:
    - Ingress
---
# role=db の Pod は role=backend の Pod からの TCP 5432 だけを許可
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: db-allow-backend
spec:
  podSelector:
    matchLabels:
      role: db
  policyTypes:
    - Ingress
  ingress:
    - from:
        - podSelector:
            matchLabels:
              role: backend
      ports:
        - protocol: TCP
          port: 5432
"""

ALLOW_DNS_EGRESS = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-dns-egress
spec:
  podSelector: {}
  policyTypes:
    - Egress
  egress:
    - to:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: kube-system
      ports:
        - protocol: UDP
          port: 53
        - protocol: TCP
          port: 53
"""

# Not in the notes as YAML, but what "default deny の egress をかけると" means: the
# upstream docs' default-deny-egress.
DEFAULT_DENY_EGRESS = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny-egress
spec:
  podSelector: {}
  policyTypes:
    - Egress
"""

# The notes' AND / OR example, wrapped into whole policies.
AND_OR = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: and
spec:
  podSelector:
    matchLabels:
      app: web
  ingress:
  - from:
      - namespaceSelector:
          matchLabels:
            user: alice
        podSelector:
          matchLabels:
            role: client
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: or
spec:
  podSelector:
    matchLabels:
      app: web
  ingress:
  - from:
      - namespaceSelector:
          matchLabels:
            user: alice
      - podSelector:
          matchLabels:
            role: client
"""
