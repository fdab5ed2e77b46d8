"""Manifests that must be rendered before they are objects: Kustomize overlays (``-k DIR``) and Helm charts
(``-f CHART`` with ``--values``, ``--set``, ``--release-name``, ``-n``).

Rendering is done by the tools themselves, never by a home-made subset of them:

* Kustomize by the ``kustomize`` binary when it is on PATH, else by ``kubectl kustomize`` (kubectl bundles
  Kustomize: v1.32 has v5.5.0). To know which file each object came from, the overlay is built through a
  one-line wrapper kustomization that asks for ``buildMetadata: [originAnnotations]``: Kustomize then writes
  ``config.kubernetes.io/origin`` (the base or overlay file, or the generator's kustomization) on every object.
  The annotation becomes the object's ``Source`` and is removed from the object, so admission errors name
  ``base/service.yaml`` as kube-linter's reports do (``overlays/prod -> base/service.yaml`` for a base's object
  an overlay may have patched), and the objects are those ``kubectl apply -k`` sends.
* Helm charts by Helm's own Go engine: the ``helm-python-sdk`` package (bindings of Helm v4's SDK, the
  ``helm`` extra) when installed, else the ``helm`` binary (``helm template``). Values are layered as
  ``helm template`` layers them: the chart's values.yaml < each ``--values FILE`` in order < ``--set`` <
  ``--set-string`` < ``--set-file`` (helm's pkg/cli/values/options.go ``MergeValues`` applies the flags by kind
  in that order, whatever their order on the command line).
  Each object's ``Source`` is its template file (``chart/templates/deployment.yaml``), as helm's
  ``# Source:`` lines say.

A renderer that is missing, or a render that fails, is an error of the read (``LoadError``): the command
stops with exit code 2 and the tool's own words, naming the chart, the template file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..model.loader import (
    MANIFEST_SUFFIXES,
    Document,
    LoadError,
    LoadResult,
    Source,
    load_text,
    yaml_documents,
)

# kubectl's own words when both are given (cli-runtime FilenameOptions.validate).
ONLY_ONE_OF_F_K = "only one of -f or -k can be specified"
ORIGIN = "config.kubernetes.io/origin"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
DEFAULT_RELEASE_NAME = "release-name"  # what `helm template CHART` names the release when given no name
RENDER_TIMEOUT = 120.0

INSTALL_KUSTOMIZE = ("install kustomize (https://kubectl.docs.kubernetes.io/installation/kustomize/) or kubectl, "
                     "whose `kubectl kustomize` bundles it")
INSTALL_HELM = ("install Helm's engine: `pip install 'knetsim[helm]'` (the helm-python-sdk bindings of Helm v4) or "
                "the helm binary (https://helm.sh/docs/intro/install/)")


@dataclass(frozen=True, slots=True)
class OverlaySource(Source):
    """An object of a kustomization that came from a file outside it (a base): ``overlays/prod ->
    base/service.yaml, document 1``. The base file is where the object is written, the overlay what may have
    patched it (a JSON 6902 patch there breaks the base's object): a report names both, as the user must look at
    both."""

    overlay: str = ""

    def __str__(self) -> str:
        return f"{self.overlay} -> {Source.__str__(self)}"


class RenderUsageError(ValueError):
    """A command line that asks for two incompatible things (``-f`` with ``-k``)."""


@dataclass(frozen=True, slots=True)
class HelmValues:
    """``helm template``'s value flags."""

    files: tuple[str, ...] = ()  # --values FILE, in order
    set: tuple[str, ...] = ()  # --set key=value[,key=value], in order
    release_name: str = DEFAULT_RELEASE_NAME
    set_string: tuple[str, ...] = ()  # --set-string key=value: every value stays a string ("123", "true")
    set_file: tuple[str, ...] = ()  # --set-file key=path: the value is the file's content


# --- which paths are charts ---------------------------------------------------------------------------------


def is_chart(path: str) -> bool:
    """A directory holding ``Chart.yaml``, or a ``.tgz`` archive holding ``<name>/Chart.yaml`` (what ``helm
    package`` writes)."""
    p = Path(path)
    if p.is_dir():
        return (p / "Chart.yaml").is_file()
    if p.is_file() and p.name.endswith((".tgz", ".tar.gz")):
        import tarfile  # here, as the other process and file modules below: ~7 ms every command would pay at start

        try:
            with tarfile.open(p, "r:gz") as archive:
                return any(m.name.count("/") == 1 and m.name.endswith("/Chart.yaml") for m in archive.getmembers())
        except (tarfile.TarError, OSError):
            return False
    return False


def plan(filenames: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """What each ``-f`` path is: ``("chart", (path,))`` or ``("manifests", paths)``, in order. A ``-f DIR`` that
    holds charts below it renders each chart and reads the other files as manifests, in the directory's sorted
    order; templates are never read as (broken) YAML."""
    out: list[tuple[str, tuple[str, ...]]] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            out.append(("manifests", tuple(plain)))
            plain.clear()

    for path in filenames:
        if path != "-" and is_chart(path):
            flush()
            out.append(("chart", (path,)))
        elif path != "-" and Path(path).is_dir() and _holds_chart(Path(path)):
            for item, chart in _walk_with_charts(Path(path)):
                if chart:
                    flush()
                    out.append(("chart", (item,)))
                else:
                    plain.append(item)
        else:
            plain.append(path)
    flush()
    return out


def _holds_chart(directory: Path) -> bool:
    return any(True for _ in directory.rglob("Chart.yaml"))


def _walk_with_charts(directory: Path) -> Iterator[tuple[str, bool]]:
    """The files of a directory in kubectl's order (sorted, recursive), a chart directory as one item."""
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        if "Chart.yaml" in files:
            dirs.clear()
            yield root, True
            continue
        for name in sorted(files):
            if name.endswith(MANIFEST_SUFFIXES):
                yield str(Path(root) / name), False


# --- Kustomize ---------------------------------------------------------------------------------------------


def kustomize_command() -> list[str] | None:
    """The renderer the user has: ``kustomize build``, else ``kubectl kustomize``."""
    import shutil

    if found := shutil.which("kustomize"):
        return [found, "build"]
    if found := shutil.which("kubectl"):
        return [found, "kustomize"]
    return None


def render_kustomization(directory: str) -> LoadResult:
    result = LoadResult()
    command = kustomize_command()
    if command is None:
        result.errors.append(LoadError(None, f"cannot render -k {directory}: neither kustomize nor kubectl is on "
                                             f"PATH; {INSTALL_KUSTOMIZE}"))
        return result
    target = Path(directory)
    if not target.is_dir():
        # Kustomize's own words (it also builds remote targets, which have no files here to point at).
        ok, out = _run([*command, directory])
        if not ok:
            result.errors.append(LoadError(None, f"kustomize build {directory}: {out}"))
            return result
        return _kustomize_documents(out, directory, None, result, strip=False)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="knetsim-kustomize-") as wrapper:
        # Kustomize refuses an absolute path as a resource, but takes a relative one anywhere.
        relative = os.path.relpath(target.resolve(), wrapper)
        Path(wrapper, "kustomization.yaml").write_text(
            yaml.safe_dump({"resources": [relative], "buildMetadata": ["originAnnotations"]}))
        ok, out = _run([*command, wrapper])
    if not ok:
        # Rendered again without the wrapper, so that the error speaks of the user's paths, not of ours.
        _, out = _run([*command, directory])
        result.errors.append(LoadError(None, f"kustomize build {directory}: {out}"))
        return result
    keeps = _asks_for_origins(target)
    return _kustomize_documents(out, directory, (str(target.resolve()), wrapper), result, strip=not keeps)


def _asks_for_origins(directory: Path) -> bool:
    """Does the user's own kustomization ask for origin annotations? Then they stay, as ``kubectl apply -k``
    would send them."""
    for name in KUSTOMIZATION_FILES:
        path = directory / name
        if path.is_file():
            try:
                data = yaml.safe_load(path.read_text())
            except (yaml.YAMLError, OSError, UnicodeDecodeError):
                return False
            meta = data.get("buildMetadata") if isinstance(data, dict) else None
            return isinstance(meta, list) and "originAnnotations" in meta
    return False


def _kustomize_documents(text: str, directory: str, roots: tuple[str, str] | None, result: LoadResult, *,
                         strip: bool) -> LoadResult:
    rendered = load_text(text, f"kustomize build {directory}")
    result.errors.extend(rendered.errors)
    documents = _DocumentFinder()
    for doc in rendered.documents:
        source = doc.source
        origin = _origin(doc.body)
        if origin is not None and roots is not None:
            file = _origin_file(origin, directory, *roots)
            if file is not None:
                document = documents.find(file, doc.kind, doc.name) if "path" in origin else 1
                source = (Source(file, document) if _inside(file, directory)
                          else OverlaySource(file, document, overlay=directory))
        if strip and origin is not None:
            _remove_origin(doc.body)
        result.documents.append(Document(source, doc.body))
    return result


def _inside(file: str, directory: str) -> bool:
    """Is ``file`` one of the kustomization's own (its resources, its generators' kustomization)? A base's file
    or a remote one is not."""
    if "//" in file:
        return False
    relative = os.path.relpath(os.path.abspath(file), os.path.abspath(directory))
    return relative != ".." and not relative.startswith(".." + os.sep)


def _origin(body: dict[str, Any]) -> dict[str, Any] | None:
    meta = body.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    raw = annotations.get(ORIGIN) if isinstance(annotations, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        origin = yaml.safe_load(raw)
    except yaml.YAMLError:
        return None
    return origin if isinstance(origin, dict) else None


def _remove_origin(body: dict[str, Any]) -> None:
    annotations = body["metadata"]["annotations"]
    del annotations[ORIGIN]
    if not annotations:
        del body["metadata"]["annotations"]


def _origin_file(origin: dict[str, Any], directory: str, resolved: str, wrapper: str) -> str | None:
    """The file an origin annotation names, spelled from the ``-k`` directory as the user gave it: ``-k
    overlays/prod`` and ``path: ../base/service.yaml`` give ``overlays/base/service.yaml``. A generated object's
    origin is the kustomization that configured it; a remote base's is its repository and path."""
    path = origin.get("path") or origin.get("configuredIn")
    if not isinstance(path, str) or not path:
        return None
    if repo := origin.get("repo"):
        ref = origin.get("ref")
        return f"{repo}//{path}" + (f"?ref={ref}" if ref else "")
    absolute = os.path.normpath(os.path.join(wrapper, path))
    return os.path.normpath(os.path.join(directory, os.path.relpath(absolute, resolved)))


class _DocumentFinder:
    """Which document of its file an object came from. The origin annotation names the file, not the document:
    the object is found among the file's documents by kind, then by the name it had there (which a namePrefix,
    nameSuffix or hash suffix extends)."""

    def __init__(self) -> None:
        self._files: dict[str, list[tuple[int, str, str]]] = {}

    def find(self, file: str, kind: str, name: str) -> int:
        docs = self._files.get(file)
        if docs is None:
            docs = self._files[file] = self._read(file)
        same_kind = [(i, n) for i, k, n in docs if k == kind]
        if len(same_kind) == 1:
            return same_kind[0][0]
        named = [(len(n), i) for i, n in same_kind if n and n in name]
        if named:
            return max(named)[1]
        return same_kind[0][0] if same_kind else 1

    @staticmethod
    def _read(file: str) -> list[tuple[int, str, str]]:
        try:
            bodies = list(yaml_documents(Path(file).read_text()))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return []
        out = []
        for i, body in enumerate(bodies, start=1):
            if isinstance(body, dict):
                meta = body.get("metadata")
                name = meta.get("name") if isinstance(meta, dict) else ""
                out.append((i, str(body.get("kind") or ""), str(name or "")))
        return out


def _run(command: list[str]) -> tuple[bool, str]:
    """(succeeded, stdout) or (failed, the tool's error in its own words)."""
    import subprocess

    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=RENDER_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return False, f"{Path(command[0]).name} did not finish within {RENDER_TIMEOUT:.0f} s"
    except OSError as exc:
        return False, f"cannot run {command[0]}: {exc.strerror or exc}"
    if done.returncode == 0:
        return True, done.stdout
    return False, _tool_error(done.stderr) or f"{Path(command[0]).name} exited with code {done.returncode}"


def _tool_error(stderr: str) -> str:
    """The message of a failed kustomize run: ``Error: MSG`` from the kustomize binary, or kubectl's klog line
    ``E... run.go:72] "command failed" err="MSG"``."""
    import json

    for line in stderr.splitlines():
        marker = line.find(' err="')
        if marker >= 0 and line.endswith('"'):
            quoted = line[marker + 5:]
            try:
                return str(json.loads(quoted))
            except ValueError:
                return quoted.strip('"')
        if line.startswith("Error: "):
            return line[len("Error: "):]
    return stderr.strip()


# --- Helm --------------------------------------------------------------------------------------------------


def render_chart(chart: str, values: HelmValues, namespace: str | None) -> LoadResult:
    result = LoadResult()
    try:
        user_values = _user_values(values)
    except _HelmFailure as exc:
        result.errors.append(LoadError(None, f"chart {chart}: {exc}"))
        return result
    try:
        rendered = _render_with_sdk(chart, user_values, values.release_name, namespace or "default")
    except _NoEngine:
        try:
            rendered = _render_with_binary(chart, values, namespace or "default")
        except _NoEngine:
            result.errors.append(LoadError(None, f"cannot render the Helm chart {chart}: no Helm engine is "
                                                 f"installed; {INSTALL_HELM}"))
            return result
        except _HelmFailure as exc:
            result.errors.append(LoadError(None, f"chart {chart}: {exc}"))
            return result
    except _HelmFailure as exc:
        result.errors.append(LoadError(None, f"chart {chart}: {exc}"))
        return result
    for template in sorted(rendered):
        if _is_output(template):
            load_text(rendered[template], _template_file(chart, template), result)
    return result


class _NoEngine(Exception):
    pass


class _HelmFailure(Exception):
    pass


def _is_output(template: str) -> bool:
    """What ``helm template`` prints: not NOTES.txt, not partials (``_helpers.tpl``)."""
    name = template.rsplit("/", 1)[-1]
    return not (name.startswith("_") or template.endswith("NOTES.txt"))


def _template_file(chart: str, template: str) -> str:
    """``shop/templates/web.yaml`` (the engine's name: chart name first) as a file of the chart the user gave:
    ``charts/shop/templates/web.yaml``; inside an archive, ``shop-0.1.0.tgz:shop/templates/web.yaml``."""
    if Path(chart).is_dir():
        _, _, inside = template.partition("/")
        return os.path.normpath(os.path.join(chart, inside))
    return f"{chart}:{template}"


def _helm_sdk() -> Any:
    try:
        import helm_python  # type: ignore[import-not-found]
    except ImportError:
        raise _NoEngine from None
    return helm_python


def _helm_sdk_or_none() -> Any:
    try:
        return _helm_sdk()
    except _NoEngine:
        return None


def _user_values(values: HelmValues) -> dict[str, Any]:
    """``--values`` files merged in order, then ``--set``, ``--set-string`` and ``--set-file`` over them (Helm's
    ``values.Options.MergeValues``: maps merge key by key, anything else replaces). Parsed by Helm's own parsers
    when the SDK is there."""
    merged: dict[str, Any] = {}
    sdk = _helm_sdk_or_none()
    for path in values.files:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise _HelmFailure(f"--values {path}: {exc.strerror or exc}") from None
        try:
            current = sdk.values_from_yaml(text) if sdk is not None else yaml.safe_load(text)
        except Exception as exc:
            raise _HelmFailure(f"failed to parse {path}: {exc}") from None
        merged = _merge_maps(merged, current if isinstance(current, dict) else {})
    if sdk is None:
        return merged  # the helm binary parses --set, --set-string and --set-file itself
    # Helm's own parsers (strvals): --set types its values (1 is an int, true a bool), --set-string keeps them
    # strings, --set-file reads each value's file, relative to the working directory as helm does.
    for flag, parse, expressions in (("--set", sdk.parse_set_string, values.set),
                                     ("--set-string", sdk.parse_set_string_values, values.set_string),
                                     ("--set-file", sdk.parse_set_file, values.set_file)):
        for expression in expressions:
            try:
                parsed = parse(expression)
            except Exception as exc:
                raise _HelmFailure(f"failed parsing {flag} data: {exc}") from None
            merged = _merge_maps(merged, parsed)
    return merged


def _merge_maps(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_maps(out[key], value)
        else:
            out[key] = value
    return out


def _render_with_sdk(chart: str, user_values: dict[str, Any], release: str, namespace: str) -> dict[str, str]:
    sdk = _helm_sdk()
    try:
        with sdk.Chart.load(chart) as loaded:
            _check_dependencies(loaded)
            return dict(loaded.render(user_values, name=release, namespace=namespace, revision=1, is_install=True))
    except sdk.HelmError as exc:
        raise _HelmFailure(str(exc)) from None


def _check_dependencies(loaded: Any) -> None:
    """``helm template``'s check before rendering (action.CheckDependencies), in its words."""
    wanted = [d.get("alias") or d.get("name") for d in loaded.metadata.get("dependencies") or []]
    have = {d.get("name") for d in loaded.dependencies}
    missing = [name for name in wanted if name and name not in have]
    if missing:
        raise _HelmFailure("found in Chart.yaml, but missing in charts/ directory: " + ", ".join(missing))


def _render_with_binary(chart: str, values: HelmValues, namespace: str) -> dict[str, str]:
    import shutil

    helm = shutil.which("helm")
    if helm is None:
        raise _NoEngine
    command = [helm, "template", values.release_name, chart, "--namespace", namespace]
    for path in values.files:
        command += ["--values", path]
    for flag, expressions in (("--set", values.set), ("--set-string", values.set_string),
                              ("--set-file", values.set_file)):
        for expression in expressions:
            command += [flag, expression]
    ok, out = _run(command)
    if not ok:
        raise _HelmFailure(out)
    # helm prints each template's output after a `# Source: <chart>/templates/<file>` line.
    rendered: dict[str, str] = {}
    current = None
    for line in out.splitlines(keepends=True):
        if line.startswith("# Source: "):
            current = line[len("# Source: "):].strip()
            if rendered.get(current):
                rendered[current] += "---\n"  # the template's next document
            rendered.setdefault(current, "")
        elif current is not None:
            rendered[current] += line
    return rendered
