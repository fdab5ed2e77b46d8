"""Admission against `knetsim up`, with the real kubectl and raw requests.

Given a running server, then: kubectl's default refuses an unknown field as a real server does,
--validate=warn and =false store the object without it, ill-typed bodies get the decoder's 400,
nothing ill-formed is ever stored, and watches answer as kube-apiserver's watch cache does.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import Live, start_server, stop_server

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

SERVICE = """apiVersion: v1
kind: Service
metadata: {name: typo}
spec:
  selectr: {app: web}
  ports: [{port: 80}]
"""


def test_kubectl_apply_refuses_an_unknown_field_as_a_real_server_does(live: Live, tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE)
    proc = live.kubectl("apply", "-f", str(path), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f'Error from server (BadRequest): error when creating "{path}": Service in version '
                                   '"v1" cannot be handled as a Service: strict decoding error: unknown field '
                                   '"spec.selectr"')
    assert live.kubectl("get", "svc", "typo", check=False).returncode == 1  # nothing stored


def test_validate_warn_and_false_store_the_object_without_the_field(live: Live, tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(SERVICE)
    warned = live.kubectl("apply", "-f", str(path), "--validate=warn")
    assert warned.stderr.strip() == 'Warning: unknown field "spec.selectr"'
    spec = json.loads(live.kubectl("get", "svc", "typo", "-o", "json").stdout)["spec"]
    assert "selectr" not in spec and "selector" not in spec
    live.kubectl("delete", "svc", "typo")
    quiet = live.kubectl("apply", "-f", str(path), "--validate=false")
    assert quiet.stderr.strip() == ""
    live.kubectl("delete", "svc", "typo")


def test_a_json_patch_to_null_decodes_as_go_then_defaulting_fills_it(live: Live) -> None:
    live.kubectl("create", "deployment", "nulls", "--image=nginx:1.27", "--replicas=3")
    try:
        live.kubectl("patch", "deploy", "nulls", "--type=json",
                     "-p", '[{"op":"replace","path":"/spec/replicas","value":null}]')
        assert live.kubectl("get", "deploy", "nulls", "-o", "jsonpath={.spec.replicas}").stdout == "1"
        bad = live.kubectl("patch", "deploy", "nulls", "--type=json",
                           "-p", '[{"op":"replace","path":"/spec/replicas","value":"3"}]', check=False)
        assert bad.stderr.strip() == ('Error from server (BadRequest): Deployment in version "v1" cannot be handled '
                                      'as a Deployment: json: cannot unmarshal string into Go struct field '
                                      'DeploymentSpec.spec.replicas of type int32')
        huge = live.kubectl("patch", "deploy", "nulls", "--type=merge", "-p", '{"spec":{"replicas":99999999999}}',
                            check=False)
        assert "cannot unmarshal number 99999999999 into Go struct field DeploymentSpec.spec.replicas of type " \
               "int32" in huge.stderr
        # The controllers still converge, and a new Deployment still gets its pods.
        live.kubectl("create", "deployment", "after", "--image=nginx:1.27")
        live.kubectl("rollout", "status", "deploy/after", "--timeout=20s")
    finally:
        live.kubectl("delete", "deploy", "nulls", "after", check=False)


@pytest.mark.parametrize(("path", "body", "code", "message"), [
    pytest.param("/api/v1/namespaces/default/configmaps",
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": 5}, 400,
                 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go '
                 'struct field ConfigMap.data of type map[string]string', id="data a number"),
    pytest.param("/api/v1/namespaces/default/configmaps",
                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "ownerReferences": 5}}, 400,
                 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go '
                 'struct field ObjectMeta.metadata.ownerReferences of type []v1.OwnerReference', id="owners a number"),
    pytest.param("/api/v1/namespaces/default/events",
                 {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "../x"},
                  "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}, 422,
                 'Event "../x" is invalid: metadata.name: Invalid value: "../x": may not contain \'/\'',
                 id="event name a path"),
    pytest.param("/api/v1/namespaces/default/services",
                 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                  "spec": {"ports": [{"port": 4294967376}]}}, 400,
                 'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal number 4294967376 '
                 'into Go struct field ServicePort.spec.ports.port of type int32', id="port beyond int32"),
])
def test_ill_typed_bodies_are_refused_never_stored(live: Live, path: str, body: dict, code: int, message: str) -> None:
    got, status = live.request("POST", path + "?fieldValidation=Strict", body)
    assert (got, status["message"]) == (code, message)
    name = body["metadata"]["name"]
    assert live.request("GET", f"{path}/{name}")[0] == 404
    assert live.kubectl("get", path.rsplit("/", 1)[1]).returncode == 0  # the kind still lists


def test_duplicate_json_keys_are_strict_errors(live: Live) -> None:
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"e"}}'
    code, status = live.request("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", raw)
    assert (code, status["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict '
                                              'decoding error: duplicate field "metadata.name"')


def test_a_yaml_alias_bomb_in_a_body_is_a_400(live: Live) -> None:
    bomb = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a ["lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghij":
        bomb += f"  {name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    code, status = live.request("POST", "/api/v1/namespaces/default/configmaps", bomb.encode(), "application/yaml")
    assert (code, status["message"]) == (400, "the request body could not be decoded: yaml: document contains "
                                              "excessive aliasing")
    deep = b"[" * 20000 + b"]" * 20000
    code, status = live.request("POST", "/api/v1/namespaces/default/configmaps", deep)
    assert (code, status["message"]) == (400, "the request body could not be decoded: exceeded max depth")


# --- watches --------------------------------------------------------------------------------


def _raw(live: Live, path: str, timeout: float = 10) -> tuple[int, list[dict]]:
    req = urllib.request.Request(live.url + path, headers={"Authorization": f"Bearer {live.token}"})
    ctx = ssl.create_default_context(cafile=str(live.state / "serving.crt"))
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            return resp.status, [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    except urllib.error.HTTPError as exc:
        return exc.code, [json.loads(exc.read())]


def test_a_watch_from_a_future_resource_version_is_too_large(live: Live) -> None:
    current = int(live.request("GET", "/api/v1/namespaces")[1]["metadata"]["resourceVersion"])
    started = time.monotonic()
    code, [status] = _raw(live, f"/api/v1/pods?watch=true&resourceVersion={current + 10_000}")
    assert code == 504 and time.monotonic() - started >= 2.5  # the watch cache waits 3 s for freshness
    assert status["reason"] == "Timeout"
    assert status["message"] == f"Timeout: Too large resource version: {current + 10_000}, current: {current}"
    assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}]


@pytest.mark.parametrize(("value", "message"), [
    ("abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
    ("99999999999999999999", 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
])
def test_timeout_seconds_is_parsed_as_the_server_parses_it(live: Live, value: str, message: str) -> None:
    code, [status] = _raw(live, f"/api/v1/pods?watch=true&timeoutSeconds={value}")
    assert (code, status["message"]) == (400, message)


def test_a_negative_timeout_ends_the_watch_at_once(live: Live) -> None:
    started = time.monotonic()
    code, events = _raw(live, "/api/v1/namespaces?watch=true&timeoutSeconds=-1")
    assert code == 200 and time.monotonic() - started < 2
    assert {e["type"] for e in events} == {"ADDED"}


# --- the state directory ----------------------------------------------------------------------


def test_the_state_directory_is_private(live: Live) -> None:
    assert stat.S_IMODE(live.state.stat().st_mode) == 0o700
    loose = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in live.state.iterdir()
             if stat.S_IMODE(p.stat().st_mode) & 0o077}
    assert loose == {}
    assert {"store.db", "store.db-wal", "kubeconfig", "token", "lock"} <= {p.name for p in live.state.iterdir()}


def _knetsim(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", "import sys; from knetsim.cli.main import main; sys.exit(main())",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_three_concurrent_ups_give_one_server_and_two_refusals(tmp_path: Path) -> None:
    """One daemon wins the state directory's lock; the other two `up`s say so (a refusal while the winner
    starts, "already running" with the winner's PID once it is ready) and start nothing."""
    state = tmp_path / "state"
    env = {**os.environ, "HOME": str(tmp_path)}
    procs = [_knetsim("up", "--port", "0", "--state", str(state), env=env) for _ in range(3)]
    results = [(p.wait(60), *p.communicate()) for p in procs]
    try:
        started = [out for code, out, _ in results if code == 0 and out.startswith("export KUBECONFIG=")]
        assert len(started) >= 1
        status = _knetsim("status", "--state", str(state), "-o", "json", env=env)
        info = json.loads(status.communicate()[0])
        assert info["running"] is True
        others = [err for _, _, err in results if "already running" in err or "error:" in err]
        assert len(others) == 2
        for err in others:
            assert f"error: the state directory {state.resolve()} is in use by another knetsim daemon (pid " \
                   f"{info['pid']})" in err or f"# already running (pid {info['pid']})" in err
        daemons = subprocess.run(["pgrep", "-f", f"knetsim.daemon --state {state.resolve()}"],
                                 capture_output=True, text=True).stdout.split()
        assert daemons == [str(info["pid"])]
    finally:
        down = _knetsim("down", "--state", str(state), env=env)
        out, _ = down.communicate(timeout=30)
    assert out.startswith("stopped (pid ")
    again = _knetsim("down", "--state", str(state), env=env)
    assert again.communicate(timeout=30)[0] == "not running\n"


# --- a store from an older version ----------------------------------------------------------------


def test_a_poisoned_store_still_starts_and_quarantines_the_object(tmp_path: Path) -> None:
    """Given a store holding objects today's admission refuses, the server starts, serves the rest, and
    says what it set aside (log, Warning event); nothing is dropped from the database."""
    import sqlite3

    state = tmp_path / "state"
    state.mkdir()
    proc, _ = start_server(state)
    stop_server(proc)
    db = sqlite3.connect(state / "store.db")
    poison = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "old", "namespace": "default", "uid": "u1", "resourceVersion": "5"},
              "spec": {"replicas": "two", "selector": {"matchLabels": {"a": "b"}}}}
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep", "namespace": "default",
                                                                  "uid": "u2", "resourceVersion": "6"},
            "data": {"k": "v"}, "legacyField": True}
    for obj in (poison, good):
        db.execute("INSERT INTO objects VALUES (?,?,?,?,?,?)", (obj["kind"], "default", obj["metadata"]["name"], 5,
                                                               "user", json.dumps(obj)))
    db.execute("INSERT INTO objects VALUES ('Service','default','broken',7,'user','{not json')")
    db.execute("UPDATE meta SET value='knetsim 0.0.1' WHERE key='admission'")
    db.commit()
    db.close()
    proc, info = start_server(state)
    try:
        live = Live(state, tmp_path, proc, info)
        assert live.request("GET", "/apis/apps/v1/namespaces/default/deployments/old")[0] == 404
        code, kept = live.request("GET", "/api/v1/namespaces/default/configmaps/keep")
        assert code == 200 and kept["data"] == {"k": "v"} and "legacyField" not in kept
        events = live.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
        quarantined = sorted((e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events
                             if e["reason"] == "Quarantined")
        assert quarantined == [("Deployment", "old"), ("Service", "broken")]
        assert all(e["type"] == "Warning" for e in events if e["reason"] == "Quarantined")
        log = (state.parent / f"{state.name}.log").read_text()
        assert "quarantined Deployment default/old: Deployment in version \"v1\" cannot be handled as a " \
               "Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of " \
               "type int32" in log
    finally:
        stop_server(proc)
    rows = sqlite3.connect(state / "store.db").execute("SELECT kind, name FROM quarantine ORDER BY name").fetchall()
    assert rows == [("Service", "broken"), ("Deployment", "old")]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_get_of_every_kind_works_after_hostile_writes(live: Live) -> None:
    for body in ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "h1", "labels": {"a": 1}}},
                 {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e/1"}},
                 {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "h2"}, "data": {"x": "%%"}}):
        plural = {"ConfigMap": "configmaps", "Event": "events", "Secret": "secrets"}[body["kind"]]
        assert live.request("POST", f"/api/v1/namespaces/default/{plural}", body)[0] in (400, 422)
    for kind in ("configmaps", "events", "secrets", "services", "pods"):
        live.kubectl("get", kind, "-A")
