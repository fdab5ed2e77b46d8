"""The storage manifests tests/cluster/test_storage.py (offline) and test_storage_live.py (kubectl) both apply,
in one place so that the two say the same thing of the same objects."""

CLAIM = """apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}}}
spec:
  {cls}accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
"""
POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  {extra}containers: [{{name: app, image: nginx:1.27, volumeMounts: [{{name: data, mountPath: /data}}]}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {claim}}}}}]
"""
# Three replicas sharing one claim: the first scheduled pins its volume, the rest follow it.
SHARED_CLAIM_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27, volumeMounts: [{name: data, mountPath: /data}]}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"""
STATEFULSET = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27, volumeMounts: [{name: www, mountPath: /usr/share/nginx/html}]}]
  volumeClaimTemplates:
  - metadata: {name: www, labels: {tier: storage}}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""
