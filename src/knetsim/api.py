"""The Python API: ``knetsim.Cluster``, built from manifests, with methods mirroring the CLI.

    >>> from knetsim import Cluster
    >>> cluster = Cluster.from_yaml(open("app.yaml").read())
    >>> cluster.endpoints("web", "default").ready_addresses
    ['10.244.1.2', '10.244.2.2']

Methods return dataclasses whose ``to_dict()`` is exactly what ``-o json`` prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from .cluster.build import BuildResult, ManifestError, build_cluster, validate_documents
from .cluster.config import ClusterConfig, ConfigError, load_config
from .cluster.state import ClusterState, Notice
from .model.admission import Validation
from .model.loader import Document, LoadResult, load_text
from .sources import Live, Manifests, Progress, Source, read

if TYPE_CHECKING:
    from .sources import Target


class InputError(ValueError):
    """Bad input: every problem found, each naming file, document, object and field."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class Cluster:
    """A simulated cluster: the state the controllers produced, plus the questions you can ask it."""

    def __init__(self, state: ClusterState, documents: Sequence[Document] = (),
                 errors: Sequence[ManifestError] = ()) -> None:
        self.state = state
        self.documents = list(documents)
        # How many documents were read (when only admission ran, ``documents`` holds only the CRDs and custom
        # kinds: a large input is not held twice).
        self.read = len(self.documents)
        # Objects the API server would have rejected (only with strict=False; they are not in the state).
        self.errors = list(errors)
        # Files or documents that could not be read or parsed at all (a subset of errors).
        self.unreadable: list[ManifestError] = []
        # The live cluster the objects were read from (from_sources), and what of it could not be read.
        self.target: Target | None = None
        self.source_notes: list[str] = []
        self.read_at: datetime | None = None
        # The namespace a name without one is in: -n, else the kubeconfig context's (as kubectl), else default.
        self.namespace = "default"

    # --- construction ---------------------------------------------------------------

    @classmethod
    def from_documents(cls, documents: Iterable[Document], *, namespace: str = "default",
                       config: ClusterConfig | None = None, strict: bool = True,
                       validation: Validation | str = Validation.STRICT) -> Cluster:
        """``strict=False`` builds from the valid objects and keeps the rejected ones in ``errors``;
        ``validation`` is kubectl's ``--validate`` (``strict``, ``warn``, ``ignore``: analyse as written)."""
        docs = list(documents)
        result: BuildResult = build_cluster(docs, config or ClusterConfig(), namespace,
                                            validation=Validation(validation))
        if result.errors and strict:
            raise InputError([str(e) for e in result.errors])
        return cls(result.state, docs, result.errors)

    @classmethod
    def from_paths(cls, paths: Iterable[str], *, namespace: str = "default", cluster_config: str | None = None,
                   config: ClusterConfig | None = None, stdin: IO[str] | None = None, strict: bool = True,
                   validation: Validation | str = Validation.STRICT) -> Cluster:
        return cls.from_sources([Manifests(tuple(paths), stdin)], namespace=namespace, cluster_config=cluster_config,
                                config=config, strict=strict, validation=validation)

    @classmethod
    def from_sources(cls, sources: Sequence[Source], *, namespace: str | None = "default",
                     cluster_config: str | None = None,
                     config: ClusterConfig | None = None, strict: bool = True,
                     progress: Progress | None = None, validation: Validation | str = Validation.STRICT,
                     simulate: bool = True) -> Cluster:
        """Manifests, snapshots and live clusters (``knetsim.sources.Live``), later ones applied over earlier
        ones. Raises ``knetsim.sources.KubeError`` when a cluster cannot be read. ``simulate=False`` only
        admits (what ``knetsim validate`` needs): the state has no pods, Services or slices then."""
        shaped = config is not None or cluster_config is not None
        if config is None:
            try:
                config = load_config(cluster_config)
            except ConfigError as exc:
                raise InputError([str(exc)]) from None
        got = read(sources, progress)
        if not shaped and got.dataplane is not None and got.dataplane[0] != config.dataplane:
            # No cluster config given: a cluster read is analysed with the data plane it runs.
            config = dataclasses.replace(config, dataplane=got.dataplane[0])
            got.notes.append(f"data plane: {got.dataplane[0]} ({got.dataplane[1]})")
        if not shaped and got.node_port_addresses is not None:
            # Which node addresses take NodePorts (localhost among them or not) is the cluster's kube-proxy's.
            addresses, where = got.node_port_addresses
            config = dataclasses.replace(config, node_port_addresses=addresses)
            got.notes.append(f"kube-proxy nodePortAddresses: {', '.join(addresses)} ({where})")
        # No namespace given: a live cluster's context namespace, as kubectl takes it (manifests included).
        namespace = namespace or (got.target.namespace if got.target is not None else "") or "default"
        cluster = cls._from_loaded(got.loaded, namespace=namespace, config=config, strict=strict,
                                   authoritative=got.complete, validation=Validation(validation), simulate=simulate)
        cluster.target, cluster.source_notes, cluster.read_at = got.target, got.notes, got.at
        cluster.namespace = namespace
        return cluster

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None, *,
                        namespace: str = "default", config: ClusterConfig | None = None) -> Cluster:
        """What a running cluster holds (``$KUBECONFIG`` or ``~/.kube/config`` by default), analysed as a
        snapshot: objects the v1.35 API server would reject are kept in ``errors``, not raised."""
        return cls.from_sources([Live(kubeconfig, context)], namespace=namespace, config=config, strict=False)

    @classmethod
    def _from_loaded(cls, loaded: LoadResult, *, namespace: str, config: ClusterConfig | None,
                     strict: bool, authoritative: frozenset[str] = frozenset(),
                     validation: Validation = Validation.STRICT, simulate: bool = True) -> Cluster:
        """What parsed is admitted; a file that does not parse is one more error, never the end of the run
        (strict=True still raises InputError with every problem of every file)."""
        unreadable = [ManifestError(e.source, e.subject, e.message) for e in loaded.errors]
        if simulate:
            result: BuildResult = build_cluster(loaded.documents, config or ClusterConfig(), namespace,
                                                authoritative=authoritative, validation=validation)
        else:
            count = len(loaded.documents)
            result = validate_documents(loaded.documents, config or ClusterConfig(), namespace, validation)
        errors = [*unreadable, *result.errors]
        if errors and strict:
            raise InputError([str(e) for e in errors])
        cluster = cls(result.state, loaded.documents, errors)
        cluster.read = len(loaded.documents) if simulate else count
        cluster.unreadable = unreadable
        return cluster

    @classmethod
    def from_yaml(cls, text: str, *, namespace: str = "default", config: ClusterConfig | None = None,
                  filename: str = "<string>", strict: bool = True,
                  validation: Validation | str = Validation.STRICT) -> Cluster:
        return cls._from_loaded(load_text(text, filename), namespace=namespace, config=config, strict=strict,
                                validation=Validation(validation))

    # --- what the cluster has -------------------------------------------------------

    @property
    def config(self) -> ClusterConfig:
        return self.state.config

    @property
    def notices(self) -> list[Notice]:
        return self.state.notices

    def endpoints(self, service: str, namespace: str = "default") -> Any:
        from .cluster.explain import explain_endpoints

        return explain_endpoints(self.state, namespace, service)

    def overview(self) -> Any:
        from .cluster.explain import overview

        return overview(self.state)

    # --- the questions (each mirrors a CLI command; results serialise like -o json) ---

    def trace(self, source: str, target: str, *, protocol: str = "TCP", method: str = "GET",
              headers: dict[str, str] | None = None, dataplane: str | None = None) -> Any:
        """``knetsim trace``: one connection through every layer; ``.outcome``, ``.hops``, ``.to_dict()``."""
        from .network.tracer import trace

        return trace(self.state, source, target, protocol=protocol, method=method, headers=headers,
                     dataplane=dataplane)

    def dns(self, name: str, source: str, qtype: str = "A", *, mode: str = "glibc") -> Any:
        """``knetsim dns NAME --from NS/POD``: every query the pod's resolver sends, and the answer."""
        from .dns import resolve
        from .network.connect import resolve_pod

        return resolve(self.state, resolve_pod(self.state, source), name, qtype, mode=mode)

    def policy_check(self, source: str, destination: str, port: int | str, protocol: str = "TCP") -> Any:
        """``knetsim policy check``: would NetworkPolicy allow it, and which rule decided."""
        from .policy import evaluate

        return evaluate(self.state, source, destination, port, protocol)

    def matrix(self, namespace: str | None = None) -> Any:
        """``knetsim matrix``: every allowed connection between pods (and external peers)."""
        from .policy.matrix import matrix

        return matrix(self.state, namespace)

    def route(self, host: str, path: str = "/", *, class_name: str | None = None, scheme: str = "http") -> Any:
        """``knetsim route``: which Ingress rule and backend serve a request."""
        from .ingress import route

        return route(self.state, host, path, class_name, scheme)

    def render(self, backend: str | None = None, node: str | None = None) -> Any:
        """``knetsim render``: what the data plane programs on a node (iptables-save, nft, cilium maps)."""
        from .dataplane import render

        return render(self.state, backend, node)

    def packet(self, src: str, dst: str, dport: int, protocol: str = "TCP", *, node: str | None = None,
               backend: str | None = None) -> Any:
        """``knetsim packet``: one packet through the rules the data plane rendered."""
        from .dataplane import Packet, trace_packet

        return trace_packet(self.state, Packet(src, dst, dport, protocol, node), backend, node)

    def doctor(self, subject: str | None = None, namespace: str | None = None) -> Any:
        """``knetsim doctor``: findings with fixes."""
        from .doctor import diagnose

        return diagnose(self.state, self.errors, subject=subject, namespace=namespace)
