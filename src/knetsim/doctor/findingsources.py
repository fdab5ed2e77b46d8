"""Which file each finding is about: the source of the object a finding names, as ``app.yaml:12``.

A finding names its object (``Service shop/web``); a user fixing it edits a file, so the finding names that file
too, as kube-linter's reports do (``sources/locate.py`` finds the line). The object is looked up in the cluster
the doctor read, or among the objects admission refused. Objects the controllers made have no file of their own:
a pod's finding names its workload's file (the Deployment its ReplicaSet belongs to), which is where its
template is written. Objects of a live cluster and knetsim's own defaults name none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..cluster.build import ManifestError
from ..cluster.state import KEYED_BY_NAME, KEYED_BY_REF, ClusterState, collection_of
from ..model.kinds import OTHERS, WORKLOADS
from ..model.loader import CONTROLLER
from ..model.objects import Object
from ..sources.locate import describe
from .checks import Finding

# The findings about an object admission refused (checks.admission_findings): it is not in the cluster, its
# source is the error's.
ADMISSION_CODES = frozenset({"RejectedByAPIServer", "UnknownField"})
# A controller-made object's owner chain is short (Pod → ReplicaSet → Deployment, Pod → Job → CronJob).
_MAX_OWNERS = 4


def with_sources(state: ClusterState, findings: Iterable[Finding], errors: Iterable[ManifestError] = ()
                 ) -> list[Finding]:
    """``findings`` each with the ``source`` of the object it names, where that object came from a file."""
    refused = {e.subject: describe(e.source, *_kind_and_name(e.subject)) for e in errors if e.source is not None}
    known: dict[str, str | None] = {}
    out = []
    for finding in findings:
        if finding.source is not None:
            out.append(finding)
            continue
        if finding.code in ADMISSION_CODES and finding.subject in refused:
            source = refused[finding.subject]
        else:
            if finding.subject not in known:
                known[finding.subject] = _source_of(state, finding.subject)
            source = known[finding.subject]
        out.append(replace(finding, source=source) if source else finding)
    return out


def _kind_and_name(subject: str) -> tuple[str, str]:
    kind, _, key = subject.partition(" ")
    return kind, key.rpartition("/")[2]


def _source_of(state: ClusterState, subject: str) -> str | None:
    kind, _, key = subject.partition(" ")
    obj = _lookup(state, kind, key)
    for _ in range(_MAX_OWNERS):
        if obj is None or obj.source is not CONTROLLER:
            break
        owner = obj.meta.owner
        obj = _lookup(state, owner.kind, f"{obj.namespace}/{owner.name}") if owner is not None else None
    if obj is None:
        return None
    return describe(obj.source, obj.kind, obj.name)


def _lookup(state: ClusterState, kind: str, key: str) -> Object | None:
    if not kind or not key:
        return None
    collection = collection_of(kind)
    if kind in KEYED_BY_NAME or kind in KEYED_BY_REF:
        found = getattr(state, collection).get(key)
        return found if isinstance(found, Object) else None
    if collection in (WORKLOADS, OTHERS):
        return getattr(state, collection).get((kind, key))
    return None
