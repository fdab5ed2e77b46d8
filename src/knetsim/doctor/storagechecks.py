"""Claims that wait for ever: a PersistentVolumeClaim of a StorageClass that does not exist.

The PV controller provisions a claim's volume through its class; a class name the cluster does not have (one
copied from a cloud's manifests, `gp2` or `managed-premium`, or a typo) leaves the claim Pending with the
event ProvisioningFailed (`storageclass.storage.k8s.io "x" not found`), and every pod that mounts it Pending
("pod has unbound immediate PersistentVolumeClaims"). The pod's finding says the pod waits; this one names the
claim and the class (cluster/storage.py decides the claim's fate, as the live PV controller does).

A claim's spec cannot change once it is created (ValidatePersistentVolumeClaimUpdate), so no patch is offered:
the claim is recreated with a class that exists, or the class is created.
"""

from __future__ import annotations

import difflib

from ..cluster.state import ClusterState
from ..model.loader import BUILTIN
from .checks import SYSTEM_NAMESPACES, Finding, examples


def storage_class_findings(state: ClusterState, namespaces: set[str] | None = None) -> list[Finding]:
    classes = {o.name: o for o in state.objects_of("StorageClass")}
    defaults = sorted(name for name, o in classes.items()
                      if (o.raw.get("metadata") or {}).get("annotations", {}).get(
                          "storageclass.kubernetes.io/is-default-class") == "true")
    # A cluster read with a role that may not list StorageClasses has only knetsim's built-in one: its claims' classes
    # cannot be judged then.
    classes_read = any(o.source is not BUILTIN for o in classes.values())
    out = []
    for claim in state.objects_of("PersistentVolumeClaim"):
        if (claim.raw.get("metadata") or {}).get("resourceVersion") and not classes_read:
            continue
        if claim.namespace in SYSTEM_NAMESPACES or (namespaces and claim.namespace not in namespaces):
            continue
        spec, status = claim.raw.get("spec") or {}, claim.raw.get("status") or {}
        wanted = spec.get("storageClassName")
        if not wanted or wanted in classes or spec.get("volumeName") or status.get("phase") == "Bound":
            continue
        mounted = sorted(p.name for p in state.pods.values() if p.namespace == claim.namespace and any(
            ((v or {}).get("persistentVolumeClaim") or {}).get("claimName") == claim.name
            for v in (p.raw.get("spec") or {}).get("volumes") or []))
        nearest = difflib.get_close_matches(str(wanted), list(classes), n=1)
        target = nearest[0] if nearest else (defaults[0] if defaults else "")
        message = (f'the claim names StorageClass "{wanted}", which does not exist: no volume is provisioned and it '
                   f'stays Pending (event ProvisioningFailed: storageclass.storage.k8s.io "{wanted}" not found)')
        if mounted:
            message += f"; the {len(mounted)} pod(s) that mount it stay Pending too"
        existing = ", ".join(f"{n} (default)" if n in defaults else n for n in sorted(classes)) or "none"
        evidence = (f"StorageClasses of the cluster: {existing}", *examples([f"mounted by pod {n}" for n in mounted]))
        how = (f'create StorageClass "{wanted}", or recreate the claim with ' +
               (f"spec.storageClassName: {target}" if target else "a class that exists") +
               " (a claim's spec cannot change once created: kubectl get pvc " +
               f"{claim.name} -n {claim.namespace} -o yaml > pvc.yaml, edit it, kubectl replace --force -f pvc.yaml)")
        out.append(Finding("StorageClassNotFound", "error", "storage", f"PersistentVolumeClaim {claim.key}",
                           message, how, evidence))
    return out
