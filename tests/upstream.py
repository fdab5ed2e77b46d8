"""Where the upstream reference data is (test data only): the released CRDs our API definitions are checked against.

Looked for, in order: the folder KNETSIM_UPSTREAM names; ../shared/upstream beside the repository (or beside the
main checkout, for a git worktree). A folder counts only if it holds every file pinned below. Where none does (a
clean clone on a fresh CI machine), the pinned files are downloaded from their tagged upstream commits, each checked
against the sha256 pinned here, and kept in a cache outside the repository ($XDG_CACHE_HOME or ~/.cache, under
knetsim-tests/upstream; KNETSIM_UPSTREAM_CACHE names another), so later runs read them offline. Tests that need the
data skip, saying why, only where it cannot be had: the network is unreachable. A download whose bytes differ from
the pin fails the test: the comparison would otherwise run against something nobody reviewed.

KNETSIM_UPSTREAM_URL replaces https://raw.githubusercontent.com (a mirror; the tests of this module serve one).
"""

from __future__ import annotations

import copy
import hashlib
import http.client
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
RAW = "https://raw.githubusercontent.com"
TIMEOUT = 10.0  # seconds per file: an unreachable network should cost a skip, not minutes


@dataclass(frozen=True)
class Release:
    folder: str  # the folder under the reference data, named after the release
    repository: str  # owner/name on GitHub
    tag: str
    commit: str  # what the tag points at (checked against a clone of the repository): raw files are fetched by it


GATEWAY = Release("gateway-api-v1.6.1", "kubernetes-sigs/gateway-api", "v1.6.1",
                  "8bb74df00e56ec8f944d48c25e6c1c9c2f6848e3")
CNP = Release("network-policy-api-v0.2.0", "kubernetes-sigs/network-policy-api", "v0.2.0",
              "a17adecd0316b8ff1c3f83939ec0441d68cd6cce")
ANP = Release("network-policy-api-v0.1.8", "kubernetes-sigs/network-policy-api", "v0.1.8",
              "5a62954284765fb16f2e601f11907ca0b839b89f")


@dataclass(frozen=True)
class Pinned:
    release: Release
    channel: str  # standard | experimental: config/crd/<channel>/ upstream, <folder>/<channel>/ here
    name: str
    sha256: str

    @property
    def relative(self) -> str:
        return f"{self.release.folder}/{self.channel}/{self.name}"

    def url(self, base: str = RAW) -> str:
        release = self.release
        return f"{base.rstrip('/')}/{release.repository}/{release.commit}/config/crd/{self.channel}/{self.name}"


def _pins(release: Release, channel: str, files: dict[str, str]) -> tuple[Pinned, ...]:
    return tuple(Pinned(release, channel, name, digest) for name, digest in files.items())


_G = "gateway.networking.k8s.io_"
_X = "gateway.networking.x-k8s.io_"
_P = "policy.networking.k8s.io_"
# sha256 of each file as released (the same bytes as the blob at the commit above); a new release is a new folder.
PINNED: tuple[Pinned, ...] = (
    *_pins(GATEWAY, "standard", {
        f"{_G}backendtlspolicies.yaml": "0d48c9e4b53dd9510cf615b9b1192d9d7afb07a1cc0498c9515627cb1c075419",
        f"{_G}gatewayclasses.yaml": "53710048ba26f8620eed59d5e51b157ecf040daf5c6eef31a4b991e0808c4be5",
        f"{_G}gateways.yaml": "25b885f5870b8fff1ae82efa2628b2761cef3745900c2aecf8fb76629a01255a",
        f"{_G}grpcroutes.yaml": "53a8d029da8f07e55d3fa58a5cf6de5950dab19fbb8d6a8082fb5e51ca5ef6fc",
        f"{_G}httproutes.yaml": "a424a0d6c953b162e71d1d97bb7e75012d8f1ac264e7274f2763d1b96ab39852",
        f"{_G}listenersets.yaml": "bf4d4b02564999b2558b96e31465129895db9b3a8adfb90adb9c80eac52a3a70",
        f"{_G}referencegrants.yaml": "8c645e9333cfa67790cc2a53e0c00076f88b2bd4230d2b49688c78bc34f9b2c3",
        f"{_G}tcproutes.yaml": "d5104d0cf30e924f5e3c9e2e76abd46876401c34ca33b9e79321523eee78c7f6",
        f"{_G}tlsroutes.yaml": "bb8b67926e5d9652cbfd2e19063b7c1d9e78806c9dd671608f57baef2f2e3bbb",
        f"{_G}udproutes.yaml": "4b80684c2bf8ef4b0a2a3ab45164ac9f96258fc69912645ff50ced595b0aa6de",
        f"{_G}vap_safeupgrades.yaml": "afb0ea1b3cc2e9344d93b0926fbe741aeb48ab4439f9f7b4b77b9ac94faf6c2e",
    }),
    *_pins(GATEWAY, "experimental", {
        f"{_G}backendtlspolicies.yaml": "7fa88a1a7d5f13f8a960e8bd48903835a0b833e0f6706f401101a27ff36aff3b",
        f"{_G}gatewayclasses.yaml": "ff653735d0477f97fb3cb2a21245f55ac6996dfe4f39969150f6989d0f1da826",
        f"{_G}gateways.yaml": "97092d53c4f61a9d1754f608ad1dc85566e197facb35d629132ff08954bd4422",
        f"{_G}grpcroutes.yaml": "edfefc338093cdef9e0e4832c8286792934d76724c41a80eee22a1be73c132c6",
        f"{_G}httproutes.yaml": "a3615d380381a768edbca2cfec067c037afa82e86bc9b1e29a0b84c8a28d76b3",
        f"{_G}listenersets.yaml": "e201afb91dc7c9a4e2b101243639a2b08fe6863f43a83921f97a5ca823ef6a2f",
        f"{_G}referencegrants.yaml": "e1d9a270f94895640db547421dfa708db2ae935a1a8c033a6cf6481274f5029e",
        f"{_G}tcproutes.yaml": "0db798d0997a254120de668fdfb1a536c296e7e99c0a20e1004bc5f6fc7d213f",
        f"{_G}tlsroutes.yaml": "c7fcddb73966fc83ad7001eff8bb910d8a640c7c1f280254e88b93541fc9a82b",
        f"{_G}udproutes.yaml": "5832d701ebe3330dc3b033dfe6aa54bff2d565939ad6e6dc2722dbe2ea1e35fb",
        f"{_G}vap_safeupgrades.yaml": "0d286059670490d68d11196604258979e0925d74d66de417b4a1a625d7cdeb00",
        f"{_X}xbackends.yaml": "d883115b918ae32d61ca6895f19f1617bf1176d4355f9a682bfb37f0dc8d6874",
        f"{_X}xbackendtrafficpolicies.yaml": "acdac07f15b3c46bfdfaded9cc2f2d654e353b340955ee559d58a86c6afebbee",
        f"{_X}xmeshes.yaml": "56be828232d98b59ded8bee49e1430623551c34cf4395a59fb97d502d9fc8b42",
    }),
    *_pins(CNP, "standard", {
        f"{_P}clusternetworkpolicies.yaml": "5df2cdcface11718bd332fd88b4cb5fb3adf63426eaffdcbef4d33aac6836bef",
    }),
    *_pins(CNP, "experimental", {
        f"{_P}clusternetworkpolicies.yaml": "995a7463dffb48b26ffb816bfec860ae1bc533bca364fda15b9f74f8c10b9882",
    }),
    *_pins(ANP, "standard", {
        f"{_P}adminnetworkpolicies.yaml": "8304b2bf9a86dd4fa10901f7ebd632cf3c32ae62d2abea79d0b21b207382d871",
        f"{_P}baselineadminnetworkpolicies.yaml": "3bf0de61e477f8f8a2cfd9bb49fc8041be39e6b10cf39ed2fec3f4c04b86b51f",
    }),
)


class Unreachable(Exception):
    """The upstream host could not be reached (no route, no DNS, a timeout): the one reason to skip."""


def _main_checkout(root: Path) -> Path:
    """The main checkout of a worktree (whose .git is a file naming .../.git/worktrees/NAME), else root."""
    git = root / ".git"
    if git.is_file():
        text = git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            if gitdir.parent.name == "worktrees":
                return gitdir.parent.parent.parent
    return root


def _complete(folder: Path) -> bool:
    return folder.is_dir() and all((folder / pin.relative).is_file() for pin in PINNED)


def local_dir() -> Path | None:
    """A folder already holding every pinned file, without touching the network."""
    wanted = os.environ.get("KNETSIM_UPSTREAM")
    candidates = [Path(wanted)] if wanted else [ROOT.parent / "shared" / "upstream",
                                                _main_checkout(ROOT).parent / "shared" / "upstream"]
    return next((c for c in candidates if _complete(c)), None)


def cache_dir() -> Path:
    wanted = os.environ.get("KNETSIM_UPSTREAM_CACHE")
    if wanted:
        return Path(wanted)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "knetsim-tests" / "upstream"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        # The host is down or busy, or a proxy on the way refuses it: as good as unreachable.
        if error.code >= 500 or error.code in (403, 407, 429):
            raise Unreachable(f"{url}: HTTP {error.code} {error.reason}") from error
        # it answered that the file is not there: a wrong pin or a moved file, which a skip would hide
        raise AssertionError(f"{url}: HTTP {error.code} {error.reason}") from error
    except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as error:  # cut off mid-way too
        raise Unreachable(f"{url}: {getattr(error, 'reason', error)}") from error


def fetch_into(folder: Path, base: str = RAW) -> Path:
    """Every pinned file under folder, downloading the missing or altered ones; each checked against its pin.

    Raises Unreachable when the network is, AssertionError when a download's bytes are not the pinned ones."""
    for pin in PINNED:
        target = folder / pin.relative
        if target.is_file() and _sha256(target.read_bytes()) == pin.sha256:
            continue
        data = _download(pin.url(base))
        got = _sha256(data)
        if got != pin.sha256:
            raise AssertionError(f"{pin.url(base)}: sha256 {got}, pinned {pin.sha256}: not the released file")
        target.parent.mkdir(parents=True, exist_ok=True)
        # written aside and renamed: no reader sees half a file, and two test runs filling one cache do not collide
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(target)
    return folder


@cache
def _resolved() -> tuple[Path | None, str]:
    found = local_dir()
    if found is not None:
        return found, ""
    try:
        return fetch_into(cache_dir(), os.environ.get("KNETSIM_UPSTREAM_URL", RAW)), ""
    except Unreachable as error:
        return None, (f"the upstream reference CRDs are not here (../shared/upstream, KNETSIM_UPSTREAM) and the "
                      f"network is unreachable to download them ({error}): this comparison needs them")


def upstream_dir() -> Path | None:
    return _resolved()[0]


def require_upstream() -> Path:
    found, reason = _resolved()
    if found is None:
        pytest.skip(reason)
    return found


def upstream_crds(*folders: str) -> dict[str, dict[str, Any]]:
    """The CustomResourceDefinitions of these folders of the reference data, by name (a copy: callers may change
    them)."""
    base = require_upstream()
    return copy.deepcopy(_parsed(base, folders))


@cache
def _parsed(base: Path, folders: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the files are megabytes: libyaml's parser if present
    out: dict[str, dict[str, Any]] = {}
    for folder in folders:
        for path in sorted((base / folder).glob("*.yaml")):
            for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    out[doc["metadata"]["name"]] = doc
    return out


@dataclass(frozen=True)
class PinnedFile:
    """One upstream file outside the CRD bundles above (another project's CRD, say), fetched by commit into the
    cache and checked against its sha256 as they are; the reference folder is not expected to hold it."""

    repository: str
    commit: str
    path: str
    sha256: str

    def url(self, base: str = RAW) -> str:
        return f"{base.rstrip('/')}/{self.repository}/{self.commit}/{self.path}"

    @property
    def relative(self) -> str:
        return f"files/{self.repository.replace('/', '+')}/{self.commit[:12]}/{Path(self.path).name}"


def pinned_text(pin: PinnedFile) -> str:
    """The file's text from the cache (downloaded there first when missing); the test skips, saying why, when the
    network is unreachable, and fails when the bytes are not the pinned ones."""
    target = cache_dir() / pin.relative
    if not (target.is_file() and _sha256(target.read_bytes()) == pin.sha256):
        try:
            data = _download(pin.url(os.environ.get("KNETSIM_UPSTREAM_URL", RAW)))
        except Unreachable as error:
            pytest.skip(f"{pin.repository}'s {pin.path} is not cached and the network is unreachable ({error})")
        if _sha256(data) != pin.sha256:
            raise AssertionError(f"{pin.url()}: sha256 {_sha256(data)}, pinned {pin.sha256}: not the released file")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(target)
    return target.read_text(encoding="utf-8")


STANDARD = ("gateway-api-v1.6.1/standard", "network-policy-api-v0.2.0/standard", "network-policy-api-v0.1.8/standard")
EXPERIMENTAL = ("network-policy-api-v0.2.0/experimental",)
