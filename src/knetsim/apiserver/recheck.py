"""Start-up recheck: every stored object must pass today's admission before the server serves it.

A store written by an older knetsim (or edited by hand) may hold an object today's decoder or
validators refuse: a ``null`` where an int32 goes, a field the types do not have, a name no
URL can carry. Served as it is, such an object breaks the controllers or a ``kubectl get`` of its
kind, and after a restart the cluster would never come up. So each one is *quarantined*: moved
to the store's quarantine table (nothing is deleted), logged, and announced by a Warning event
``Quarantined`` in its namespace, which ``kubectl get events`` shows. Fields the types do not know
are dropped from the stored copy (the API server's pruning), with a log line.

The check runs when the store was last written by another knetsim, one whose admission differs
(its release, or a digest of the types, validators and data admission runs on), so a normal restart
pays nothing for it. Objects of the wrong shape (``shape.py``) are quarantined too, even where admission
lets them through (a kind admitted untyped): no reader could read them.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..model import admission
from ..model.admission import AdmissionError, FieldValidation
from ..model.jsonvalue import json_copy
from .events import EventNames, make_event
from .registry import Registry, commit_batch
from .resources import BY_KIND
from .shape import shape_error
from .store import Key, Write

log = logging.getLogger("knetsim.apiserver")
ADMISSION_MARK = "admission"  # store meta key: the knetsim version whose admission the objects passed


def admission_version() -> str:
    """Which admission the stored objects passed: the release, the custom kinds' definitions (a store
    from before they were typed is checked again), and a digest of what decides (the types, the
    validators, the kinds and their data), so that a build whose admission changed without a new
    release number (a development checkout) rechecks too."""
    from ..model.apis.catalog import DEFINITIONS
    from ..model.schema import KUBERNETES_VERSION

    bundles = sorted({f"{d.group} {d.bundle.version}" for d in DEFINITIONS})
    return (f"knetsim {__version__}, Kubernetes {KUBERNETES_VERSION}, {', '.join(bundles)}, "
            f"admission {_admission_digest()}")


@cache
def _admission_digest() -> str:
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    files = [*sorted((root / "model").rglob("*.py")), root / "apiserver" / "registry.py",
             root / "apiserver" / "shape.py", *sorted(p for p in (root / "data").rglob("*") if p.is_file())]
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with contextlib.suppress(OSError):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _problem(registry: Registry, key: Key, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """(why the object cannot be served, None), or (None, the object without the fields today's types do not
    have when it had some, else None). An object of the wrong shape is refused even where admission lets it
    through (a kind admitted untyped): no reader could read it; admission's words say why when it has any."""
    r = BY_KIND.get(key[0]) or registry.custom.resource_of(key[0])  # a client's CRD's kind
    if r is None:
        return f"kind {key[0]} is not served by this version", None
    shape = shape_error(key[0], body)
    if shape is not None:
        try:
            admission.admit_as(body, registry.kind_of(r), namespace=key[1] or "default",
                               field_validation=FieldValidation.IGNORE, stored=True)
        except AdmissionError as exc:
            return ("; ".join(str(e) for e in exc.errors) if exc.errors else exc.message), None
        except Exception:  # admission assumes objects of its kind's shape; this one is not
            pass
        return shape, None
    try:
        # Stored, not created: a pod `kubectl debug` gave ephemeral containers must survive a restart.
        obj, decoded = admission.admit_as(body, registry.kind_of(r), namespace=key[1] or "default",
                                          field_validation=FieldValidation.IGNORE, stored=True)
    except AdmissionError as exc:
        return ("; ".join(str(e) for e in exc.errors) if exc.errors else exc.message), None
    # Stored objects were defaulted when written, so the defaulted copy differs only by what was pruned.
    pruned = json_copy(obj) if decoded.unknown_fields else None
    meta, want = obj.get("metadata") or {}, body.get("metadata") or {}
    if (meta.get("name"), meta.get("namespace", "")) != (want.get("name"), want.get("namespace", "")) or \
            (key[1], key[2]) != (meta.get("namespace", ""), meta.get("name")):
        return "its key does not match its metadata", None
    return None, pruned


def recheck(registry: Registry, now: str) -> list[tuple[Key, str]]:
    """Quarantine what today's admission refuses; returns what was quarantined (key, reason)."""
    store = registry.store
    quarantined: list[tuple[Key, str]] = list(store.unreadable)
    for key, reason in store.unreadable:
        store.quarantine(key, reason)
    store.unreadable.clear()
    if store.meta.get(ADMISSION_MARK) == admission_version() and not quarantined:
        return []
    rewrites: list[Write] = []
    for key in sorted(store.objects):
        stored = store.objects[key]
        reason, obj = _problem(registry, key, stored.body)
        if reason is not None:
            store.quarantine(key, reason)
            quarantined.append((key, reason))
            continue
        if obj is not None:
            log.warning("stored %s %s/%s rewritten without the fields today's types do not have", *key)
            rewrites.append(Write(key, obj, stored.managed))
    names = EventNames(now, store.meta)
    events: list[Write] = []
    for (kind, namespace, name), reason in quarantined:
        log.error("quarantined %s %s/%s: %s (kept in the store's quarantine table, not served)", kind, namespace,
                  name, reason)
        # The object's own kind (the store keys Calico's NetworkPolicy as NetworkPolicy.projectcalico.org).
        involved = {"kind": BY_KIND[kind].kind if kind in BY_KIND else kind, "namespace": namespace,
                    "name": name or "unknown",
                    "uid": f"{kind}/{namespace}/{name}", "apiVersion": BY_KIND[kind].api_version if kind in BY_KIND
                    else ""}
        events.append(make_event(names, involved, "Quarantined", f"{kind} {namespace + '/' if namespace else ''}"
                                 f"{name} was not served: {reason}"[:1024], "knetsim-apiserver", now,
                                 type_="Warning"))
    commit_batch(store, [*rewrites, *events], {ADMISSION_MARK: admission_version(), "eventseq": str(names.count)},
                 by="recheck", durable=True)
    return quarantined
