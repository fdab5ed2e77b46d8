"""Storage's kinds as the API server takes them: PersistentVolumeClaim, PersistentVolume and StorageClass.

Their defaults, the validation of the fields that decide what a cluster does with them (access modes, the
requested and offered size, the class's binding mode and reclaim policy), a claim's spec fixed once it is bound,
and the DefaultStorageClass admission plugin (a new claim without a class gets the default one).

Upstream: kubernetes/kubernetes pkg/apis/core/validation/validation.go (ValidatePersistentVolumeClaim*,
ValidatePersistentVolume*), pkg/apis/storage/validation/validation.go (ValidateStorageClass*),
pkg/apis/core/v1/defaults.go, pkg/apis/storage/v1/defaults.go and
plugin/pkg/admission/storage/storageclass/setdefault/admission.go. Facts and messages only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .fielderr import FieldError, Path
from .names import is_dns1123_subdomain
from .quantity import quantity

Errors = list[FieldError]

# core.PersistentVolumeAccessMode's values, sorted as NotSupported lists them.
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
# What kubectl prints for each (GetAccessModesAsString, in its fixed order).
ACCESS_MODE_SHORT = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                     ("ReadWriteOncePod", "RWOP"))
PV_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
# The StorageObjectInUseProtection admission plugin's finalizer: a claim a running pod mounts is not deleted
# until that pod is gone (the pvc-protection controller removes it).
PVC_PROTECTION = "kubernetes.io/pvc-protection"
# The volume sources a PersistentVolume may name (one of them): the in-tree ones and CSI.
_PV_SOURCES = ("awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume",
               "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs",
               "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
               "vsphereVolume")


def requested_storage(claim: Mapping[str, Any]) -> Any:
    return (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")


def access_modes_text(modes: Iterable[Any]) -> str:
    """``RWO,RWX``: kubectl's ACCESS MODES cell."""
    given = set(map(str, modes))
    return ",".join(short for mode, short in ACCESS_MODE_SHORT if mode in given)


# --- defaults ---------------------------------------------------------------------------------


def default_claim(obj: dict[str, Any]) -> None:
    # SetDefaults_PersistentVolumeClaim (status Pending) and SetDefaults_PersistentVolumeClaimSpec.
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def default_volume(obj: dict[str, Any]) -> None:
    # SetDefaults_PersistentVolume: Retain, Filesystem, and a new volume is Pending.
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def default_storage_class(obj: dict[str, Any]) -> None:
    # SetDefaults_StorageClass (storage/v1): Delete, Immediate.
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


# --- validation -------------------------------------------------------------------------------


def _access_modes(modes: Any, path: Path, required_detail: str) -> Errors:
    if not modes:
        return [path.required(required_detail)]
    return [path.not_supported(m, list(ACCESS_MODES)) for m in modes if m not in ACCESS_MODES]


def _positive(value: Any, path: Path) -> Errors:
    amount = quantity(value)
    if amount is not None and amount <= 0:
        return [path.invalid(str(value), "must be greater than zero")]
    return []


def validate_claim(body: Mapping[str, Any]) -> Errors:
    """ValidatePersistentVolumeClaimSpec: access modes, a positive storage request, a class name."""
    spec = body.get("spec") or {}
    path = Path("spec")
    errs = _access_modes(spec.get("accessModes"), path.child("accessModes"), "at least 1 access mode is required")
    storage = requested_storage(body)
    if storage is None:
        errs.append(path.child("resources").key("storage").required())
    else:
        errs.extend(_positive(storage, path.child("resources").key("storage")))
    name = spec.get("storageClassName")
    if name:
        errs.extend(path.child("storageClassName").invalid(name, e) for e in is_dns1123_subdomain(str(name)))
    return errs


def validate_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    """ValidatePersistentVolumeClaimUpdate: the spec is fixed once created, except the volume it binds to
    (set once, by the PV controller) and, for a bound claim, the storage it requests (an expansion, never a
    shrink)."""
    old_spec, new_spec = dict(old.get("spec") or {}), dict(new.get("spec") or {})
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = new_spec.get("volumeName")
    bound = ((new.get("status") or {}).get("phase")) == "Bound"
    old_size, new_size = requested_storage(old), requested_storage(new)
    if bound:
        # Only the storage request may move; compare the rest.
        for spec in (old_spec, new_spec):
            resources = dict(spec.get("resources") or {})
            resources["requests"] = {k: v for k, v in (resources.get("requests") or {}).items() if k != "storage"}
            spec["resources"] = resources
    errs: Errors = []
    if _normal(old_spec) != _normal(new_spec):
        changed = sorted(k for k in set(old_spec) | set(new_spec)
                         if _normal(old_spec.get(k)) != _normal(new_spec.get(k)))
        errs.append(Path("spec").forbidden(
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound "
            f"claims (changed: {', '.join(changed)})"))
    if bound:
        before, after = quantity(old_size), quantity(new_size)
        if before is not None and after is not None and after < before:
            errs.append(Path("spec").child("resources", "requests", "storage").forbidden(
                "field can not be less than previous value"))
    return errs


def _normal(value: Any) -> Any:
    """Empty and missing are the same to the API's semantic equality."""
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items() if v not in (None, "", [], {})}
    return value


def validate_volume(body: Mapping[str, Any]) -> Errors:
    """ValidatePersistentVolumeSpec: access modes, a storage capacity (and nothing else), a reclaim policy, and
    exactly one volume source."""
    spec = body.get("spec") or {}
    path = Path("spec")
    errs = _access_modes(spec.get("accessModes"), path.child("accessModes"), "")
    capacity = spec.get("capacity") or {}
    if not capacity:
        errs.append(path.child("capacity").required())
    elif "storage" not in capacity or len(capacity) > 1:
        errs.append(path.child("capacity").not_supported(dict(capacity), ["storage"]))
    else:
        errs.extend(_positive(capacity["storage"], path.child("capacity").key("storage")))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in PV_RECLAIM_POLICIES:
        errs.append(path.child("persistentVolumeReclaimPolicy").not_supported(policy, list(PV_RECLAIM_POLICIES)))
    sources = [s for s in _PV_SOURCES if spec.get(s) is not None]
    if not sources:
        errs.append(path.required("must specify a volume type"))
    elif len(sources) > 1:
        errs.append(path.child(sources[1]).forbidden("may not specify more than 1 volume type"))
    return errs


def validate_storage_class(body: Mapping[str, Any]) -> Errors:
    """ValidateStorageClass: a provisioner, and a reclaim policy and binding mode of the known ones."""
    errs: Errors = []
    provisioner = body.get("provisioner")
    if not provisioner:
        errs.append(Path("provisioner").required())
    policy = body.get("reclaimPolicy")
    if policy is not None and policy not in CLASS_RECLAIM_POLICIES:
        errs.append(Path("reclaimPolicy").not_supported(policy, list(CLASS_RECLAIM_POLICIES)))
    mode = body.get("volumeBindingMode")
    if mode is None:
        errs.append(Path("volumeBindingMode").required())
    elif mode not in BINDING_MODES:
        errs.append(Path("volumeBindingMode").not_supported(mode, list(BINDING_MODES)))
    return errs


def validate_storage_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    """ValidateStorageClassUpdate: what provisions a class's volumes does not change under them."""
    errs: Errors = []
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(Path("parameters").forbidden("updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(Path("provisioner").forbidden("updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(Path("reclaimPolicy").forbidden("updates to reclaimPolicy are forbidden."))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(Path("volumeBindingMode").invalid(new.get("volumeBindingMode"), "field is immutable"))
    return errs


# --- the DefaultStorageClass admission plugin -------------------------------------------------


def default_classes(classes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The StorageClasses marked default, newest first, then by name (GetDefaultClass: several defaults pick the
    newest)."""
    marked = [c for c in classes
              if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    marked.sort(key=lambda c: str((c.get("metadata") or {}).get("name") or ""))
    marked.sort(key=lambda c: str((c.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True)
    return marked


def admit_claim(obj: dict[str, Any], classes: Iterable[Mapping[str, Any]]) -> str | None:
    """A new claim gets the pvc-protection finalizer (StorageObjectInUseProtection), and one that names no class
    (storageClassName absent, not "") the default class (DefaultStorageClass). Returns the class it set, if any."""
    meta = obj.setdefault("metadata", {})
    if isinstance(meta, dict) and PVC_PROTECTION not in (meta.get("finalizers") or []):
        meta["finalizers"] = [*(meta.get("finalizers") or []), PVC_PROTECTION]
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return None
    found = default_classes(classes)
    if not found:
        return None
    spec["storageClassName"] = str(found[0]["metadata"]["name"])
    return spec["storageClassName"]


# --- the PersistentVolumeClaimResize admission plugin -----------------------------------------


def resize_refusal(new: Mapping[str, Any], old: Mapping[str, Any],
                   classes: Iterable[Mapping[str, Any]]) -> str | None:
    """Why a claim's storage request may not grow (None: it does not grow, or may): only a bound claim of a class
    that allows expansion (kind's `standard` does not) can be resized."""
    before, after = quantity(requested_storage(old) or 0), quantity(requested_storage(new) or 0)
    if before is None or after is None or after <= before:
        return None
    if ((old.get("status") or {}).get("phase")) != "Bound":
        return "Only bound persistent volume claims can be expanded"
    name = (new.get("spec") or {}).get("storageClassName") or ""
    found = next((c for c in classes if (c.get("metadata") or {}).get("name") == name), None) if name else None
    if found is None or not found.get("allowVolumeExpansion"):
        return ("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must "
                "support resize")
    return None
