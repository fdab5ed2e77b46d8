"""Any request, for any served kind and verb: never a 5xx, never a traceback, and whatever got stored reads back.

A property-based test (hypothesis) sends random requests to an in-process server: every served kind,
every verb (create, replace, the four patch types, delete with random DeleteOptions, deletecollection,
get, list and watch with random query parameters), bodies from valid templates with parts replaced by
arbitrary JSON. The state directory is shared by the examples (each one a restart of the server), so
what one example stored the next one reads and changes. Asserted: no answer is a 5xx, no log record
carries a traceback, every stored object is served as JSON and as kubectl's Table; at the end the real
kubectl lists every kind of that store, as a table and as JSON. Bounded for CI (about a minute).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knetsim.apiserver.resources import BY_KIND, RESOURCES
from knetsim.apiserver.server import ApiServer
from knetsim.daemon.daemon import bring_up

from .conftest import KUBECTL, Live, start_server, stop_server
from .fuzzing import JSON, TEMPLATES, paths_in

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
EXAMPLES = int(os.environ.get("KNETSIM_FUZZ_EXAMPLES", "30"))  # CI bound; raise it to hunt locally
NAMES = ["a", "b", "web"]
QUERY_VALUES = st.sampled_from(["", "0", "1", "-1", "x", "All", "Strict", "Warn", "Ignore", "Orphan", "Exact",
                                "NotOlderThan", "true", "a=b", "a in (b", "metadata.name=a", "!!", "%00",
                                "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0", "99999999999999999999"])
QUERY_KEYS = st.sampled_from(["limit", "continue", "resourceVersion", "resourceVersionMatch", "labelSelector",
                              "fieldSelector", "timeoutSeconds", "dryRun", "fieldManager", "fieldValidation",
                              "propagationPolicy", "gracePeriodSeconds", "orphanDependents", "includeObject",
                              "force", "allowWatchBookmarks", "sendInitialEvents"])


def _template(kind: str, name: str) -> dict[str, Any]:
    if kind in TEMPLATES:
        body = copy.deepcopy(TEMPLATES[kind][1])
    else:
        r = BY_KIND[kind]
        body = {"apiVersion": r.api_version, "kind": kind, "metadata": {}, "spec": {}}
    body["metadata"]["name"] = name
    return body


# What the fuzzed (CNI-less) cluster serves: Calico's and Antrea's kinds are served only where cni: names them.
FUZZED = sorted((r for r in RESOURCES if r.served_with(None)), key=lambda x: (x.kind, x.version))


@st.composite
def request(draw: st.DrawFn) -> tuple[str, str, str, bytes]:
    r = draw(st.sampled_from(FUZZED))
    name = draw(st.sampled_from(NAMES))
    body: Any = _template(r.kind, name)
    body["apiVersion"] = r.api_version
    for _ in range(draw(st.integers(0, 2))):
        paths = [p for p in paths_in(body) if p[:2] != ("metadata", "name") and p[0] not in ("apiVersion", "kind")]
        if paths:
            target = draw(st.sampled_from(paths))
            node = body
            for p in target[:-1]:
                node = node[p]
            node[target[-1]] = draw(JSON)
    if draw(st.integers(0, 9)) == 0:
        body = draw(JSON)  # not even an object
    params = draw(st.lists(st.tuples(QUERY_KEYS, QUERY_VALUES), max_size=3))
    query = "&".join(f"{k}={v}" for k, v in params)
    collection = r.path("default")
    item = r.path("default", name)
    verb = draw(st.sampled_from(["create", "replace", "merge", "json", "strategic", "apply", "delete",
                                 "deletecollection", "get", "list", "watch", "status"]))
    data = json.dumps(body).encode()

    def q(path: str, extra: str = "") -> str:
        # What the request needs comes first: of a parameter given twice, the first counts.
        parts = [p for p in (extra, query) if p]
        return path + ("?" + "&".join(parts) if parts else "")

    if verb == "create":
        return "POST", q(collection), "application/json", data
    if verb == "replace":
        return "PUT", q(item), "application/json", data
    if verb == "status":
        return "PUT", q(item + "/status"), "application/json", data
    if verb in ("merge", "strategic"):
        return "PATCH", q(item), f"application/{verb}-merge-patch+json".replace("merge-merge", "merge"), data
    if verb == "apply":
        return "PATCH", q(item, "fieldManager=fuzz"), "application/apply-patch+yaml", data
    if verb == "json":
        op = [{"op": draw(st.sampled_from(["add", "replace", "remove", "test", "move", "copy"])),
               "path": draw(st.sampled_from(["/spec", "/metadata/labels", "/data", "/status", "/spec/x", "",
                                             "/metadata/name", "/-"])),
               "from": "/metadata", "value": draw(JSON)}]
        return "PATCH", q(item), "application/json-patch+json", json.dumps(op).encode()
    if verb == "delete":
        options = draw(st.one_of(st.just(b""), JSON.map(lambda v: json.dumps(v).encode()),
                                 st.fixed_dictionaries({}, optional={
                                     "dryRun": JSON, "preconditions": JSON, "propagationPolicy": JSON,
                                     "gracePeriodSeconds": JSON, "orphanDependents": JSON,
                                 }).map(lambda v: json.dumps(v).encode())))
        return "DELETE", q(item), "application/json", options
    if verb == "deletecollection":
        return "DELETE", q(collection), "application/json", b""
    if verb == "get":
        return "GET", q(item), draw(st.sampled_from(["", TABLE])), b""
    if verb == "list":
        return "GET", q(r.path()), draw(st.sampled_from(["", TABLE])), b""
    return "GET", q(collection, "watch=1&timeoutSeconds=-1"), draw(st.sampled_from(["", TABLE])), b""


class Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


async def _run(state: Path, requests: list[tuple[str, str, str, bytes]]) -> list[str]:
    server = ApiServer(state)
    manager = bring_up(server)
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    problems: list[str] = []
    try:
        for method, path, ctype, data in requests:
            headers = {"Content-Type": ctype} if method != "GET" else ({"Accept": ctype} if ctype else {})
            resp = await client.request(method, path, data=data or None, headers=headers,
                                        timeout=aiohttp.ClientTimeout(total=60))
            text = await resp.text()
            if resp.status >= 500:
                problems.append(f"{method} {path} {data[:200]!r}: {resp.status} {text[:300]}")
        await server.settle()
        for key in sorted(server.store.objects):
            r = BY_KIND.get(key[0])
            if r is None or key[0] == "Event":
                continue
            for accept in ("application/json", TABLE):
                resp = await client.get(r.path(key[1], key[2]), headers={"Accept": accept})
                if resp.status != 200:
                    problems.append(f"{key} as {accept}: {resp.status} {(await resp.text())[:300]}")
        return problems
    finally:
        await client.close()
        await manager.close()
        await server.close()


# One valid object of each templated kind: the store the fuzz starts from, so that the read-back test below has
# objects to read whether or not the fuzz ran first (run alone, with -k or --lf, it would otherwise be empty).
SEED = [("POST", path, "application/json", json.dumps(body).encode()) for path, body in TEMPLATES.values()]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # The CEL library raises the recursion limit when its environment is first made; made here, before
    # hypothesis notes the limit of each example (it warns when an example changed it).
    from knetsim.model.cel import compile_rule

    compile_rule("true")
    path = tmp_path_factory.mktemp("fuzz")
    problems = asyncio.run(_run(path, SEED))
    assert not problems, "\n".join(problems)
    yield path


@pytest.fixture(scope="module")
def tracebacks() -> Iterator[Tracebacks]:
    handler = Tracebacks()
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.lists(request(), min_size=1, max_size=10))
def test_no_request_is_a_5xx_or_a_traceback(store: Path, tracebacks: Tracebacks,
                                            requests: list[tuple[str, str, str, bytes]]) -> None:
    problems = asyncio.run(_run(store, requests))
    assert not problems, "\n".join(problems)
    assert not tracebacks.records, [f"{r.name}: {r.getMessage()}" for r in tracebacks.records]


def _stored(store: Path) -> set[tuple[str, str, str]]:
    """The (kind, namespace, name) of every object in the store's database (the daemon may be running)."""
    with closing(sqlite3.connect(store / "store.db")) as db:
        return {(k, ns, name) for k, ns, name in db.execute("SELECT kind, namespace, name FROM objects")}


def test_kubectl_reads_back_every_kind_the_fuzz_stored(store: Path, tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    # The fuzz may have deleted every object of a kind (a deletecollection): seed again, so that each templated
    # kind has an object to read back (an object still there answers 409, which is no problem).
    problems = asyncio.run(_run(store, SEED))
    assert not problems, "\n".join(problems)
    proc, info = start_server(store)
    try:
        live = Live(store, tmp_path, proc, info)
        assert {key[0] for key in _stored(store)} >= set(TEMPLATES), "the seeded store lost a kind"
        for kind in sorted(k for k, r in BY_KIND.items() if r.served_with(None)):  # the CNI-less cluster's
            plural = BY_KIND[kind].plural + (f".{BY_KIND[kind].group}" if BY_KIND[kind].group else "")
            table = live.kubectl("get", plural, "-A", check=False)
            assert table.returncode == 0 and "Error" not in table.stderr, (kind, table.stderr)
            before = {(ns, name) for k, ns, name in _stored(store) if k == kind}
            listed = live.kubectl("get", plural, "-A", "-o", "json", check=False)
            assert listed.returncode == 0, (kind, listed.stderr)
            answer = json.loads(listed.stdout)
            assert answer["kind"] == "List"
            served = {(i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in answer["items"]}
            # Stored before the list and still stored after it, yet not listed: an object kubectl cannot read
            # back (the controllers may create or delete objects meanwhile; those do not count).
            after = {(ns, name) for k, ns, name in _stored(store) if k == kind}
            assert not (before & after) - served, (kind, sorted((before & after) - served))
        log = (store.parent / f"{store.name}.log").read_text()
        assert "Traceback" not in log, log[-3000:]
    finally:
        stop_server(proc)
