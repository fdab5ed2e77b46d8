"""The upstream reference data is had on any machine: found beside the repository, or downloaded, checked and cached.

A clean clone on a fresh CI machine has no ../shared/upstream; the cross-checks against the released CRDs must then
download them rather than skip. These tests serve the reference files from a local mirror laid out as
raw.githubusercontent.com lays them out (owner/name/commit/path), point the lookup at an empty folder, and check what
it does: downloads every pinned file, keeps it in the cache, reads it offline next time, refuses altered bytes, and
skips, saying why, only when the host cannot be reached.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from . import upstream


@pytest.fixture
def reference() -> Path:
    """The reference files as the cross-checks get them (beside the repository, or downloaded and cached)."""
    return upstream.require_upstream()


def test_every_reference_file_is_pinned_and_matches_its_pin(reference: Path) -> None:
    on_disk = {str(p.relative_to(reference)) for folder in {pin.release.folder for pin in upstream.PINNED}
               for p in (reference / folder).glob("*/*.yaml")}
    assert on_disk == {pin.relative for pin in upstream.PINNED}
    for pin in upstream.PINNED:
        assert hashlib.sha256((reference / pin.relative).read_bytes()).hexdigest() == pin.sha256, pin.relative


def test_pins_name_the_tagged_commits_and_the_crd_folders() -> None:
    """The URLs are the raw files at the release's commit, where the repository keeps its CRDs."""
    pin = next(p for p in upstream.PINNED if p.name.endswith("_httproutes.yaml") and p.channel == "standard")
    assert pin.url() == ("https://raw.githubusercontent.com/kubernetes-sigs/gateway-api/"
                         "8bb74df00e56ec8f944d48c25e6c1c9c2f6848e3/config/crd/standard/"
                         "gateway.networking.k8s.io_httproutes.yaml")


@pytest.fixture
def mirror(reference: Path, tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """(base URL, served folder, paths requested): the reference files at their upstream paths, over HTTP."""
    served = tmp_path / "served"
    for pin in upstream.PINNED:
        target = served / pin.url("").lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((reference / pin.relative).read_bytes())
    requested: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            requested.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served, requested
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fresh_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No reference folder (KNETSIM_UPSTREAM names an empty one), an empty cache; yields the cache folder."""
    empty, cache = tmp_path / "empty", tmp_path / "cache"
    empty.mkdir()
    monkeypatch.setenv("KNETSIM_UPSTREAM", str(empty))
    monkeypatch.setenv("KNETSIM_UPSTREAM_CACHE", str(cache))
    upstream._resolved.cache_clear()
    yield cache
    upstream._resolved.cache_clear()


def test_a_fresh_machine_downloads_checks_and_caches_the_files(
        reference: Path, mirror: tuple[str, Path, list[str]], fresh_machine: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    base, _, requested = mirror
    monkeypatch.setenv("KNETSIM_UPSTREAM_URL", base)
    assert upstream.require_upstream() == fresh_machine
    assert len(requested) == len(upstream.PINNED)
    for pin in upstream.PINNED:
        assert (fresh_machine / pin.relative).read_bytes() == (reference / pin.relative).read_bytes()
    # what the cross-checks read is the same as from the reference folder
    assert upstream._parsed(fresh_machine, upstream.STANDARD).keys() == upstream._parsed(
        reference, upstream.STANDARD).keys()

    # the next run reads the cache: nothing is asked of the network
    upstream._resolved.cache_clear()
    monkeypatch.setenv("KNETSIM_UPSTREAM_URL", "http://127.0.0.1:9")
    assert upstream.require_upstream() == fresh_machine
    assert len(requested) == len(upstream.PINNED)


def test_a_download_that_is_not_the_released_file_fails_rather_than_skips(
        mirror: tuple[str, Path, list[str]], fresh_machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, served, _ = mirror
    pin = upstream.PINNED[3]
    (served / pin.url("").lstrip("/")).write_bytes(b"apiVersion: v1\nkind: List\nitems: []\n")
    monkeypatch.setenv("KNETSIM_UPSTREAM_URL", base)
    with pytest.raises(AssertionError, match=f"{pin.name}: sha256 [0-9a-f]{{64}}, pinned {pin.sha256}"):
        upstream.require_upstream()
    assert not (fresh_machine / pin.relative).exists()


def test_a_missing_file_upstream_fails_rather_than_skips(
        mirror: tuple[str, Path, list[str]], fresh_machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, served, _ = mirror
    (served / upstream.PINNED[0].url("").lstrip("/")).unlink()
    monkeypatch.setenv("KNETSIM_UPSTREAM_URL", base)
    with pytest.raises(AssertionError, match="HTTP 404"):
        upstream.require_upstream()


def test_an_unreachable_network_skips_saying_why(fresh_machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nobody listens on: connection refused, at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("KNETSIM_UPSTREAM_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(pytest.skip.Exception, match="network is unreachable to download them"):
        upstream.require_upstream()
    assert upstream.upstream_dir() is None
