"""Which container images the nodes can pull: a deterministic registry model.

An image reference is parsed as the runtime parses it (distribution's reference grammar: a
registry host, a lowercase repository path, a tag or a digest; ``nginx`` is
``docker.io/library/nginx:latest``), then checked:

* an unparsable reference (``Nginx:1.27``, ``web app``) is ``InvalidImageName``, and the kubelet
  never tries to pull it;
* ``docker.io/library/*`` (Docker Hub's official images) is checked against the repositories and
  tags the official-images library has published (``knetsim/data/registry``): an unknown
  repository is containerd's ``pull access denied``, an unknown tag its ``not found``;
* a registry the cluster config lists under ``images.unreachableRegistries`` answers nothing
  (``dial tcp: lookup HOST ...: no such host``);
* anything else (other Docker Hub namespaces, registry.k8s.io, quay.io, ghcr.io, a private
  registry) is assumed to have the image: knetsim cannot know better, and an invented failure
  would be a wrong answer.

An image listed under ``images.preloaded`` is on every node already (``kind load docker-image``):
with ``imagePullPolicy`` IfNotPresent or Never it needs no pull at all. ``Never`` with an image
that is not preloaded is ``ErrImageNeverPull``.

The messages are the ones a kind node (containerd 2) gives the kubelet, which puts them in the
container's ``state.waiting.message`` and its ``Failed`` events.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from .config import ClusterConfig

DEFAULT_REGISTRY = "docker.io"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_DOMAIN = re.compile(r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
                     r"(?::[0-9]+)?|\[[0-9a-fA-F:]+\](?::[0-9]+)?")


@dataclass(frozen=True, slots=True)
class ImageRef:
    registry: str
    repository: str  # "library/nginx"
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        """The fully qualified reference containerd reports: ``docker.io/library/nginx:1.27``."""
        ref = f"{self.registry}/{self.repository}"
        if self.tag:
            ref += f":{self.tag}"
        if self.digest:
            ref += f"@{self.digest}"
        return ref


@dataclass(frozen=True, slots=True)
class PullError:
    """Why a container's image cannot be had: the kubelet's waiting reason and message."""

    reason: str  # ErrImagePull | InvalidImageName | ErrImageNeverPull
    message: str  # state.waiting.message (and, for ErrImagePull, what the Failed event quotes)
    cause: str  # the registry model's explanation, for findings


class InvalidReference(ValueError):
    pass


def parse_reference(image: str) -> ImageRef:
    """distribution's ``ParseNormalizedNamed``, with its error texts."""
    if not image or image != image.strip() or any(c.isspace() for c in image):
        raise InvalidReference("invalid reference format")
    rest: str = image
    digest: str | None = None
    if "@" in image:
        rest, digest = image.split("@", 1)
    tag = None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
    first, _, remainder = rest.partition("/")
    # distribution's splitDockerDomain: the first component is a registry host when it looks like one.
    if remainder and ("." in first or ":" in first or first == "localhost" or first.lower() != first):
        registry, path = first, remainder
    else:
        registry, path = DEFAULT_REGISTRY, rest
    if registry == DEFAULT_REGISTRY and "/" not in path:
        path = f"library/{path}"
    if registry != DEFAULT_REGISTRY and not _DOMAIN.fullmatch(registry):
        raise InvalidReference("invalid reference format")
    if path.lower() != path:
        raise InvalidReference(f"invalid reference format: repository name ({path}) must be lowercase")
    if not _PATH.fullmatch(path) or len(f"{registry}/{path}") > 255:
        raise InvalidReference("invalid reference format")
    if tag is not None and not _TAG.fullmatch(tag):
        raise InvalidReference("invalid reference format")
    if digest is not None and not _DIGEST.fullmatch(digest):
        raise InvalidReference("invalid digest format" if ":" in digest else "invalid reference format")
    if registry == "index.docker.io":
        registry = DEFAULT_REGISTRY
    return ImageRef(registry, path, tag if tag is not None or digest is not None else "latest", digest)


class _Library(Mapping[str, frozenset[str]]):
    """Repository → tags, decompressed once and parsed per repository on first use: a pod's image check
    touches a handful of repositories, not the ~170 the file lists (parsing all cost 0.3 s per run, and
    even indexing them all is a cold start's tenth: a repository's lines are found when it is asked for)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._parsed: dict[str, frozenset[str]] = {}
        self._spans: dict[str, tuple[int, int]] | None = None

    def _span(self, repo: str) -> tuple[int, int] | None:
        # A repository is a line without a space; its tags follow, up to the next repository.
        head = self._text.find(f"\n{repo}\n")
        if head < 0 or not repo or " " in repo:
            return None
        start = head + len(repo) + 2
        after = _REPO_LINE.search(self._text, start)
        return start, after.start() if after is not None else len(self._text)

    def __getitem__(self, repo: str) -> frozenset[str]:
        tags = self._parsed.get(repo)
        if tags is None:
            span = self._span(repo)
            if span is None:
                raise KeyError(repo)
            out, prev = [], ""
            for line in self._text[span[0]:span[1]].splitlines():
                if line and not line.startswith("#"):
                    n, _, suffix = line.partition(" ")
                    prev = prev[:int(n)] + suffix
                    out.append(prev)
            tags = self._parsed[repo] = frozenset(out)
        return tags

    def __contains__(self, repo: object) -> bool:
        return isinstance(repo, str) and (repo in self._parsed or self._span(repo) is not None)

    def _all(self) -> dict[str, tuple[int, int]]:
        if self._spans is None:
            heads = [(m.group(1), m.start(), m.end()) for m in _REPO_LINE.finditer(self._text)]
            self._spans = {name: (end, heads[i + 1][1] if i + 1 < len(heads) else len(self._text))
                           for i, (name, _, end) in enumerate(heads)}
        return self._spans

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


_REPO_LINE = re.compile(r"^([^\s#][^ \n]*)\n", re.M)
_DATA = Path(__file__).resolve().parent.parent / "data" / "registry" / "docker-library-tags.txt.xz"


@cache
def official_images() -> Mapping[str, frozenset[str]]:
    """Repository → tags of Docker Hub's official images (see knetsim/data/registry/README.md)."""
    import lzma  # only a cluster that pulls a Docker Hub official image needs the library

    return _Library(lzma.decompress(_DATA.read_bytes()).decode())


def _registry_host(registry: str) -> str:
    return "registry-1.docker.io" if registry == DEFAULT_REGISTRY else registry


def _unpack_error(ref: ImageRef, detail: str) -> str:
    return f'failed to pull and unpack image "{ref.name}": failed to resolve reference "{ref.name}": {detail}'


def pull_error(image: str, config: ClusterConfig, pull_policy: str = "IfNotPresent") -> PullError | None:
    """Why ``image`` cannot be pulled on this cluster's nodes, or None when it can."""
    # Memoised: 10,000 pods share a few dozen images.
    return _pull_error(image, pull_policy, tuple(config.preloaded_images), tuple(config.unreachable_registries),
                       tuple(config.upstream_nameservers))


@lru_cache(maxsize=4096)
def _pull_error(image: str, pull_policy: str, preloaded_images: tuple[str, ...],
                unreachable_registries: tuple[str, ...], upstream_nameservers: tuple[str, ...]) -> PullError | None:
    config = _RegistryView(preloaded_images, unreachable_registries, upstream_nameservers)
    try:
        ref = parse_reference(image)
    except InvalidReference as exc:
        return PullError("InvalidImageName", f'Failed to apply default image tag "{image}": couldn\'t parse image '
                                             f'name "{image}": {exc}', f"{image!r} is not a valid image reference "
                                                                       f"({exc})")
    preloaded = any(_same_image(ref, p) for p in config.preloaded_images)
    if preloaded and pull_policy != "Always":
        return None
    if pull_policy == "Never":
        return PullError("ErrImageNeverPull", f'Container image "{image}" is not present with pull policy of '
                                              "Never", f"{image} is not preloaded on the nodes and the pull policy "
                                                       "is Never")
    host = ref.registry
    if host in config.unreachable_registries:
        nameserver = config.upstream_nameservers[0] if config.upstream_nameservers else "127.0.0.53"
        bare = host.split(":", 1)[0]
        path = ref.repository
        ref_part = ref.digest or ref.tag or "latest"
        detail = (f'failed to do request: Head "https://{host}/v2/{path}/manifests/{ref_part}": dial tcp: lookup '
                  f"{bare} on {nameserver}:53: no such host")
        return PullError("ErrImagePull", "rpc error: code = Unknown desc = " + _unpack_error(ref, detail),
                         f"the registry {host} is unreachable from the nodes (cluster config)")
    if host != DEFAULT_REGISTRY or not ref.repository.startswith("library/"):
        return None
    name = ref.repository.removeprefix("library/")
    known = official_images()
    if name not in known:
        detail = ("pull access denied, repository does not exist or may require authorization: server message: "
                  "insufficient_scope: authorization failed")
        hint = _close(name, known)
        return PullError("ErrImagePull", "rpc error: code = Unknown desc = " + _unpack_error(ref, detail),
                         f"docker.io has no official image {name!r}" + (f" (did you mean {hint!r}?)" if hint else ""))
    if ref.digest is None and ref.tag not in known[name]:
        detail = f"{ref.name}: not found"
        hint = _close(ref.tag or "", {t: frozenset() for t in known[name]})
        return PullError("ErrImagePull", "rpc error: code = NotFound desc = " + _unpack_error(ref, detail),
                         f"{name} has no tag {ref.tag!r}" + (f" (did you mean {hint!r}?)" if hint else ""))
    return None


@dataclass(frozen=True)
class _RegistryView:
    """The part of the cluster config the registry model reads (hashable, so results can be memoised)."""

    preloaded_images: tuple[str, ...]
    unreachable_registries: tuple[str, ...]
    upstream_nameservers: tuple[str, ...]


def _same_image(ref: ImageRef, listed: str) -> bool:
    try:
        other = parse_reference(listed)
    except InvalidReference:
        return False
    return (other.registry, other.repository, other.tag, other.digest) == (ref.registry, ref.repository, ref.tag,
                                                                           ref.digest)


def _close(word: str, choices: dict[str, frozenset[str]]) -> str | None:
    import difflib

    hits = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.8)
    return hits[0] if hits else None
