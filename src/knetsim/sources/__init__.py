"""Where the objects come from: manifests, a snapshot, the running knetsim, or any cluster.

Every source yields the same thing, a ``LoadResult`` (documents, each with where it came from,
and what could not be read), so every command that analyses a cluster works on all four:

    Manifests(paths)          files, directories, ``-``; a ``kubectl get -A -o yaml`` snapshot is one too
    GitManifests("git:R:P")   the manifests under P at git revision R (``sources/git.py``)
    Live(kubeconfig, context) a cluster's API server through a kubeconfig: kind, minikube, a cloud
                              cluster, or the running ``knetsim up`` (its state dir's kubeconfig)
    Preloaded(read)           objects one earlier ``read`` returned (one read of a cluster, two analyses)
    Kustomization(dir)        ``-k DIR``, rendered by Kustomize (``sources/render.py``)
    HelmChart(chart, values)  a chart directory or .tgz, rendered by Helm's engine (``sources/render.py``)

``read`` of a live cluster then manifests puts the manifests over it: what the cluster would
hold after ``kubectl apply -f`` of them. This layer sits between ``model/`` (documents, kinds) and
``cluster/`` (which builds the state from documents and never asks where they came from).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from ..model.loader import NO_OBJECTS, LoadError, LoadResult, load_paths
from . import git, render
from .git import GitSourceError
from .render import ONLY_ONE_OF_F_K, HelmValues, RenderUsageError

if TYPE_CHECKING:
    from .kubeapi import ApiError, KubeAPI, KubeconfigError, KubeError, Target, connect

# The API client's names load on first use: an analysis of files never talks to a cluster.
_KUBEAPI = frozenset({"ApiError", "KubeAPI", "KubeconfigError", "KubeError", "Target", "connect"})


def __getattr__(name: str) -> Any:
    if name in _KUBEAPI:
        from . import kubeapi

        return getattr(kubeapi, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Manifests:
    paths: tuple[str, ...]
    stdin: IO[str] | None = None

    def describe(self) -> str:
        return ", ".join(self.paths)

    def read(self, progress: Progress | None = None) -> Read:
        return Read(load_paths(self.paths, stdin=self.stdin))


@dataclass(frozen=True, slots=True)
class GitManifests:
    """``git:REV:PATH``: the manifests under PATH at git revision REV (``sources/git.py``)."""

    spec: str

    def describe(self) -> str:
        return self.spec

    def read(self, progress: Progress | None = None) -> Read:
        return Read(git.load(self.spec))


@dataclass(frozen=True, slots=True)
class Kustomization:
    """``-k DIR``: the objects ``kubectl apply -k DIR`` would send, each named by the file it came from
    (``sources/render.py``: rendered by Kustomize itself)."""

    directory: str

    def describe(self) -> str:
        return f"-k {self.directory}"

    def read(self, progress: Progress | None = None) -> Read:
        return Read(_refuse_nothing(render.render_kustomization(self.directory)))


@dataclass(frozen=True, slots=True)
class HelmChart:
    """A chart directory or ``.tgz``: the objects ``helm template`` renders, each named by its template file
    (``sources/render.py``: rendered by Helm's engine)."""

    chart: str
    values: HelmValues = field(default_factory=HelmValues)
    namespace: str | None = None

    def describe(self) -> str:
        return self.chart

    def read(self, progress: Progress | None = None) -> Read:
        return Read(_refuse_nothing(render.render_chart(self.chart, self.values, self.namespace)))


def _refuse_nothing(rendered: LoadResult) -> LoadResult:
    """A kustomization or chart that renders no object is input without objects, refused as ``-f`` refuses it
    (``kubectl apply -k`` of an empty kustomization: "no objects passed to apply"): a gate must not pass on it."""
    if not rendered.documents and not rendered.errors:
        rendered.errors.append(LoadError(None, NO_OBJECTS))
    return rendered


def file_sources(filenames: Sequence[str], stdin: IO[str] | None = None, *, kustomize: str | None = None,
                 values: HelmValues | None = None, namespace: str | None = None) -> list[Source]:
    """The sources ``-f`` and ``-k`` name: plain manifests, Helm charts (rendered) and an overlay (rendered).
    ``-f`` with ``-k`` is refused in kubectl's words (``RenderUsageError``)."""
    if kustomize and filenames:
        raise RenderUsageError(ONLY_ONE_OF_F_K)
    if kustomize:
        return [Kustomization(kustomize)]
    values = values or HelmValues()
    return [HelmChart(items[0], values, namespace) if what == "chart" else Manifests(items, stdin)
            for what, items in render.plan(filenames)]


@dataclass(frozen=True, slots=True)
class Live:
    """A cluster through a kubeconfig (None: ``$KUBECONFIG``, then ``~/.kube/config``) and context."""

    kubeconfig: str | None = None
    context: str | None = None
    # How reports name it: "the running knetsim (~/.knetsim)"; by default the context's name.
    label: str | None = None
    timeout: float = 30.0

    def read(self, progress: Progress | None = None) -> Read:
        from .kubeapi import connect
        from .live import READ, read_cluster

        at = datetime.now(UTC)
        with connect(self.kubeconfig, self.context, timeout=self.timeout) as api:
            label = self.label or f"cluster {api.context}"
            got = read_cluster(api, label, progress=progress)
            return Read(got.loaded, got.notes, api.target, at, frozenset(k.kind for k in READ), got.dataplane,
                        got.node_port_addresses)


@dataclass(slots=True)
class Read:
    loaded: LoadResult
    notes: list[str] = field(default_factory=list)
    target: Target | None = None  # the cluster read, if one was
    at: datetime | None = None  # when it was read: the "now" of its objects' ages
    # Kinds listed in full from a cluster: what it lacks of them, it lacks (no built-in system objects added).
    complete: frozenset[str] = frozenset()
    dataplane: tuple[str, str] | None = None  # what the cluster read runs (``live.data_plane``), and why
    # kube-proxy's nodePortAddresses there (``live.node_port_addresses``), and where it is set.
    node_port_addresses: tuple[tuple[str, ...], str] | None = None


@dataclass(frozen=True, slots=True)
class Preloaded:
    """What an earlier ``read`` returned, read again without asking the cluster twice (``knetsim diff`` compares
    a cluster with itself plus a change: both sides must see the same objects)."""

    got: Read

    def read(self, progress: Progress | None = None) -> Read:
        loaded = LoadResult(list(self.got.loaded.documents), list(self.got.loaded.errors))
        return Read(loaded, list(self.got.notes), self.got.target, self.got.at, self.got.complete,
                    self.got.dataplane, self.got.node_port_addresses)


Source = Manifests | Live | GitManifests | Preloaded | Kustomization | HelmChart


def read(sources: Sequence[Source], progress: Progress | None = None) -> Read:
    """The documents of every source, in order: a later source's object replaces an earlier one's, as a
    later ``kubectl apply`` would (so manifests after a live cluster are changes applied to it)."""
    out = Read(LoadResult())
    for source in sources:
        got = source.read(progress)
        out.loaded.documents.extend(got.loaded.documents)
        out.loaded.errors.extend(got.loaded.errors)
        out.notes.extend(got.notes)
        out.target = out.target or got.target
        out.at = out.at or got.at
        out.complete |= got.complete
        out.dataplane = out.dataplane or got.dataplane
        out.node_port_addresses = out.node_port_addresses or got.node_port_addresses
    return out


__all__ = [
    "ApiError",
    "GitManifests",
    "GitSourceError",
    "HelmChart",
    "HelmValues",
    "KubeAPI",
    "KubeError",
    "KubeconfigError",
    "Kustomization",
    "Live",
    "Manifests",
    "Preloaded",
    "Read",
    "RenderUsageError",
    "Source",
    "Target",
    "connect",
    "file_sources",
    "read",
]
