"""What every command shares: where the cluster comes from, output formats, exit codes.

The cluster an analysis command looks at (``load_cluster``, the one place commands get it):
the manifests or snapshot of ``-f``; a live cluster through ``--kubeconfig FILE`` and/or
``--context NAME`` (both: the cluster with the manifests applied over it); with neither, the
running ``knetsim up`` of ``$KNETSIM_STATE`` (default ``~/.knetsim``) or of the exported ``$KUBECONFIG``.

Exit codes (DESIGN.md): 0 success, 1 a negative answer to a yes/no question, 2 bad input
or usage. ``InputError`` carries the complete list of problems and maps to 2 in one place.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

from ..api import Cluster, InputError
from ..cluster.build import INVALID_KEPT, UNKNOWN_FIELD
from ..model.loader import nothing_read

if TYPE_CHECKING:
    from ..cluster.state import Notice
    from ..sources import Source

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_BAD_INPUT = 2


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    # Kept for load_cluster, so that no command has to pass them along.
    ctx.meta[f"knetsim.{param.name}"] = value
    return value


VALIDATE_VALUES = {"strict": "strict", "warn": "warn", "ignore": "ignore", "true": "strict", "false": "ignore"}


def _validate_mode(ctx: click.Context, param: click.Parameter, value: str) -> str:
    # kubectl's spellings: --validate=true is strict, --validate=false ignore.
    mode = VALIDATE_VALUES.get(value.lower())
    if mode is None:
        raise click.BadParameter(f"invalid argument {value!r}: must be one of strict, warn, ignore (true, false)")
    ctx.meta["knetsim.validate"] = mode
    return mode


def validate_option(fn: F) -> F:
    """``--validate=strict|warn|ignore``, kubectl's option, for a command that reads manifests."""
    return click.option(
        "--validate", "validate", default="strict", show_default=True, metavar="strict|warn|ignore",
        expose_value=False, callback=_validate_mode,
        help="As kubectl: strict refuses objects with unknown or duplicate fields; warn drops such fields with the "
             "API server's warning; ignore also keeps objects validation would refuse and analyses them as "
             "written (each one reported).")(fn)


def validation_mode() -> str:
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get("knetsim.validate") or "strict") if ctx is not None else "strict"


def cluster_options(fn: F) -> F:
    """``-f/--filename`` (repeatable), ``-n/--namespace``, ``--kubeconfig``, ``--context``, ``--cluster-config``,
    ``--strict`` and ``--validate``."""
    fn = validate_option(fn)
    fn = click.option("--context", "context", default=None, expose_value=False, callback=_remember,
                      help="Read the cluster of this kubeconfig context (of --kubeconfig, else $KUBECONFIG or "
                           "~/.kube/config).")(fn)
    fn = click.option("--kubeconfig", "kubeconfig", default=None, expose_value=False, callback=_remember,
                      type=click.Path(dir_okay=False),
                      help="Read the objects of the cluster this kubeconfig names (kind, minikube, a cloud cluster); "
                           "with -f, the manifests are applied over them. Without -f or --kubeconfig: the running "
                           "`knetsim up`.")(fn)
    fn = click.option("--strict", "strict", is_flag=True, expose_value=False, callback=_remember,
                      help="Stop with exit code 2 when any object would be rejected by the API server "
                           "(default: report it on stderr and simulate the rest, as kubectl apply -f would).")(fn)
    fn = click.option("--cluster-config", "cluster_config", type=click.Path(dir_okay=False),
                      help="Cluster shape (nodes, CIDRs, domain, data plane); see docs/cluster-config.md.")(fn)
    fn = click.option("-n", "--namespace", default=None,
                      help="Namespace for the command; also the namespace of manifests that set none.")(fn)
    fn = click.option("-f", "--filename", "filenames", multiple=True,
                      help="Manifest file, directory (recursive) or - for stdin; a Helm chart (a directory holding "
                           "Chart.yaml, or a .tgz) is rendered as `helm template` renders it. Repeatable.")(fn)
    return render_options(fn)


def render_options(fn: F) -> F:
    """``-k/--kustomize DIR`` (kubectl's) and ``helm template``'s ``--values``, ``--set``, ``--set-string``,
    ``--set-file``, ``--release-name``;
    read by ``cluster_sources`` through ``file_sources`` (see docs/sources.md)."""
    fn = click.option("--release-name", "release_name", default=None, expose_value=False, callback=_remember,
                      metavar="NAME", help="Helm charts: the release name (helm template's NAME; default "
                                           "release-name).")(fn)
    fn = click.option("--set-file", "set_file_values", multiple=True, expose_value=False, callback=_remember,
                      metavar="KEY=PATH", help="Helm charts: set a value to the content of a file, as `helm "
                                               "template --set-file` does (over --set-string). Repeatable.")(fn)
    fn = click.option("--set-string", "set_string_values", multiple=True, expose_value=False, callback=_remember,
                      metavar="KEY=VALUE", help="Helm charts: set values as strings, as `helm template "
                                                "--set-string` does (over --set). Repeatable.")(fn)
    fn = click.option("--set", "set_values", multiple=True, expose_value=False, callback=_remember,
                      metavar="KEY=VALUE", help="Helm charts: set values as `helm template --set` does "
                                                "(over --values). Repeatable.")(fn)
    fn = click.option("--values", "values_files", multiple=True, expose_value=False, callback=_remember,
                      type=click.Path(dir_okay=False), metavar="FILE",
                      help="Helm charts: a values file (over the chart's values.yaml; later ones win). "
                           "Repeatable.")(fn)
    fn = click.option("--kubernetes-version", "kubernetes_version", default=None, expose_value=False,
                      callback=_kubernetes_version, metavar="MAJOR.MINOR",
                      help="Admit objects as this Kubernetes version's API server does (1.33 to 1.38; default the "
                           "newest): its feature gates, validation rules and warnings (docs/versions.md).")(fn)
    fn = click.option("-k", "--kustomize", "kustomize", default=None, expose_value=False, callback=_remember,
                      metavar="DIR", help="Process the kustomization directory (rendered by kustomize, else "
                                          "`kubectl kustomize`). Can't be used together with -f.")(fn)
    return fn


def _kubernetes_version(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """The version admission follows for this command (model/versions.py), until the command ends."""
    from ..model import versions

    if value is None:
        return
    try:
        chosen = versions.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    ctx.with_resource(versions.using(chosen))
    ctx.meta["knetsim.kubernetes_version"] = chosen


def rendering_requested() -> bool:
    """Did the command line name a kustomization (``-k``)? It stands for ``-f``."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get("knetsim.kustomize"))


def _file_sources(filenames: Sequence[str], meta: dict[str, Any]) -> list[Source]:
    """What ``-f`` and ``-k`` name: manifests, Helm charts (rendered), a kustomization (rendered)."""
    from ..sources import HelmChart, HelmValues, Kustomization, Preloaded, RenderUsageError, file_sources

    ctx = click.get_current_context(silent=True)
    values = HelmValues(tuple(meta.get("knetsim.values_files") or ()), tuple(meta.get("knetsim.set_values") or ()),
                        meta.get("knetsim.release_name") or HelmValues().release_name,
                        tuple(meta.get("knetsim.set_string_values") or ()),
                        tuple(meta.get("knetsim.set_file_values") or ()))
    try:
        sources = file_sources(filenames, sys.stdin, kustomize=meta.get("knetsim.kustomize"), values=values,
                               namespace=ctx.params.get("namespace") if ctx is not None else None)
    except RenderUsageError as exc:
        return fail_input(InputError([str(exc)]))
    out: list[Source] = []
    for source in sources:
        if isinstance(source, HelmChart | Kustomization):
            # Rendered now: a chart or overlay that does not render stops every command with exit 2 in the
            # tool's words (as `helm template` and `kubectl apply -k` stop), doctor's included.
            got = source.read()
            if got.loaded.errors:
                fail_input(InputError([str(e) if e.source else e.message for e in got.loaded.errors]))
            out.append(Preloaded(got))
        else:
            out.append(source)
    return out


def output_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        return click.option("-o", "--output", type=click.Choice(list(choices)), default=default,
                            show_default=True, help="Output format.")(fn)
    return wrap


def strict_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get("knetsim.strict"))


def live_requested() -> bool:
    """Did the command line name a live cluster (``--kubeconfig`` or ``--context``)?"""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and (ctx.meta.get("knetsim.kubeconfig") or ctx.meta.get("knetsim.context")))


def state_dir() -> Path:
    """The state directory of `knetsim up`, read when asked (tests and users set $KNETSIM_STATE per run)."""
    return Path(os.environ.get("KNETSIM_STATE") or Path.home() / ".knetsim").expanduser()


def running_knetsim() -> tuple[Path, Path] | None:
    """(state directory, kubeconfig) of the running `knetsim up`, if one runs: the one of the state directory, or
    the one ``$KUBECONFIG`` names when that file belongs to a running knetsim (``up --state DIR`` then the
    ``export KUBECONFIG=DIR/kubeconfig`` it printed). A KUBECONFIG naming any other cluster is never
    read without ``--kubeconfig``: pointing an analysis at a real cluster is the user's explicit choice.
    `knetsim status` and `down` find the cluster here too, so they act on the one every other command reads."""
    candidates: list[tuple[Path, Path | None]] = [(state_dir(), None)]
    exported = os.environ.get("KUBECONFIG", "")
    if exported and os.pathsep not in exported:
        named = Path(exported).expanduser()
        candidates.append((named.parent, named))
    for state, named in candidates:
        kubeconfig = _knetsim_kubeconfig(state, named)
        if kubeconfig is not None:
            return state, kubeconfig
    return None


def _running_knetsim() -> str | None:
    """The kubeconfig of the running `knetsim up` (``running_knetsim``), remembered for ``running_cluster_config``."""
    found = running_knetsim()
    if found is None:
        return None
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta["knetsim.running_state"] = found[0]
    return str(found[1])


def running_cluster_config(kubeconfig: str | None = None) -> str | None:
    """The cluster config the running `knetsim up` this command reads was created with (its state
    directory's copy), so that its data plane and ranges are the ones analysed; None: the defaults.
    The running knetsim is the one found without flags, or the one whose kubeconfig ``--kubeconfig``
    (or ``kubeconfig``) names: `up --state DIR` then `--kubeconfig DIR/kubeconfig`."""
    from ..daemon.clusterconfig import CONFIG_NAME

    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    state = meta.get("knetsim.running_state")
    named = kubeconfig or meta.get("knetsim.kubeconfig")
    if state is None and named:
        path = Path(str(named)).expanduser()
        state = path.parent if _knetsim_kubeconfig(path.parent, path) is not None else None
    if state is None or not (Path(state) / CONFIG_NAME).exists():
        return None
    return str(Path(state) / CONFIG_NAME)


def _knetsim_kubeconfig(state: Path, named: Path | None = None) -> Path | None:
    """The kubeconfig of the knetsim running with state directory ``state``; with ``named``, only when it is that
    file (a kubeconfig in a folder is not a knetsim's just because a knetsim runs there)."""
    from ..daemon.statedir import running

    info = running(state)
    if info is None:
        return None
    own = Path(str(info.get("kubeconfig") or state / "kubeconfig"))
    return own if named is None or _same_file(own, named) else None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def cluster_sources(filenames: Sequence[str]) -> list[Source]:
    """Where the command's objects come from (see the module docstring); exit 2 when nothing says."""
    from ..sources import Live

    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    sources: list[Source] = []
    if live_requested():
        sources.append(Live(meta.get("knetsim.kubeconfig"), meta.get("knetsim.context")))
    if filenames or meta.get("knetsim.kustomize"):
        sources.extend(_file_sources(filenames, meta))
    if not sources:
        kubeconfig = _running_knetsim()
        if kubeconfig is None:
            hint = (f" (KUBECONFIG is set: --kubeconfig {os.environ['KUBECONFIG']} reads that cluster)"
                    if os.environ.get("KUBECONFIG") else "")
            fail_input(InputError([f"nothing to analyse: no -f FILE|DIR|- given, no --kubeconfig, and no knetsim "
                                   f"runs with state dir {state_dir()} (knetsim up starts one){hint}"]))
        sources.append(Live(kubeconfig))
    return sources


def _progress(line: str) -> None:
    click.echo(line, err=True)


def load_cluster(filenames: Sequence[str], namespace: str | None, cluster_config: str | None, *,
                 report: bool = True, simulate: bool = True, namespace_must_exist: bool = True) -> Cluster:
    """The cluster ``kubectl apply -f`` would leave: every valid object admitted, every rejected one
    reported on stderr (file, document, object, the API server's words) and left out. ``--strict``
    turns any rejection into exit 2 with nothing simulated, for CI gates. A live cluster's objects
    are read as a snapshot; a cluster that cannot be read is exit 2 with the server's words.

    Input that holds no object is exit 2 whatever ``report`` says, in kubectl's words (a CI gate must not pass
    on nothing), and so is a ``-n`` naming a namespace the cluster does not have (``namespace_must_exist``:
    a command that only lists, as ``kubectl get``, answers "No resources found" instead)."""
    sources = cluster_sources(filenames)
    cluster_config = cluster_config or running_cluster_config()
    try:
        cluster = Cluster.from_sources(sources, namespace=namespace, cluster_config=cluster_config,
                                       strict=strict_requested(), progress=_progress, validation=validation_mode(),
                                       simulate=simulate)
    except InputError as exc:
        fail_input(exc)
    except Exception as exc:
        from ..sources import KubeError  # the API client loads only when a cluster was read

        if not isinstance(exc, KubeError):
            raise
        fail_input(InputError([str(exc)]))
    for note in cluster.source_notes:
        click.echo(f"Warning: {note}", err=True)
    nothing = [e for e in cluster.unreadable if nothing_read(str(e.error))]
    if nothing:
        fail_input(InputError([str(e.error) for e in nothing]))
    if cluster.unreadable and not cluster.documents:
        # Not one object could be read (a path that does not exist, a file that does not parse): no analysis
        # ran, so no command may answer as if one had (doctor would list the files as findings, exit 1).
        fail_input(InputError([str(e) for e in cluster.unreadable]))
    if namespace and namespace_must_exist and simulate and namespace not in cluster.state.namespaces:
        # The API server's words (kubectl: Error from server (NotFound)), and what there is instead.
        names = sorted(cluster.state.namespaces)
        listed = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        fail_input(InputError([f'namespaces "{namespace}" not found (the cluster has: {listed or "none"})']))
    if report and cluster.unreadable:
        # kubectl apply -f stops before creating anything when a file does not parse: so does the analysis.
        fail_input(InputError([str(e) for e in cluster.errors]))
    if report and cluster.errors:
        report_rejected(cluster)
    if report:
        for notice in _asked_for(cluster):
            click.echo(f"Warning: {notice}", err=True)
    return cluster


def _asked_for(cluster: Cluster) -> list[Notice]:
    """What --validate=warn|ignore owes the user on every command, as kubectl prints the server's warnings:
    each field dropped and each object kept although the API server would refuse it."""
    if validation_mode() == "strict":
        return []
    return [n for n in cluster.notices if n.code in (INVALID_KEPT, UNKNOWN_FIELD)]


def report_rejected(cluster: Cluster) -> None:
    for error in cluster.errors:
        click.echo(f"error: {error}", err=True)
    subjects = {(str(e.source), e.subject) for e in cluster.errors}
    click.echo(f"{len(subjects)} object(s) left out as the API server would reject them; the rest is simulated "
               "(--strict stops instead)", err=True)


def fail_input(exc: InputError, summary: str = "nothing was simulated", *, always_summarize: bool = False) -> Any:
    for line in exc.problems:
        click.echo(f"error: {line}", err=True)
    count = len(exc.problems)
    if count > 1 or always_summarize:
        click.echo(f"{count} error{'s' if count != 1 else ''}; {summary}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def usage_error(message: str) -> Any:
    raise click.UsageError(message)


def print_notices(cluster: Cluster) -> None:
    printed = {id(n) for n in _asked_for(cluster)}  # by load_cluster
    for notice in cluster.notices:
        if id(notice) not in printed:
            click.echo(f"Warning: {notice}", err=True)


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


class _PlainDumper(yaml.SafeDumper):
    """Every value written out in full, as kubectl and sigs.k8s.io/yaml write it: a list or map shared by two
    objects (pods of one template) is never an ``&id001`` anchor and its ``*id001`` alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def emit(data: Any, output: str) -> None:
    """Print ``data`` (a JSON-able value) as JSON or YAML."""
    click.echo(dump_json(data) if output == "json" else dump_yaml(data), nl=False)


def tabulate(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """kubectl's tabwriter layout: columns padded to the widest cell plus three spaces."""
    table = [list(headers)] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = []
    for row in table:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def split_ref(ref: str, default_namespace: str) -> tuple[str, str]:
    """``ns/name`` or ``name`` → (namespace, name)."""
    if "/" in ref:
        ns, _, name = ref.partition("/")
        return ns, name
    return default_namespace, ref
