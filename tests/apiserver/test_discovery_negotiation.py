"""Discovery as each version's API server serves it: ``/api`` and ``/apis`` negotiate the Accept header (the plain
``APIVersions``/``APIGroupList`` or the aggregated ``APIGroupDiscoveryList``, v2 always, v2beta1 up to 1.37 —
kubernetes/kubernetes CHANGELOG-1.38 #141208), the Content-Type naming what was served; unknown ``/apis/...``
paths are a JSON Status 404 (#138219); an unknown Accept parameter (#139561's ``drop=``) is never a 406.

The server runs in process (aiohttp's test client): the requests are the raw ones a client sends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer

from knetsim.apiserver.server import ApiServer
from knetsim.cluster.config import ClusterConfig

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
PROTOBUF_V2 = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
# What kubectl 1.32 sends for /api and /apis (client-go discovery's AcceptV2 + AcceptV2Beta1 + legacy).
KUBECTL_132 = (f"{V2},{V2BETA1},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;q=0.9,"
               "application/json;q=0.8")


Answer = tuple[int, str, str, Any]  # status, Content-Type, Vary, body


def ask(tmp_path: Path, version: str, requests: list[tuple[str, str | None]]) -> list[Answer]:
    """GET each (path, Accept) from an API server of ``version``."""

    async def run() -> list[Answer]:
        server = ApiServer(tmp_path / version, ClusterConfig(kubernetes_version=version))
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        out = []
        try:
            for path, accept in requests:
                resp = await client.get(path, headers={"Accept": accept} if accept is not None else {})
                raw = await resp.read()
                ctype = resp.headers.get("Content-Type", "")
                body = yaml.safe_load(raw) if ctype.startswith("application/yaml") else await resp.json(
                    content_type=None)
                out.append((resp.status, ctype, resp.headers.get("Vary", ""), body))
        finally:
            await client.close()
            server.store.close()
        return out

    return asyncio.run(run())


def kind_of(answer: Answer) -> str:
    body = answer[3]
    return f"{body.get('apiVersion')} {body.get('kind')}"


@pytest.mark.parametrize("version", ["1.37", "1.38"])
def test_the_plain_documents_are_served_to_a_client_that_asks_for_them(tmp_path: Path, version: str) -> None:
    answers = ask(tmp_path, version, [("/apis", "application/json"), ("/api", "application/json"),
                                      ("/apis", None), ("/apis", "*/*"),
                                      ("/apis", "application/json;drop=metadata.managedFields"),
                                      ("/apis", "application/yaml")])
    plain_apis, plain_api, no_accept, anything, with_drop, as_yaml = answers
    assert plain_apis[:2] == (200, "application/json") and kind_of(plain_apis) == "v1 APIGroupList"
    assert any(g["name"] == "networking.k8s.io" for g in plain_apis[3]["groups"])
    assert plain_api[3]["kind"] == "APIVersions" and plain_api[3]["versions"] == ["v1"]
    assert kind_of(no_accept) == kind_of(anything) == "v1 APIGroupList"
    # A 1.38 client's opt-out parameter is tolerated: the plain document, not a 406.
    assert with_drop[0] == 200 and kind_of(with_drop) == "v1 APIGroupList"
    assert as_yaml[1] == "application/yaml" and kind_of(as_yaml) == "v1 APIGroupList"
    assert all(a[2] == "Accept" for a in answers)


@pytest.mark.parametrize("version", ["1.33", "1.37", "1.38"])
def test_aggregated_v2_is_served_with_a_content_type_that_names_it(tmp_path: Path, version: str) -> None:
    (core, apis, kubectl_132, drop) = ask(tmp_path, version, [
        ("/api", V2), ("/apis", V2), ("/apis", KUBECTL_132), ("/apis", V2 + ";drop=metadata.managedFields")])
    assert core[:2] == (200, V2) and kind_of(core) == "apidiscovery.k8s.io/v2 APIGroupDiscoveryList"
    assert [g["metadata"]["name"] for g in core[3]["items"]] == [""]
    assert apis[:2] == (200, V2)
    assert "networking.k8s.io" in [g["metadata"]["name"] for g in apis[3]["items"]]
    assert kubectl_132[:2] == (200, V2) and drop[:2] == (200, V2)


def test_v2beta1_is_served_up_to_1_37_and_not_from_1_38(tmp_path: Path) -> None:
    (old,) = ask(tmp_path, "1.37", [("/apis", V2BETA1)])
    assert old[:2] == (200, V2BETA1) and kind_of(old) == "apidiscovery.k8s.io/v2beta1 APIGroupDiscoveryList"
    # 1.38 no longer knows v2beta1: a client asking for it alone gets a 406 Status; one that also accepts the
    # plain document gets that.
    only, fallback = ask(tmp_path, "1.38", [("/apis", V2BETA1), ("/apis", f"{V2BETA1},application/json;q=0.5")])
    assert only[0] == 406 and only[1] == "application/json"
    assert only[3]["kind"] == "Status" and only[3]["reason"] == "NotAcceptable"
    assert V2 in only[3]["message"] and "v2beta1" not in only[3]["message"]
    assert fallback[:2] == (200, "application/json") and kind_of(fallback) == "v1 APIGroupList"


def test_the_accept_list_is_tried_by_q_then_in_the_order_written(tmp_path: Path) -> None:
    by_order, by_q, refused, protobuf_first = ask(tmp_path, "1.37", [
        ("/apis", f"{V2BETA1},{V2}"),
        ("/apis", f"{V2};q=0.5,application/json;q=0.9,{V2BETA1};q=0.7"),
        ("/apis", f"{V2};q=0,application/json"),
        ("/apis", f"{PROTOBUF_V2},{V2}"),
    ])
    assert by_order[1] == V2BETA1  # equal weights: the first written wins
    assert by_q[1] == "application/json" and kind_of(by_q) == "v1 APIGroupList"
    assert refused[1] == "application/json" and kind_of(refused) == "v1 APIGroupList"  # q=0: not acceptable
    # knetsim serves discovery as JSON: the protobuf clause is passed over for the next.
    assert protobuf_first[1] == V2


def test_a_media_type_nothing_serves_is_a_406_status(tmp_path: Path) -> None:
    (html,) = ask(tmp_path, "1.38", [("/apis", "text/html")])
    assert html[0] == 406 and html[3]["kind"] == "Status" and html[3]["code"] == 406


def test_unknown_apis_paths_are_a_json_status_404(tmp_path: Path) -> None:
    answers = ask(tmp_path, "1.38", [("/apis/no.such.group", None), ("/apis/no.such.group/v1", None),
                                     ("/apis/networking.k8s.io/v9", None),
                                     ("/apis/networking.k8s.io/v1/nosuchthings", None)])
    for status, ctype, _, body in answers:
        assert (status, ctype) == (404, "application/json")
        assert body["kind"] == "Status" and body["reason"] == "NotFound" and body["code"] == 404
        assert body["message"] == "the server could not find the requested resource"


@pytest.mark.parametrize(("version", "git_version"), [("1.33", "v1.33.0"), ("1.36", "v1.36.0"),
                                                     ("1.38", "v1.38.0")])
def test_version_reports_the_chosen_minor(tmp_path: Path, version: str, git_version: str) -> None:
    ((status, _, _, body),) = ask(tmp_path, version, [("/version", None)])
    minor = version.split(".")[1]
    assert status == 200
    assert (body["major"], body["minor"], body["gitVersion"]) == ("1", minor, git_version)
    assert (body["emulationMinor"], body["minCompatibilityMinor"]) == (minor, str(int(minor) - 1))


# The Accept headers real clients sent for discovery, recorded with `-v=8` against `knetsim up` on 2026-12-06
# (kubectl.1.31 v1.31.x, kubectl.1.32 v1.32.4 and kubectl.1.33 v1.33.1 of the Google Cloud SDK): `/api` and
# `/apis` of `kubectl api-resources`, and `kubectl get --raw`.
RECORDED = {
    "kubectl 1.31-1.33 discovery": f"{V2},{V2BETA1},application/json",
    "kubectl 1.31-1.33 get --raw": "application/json, */*",
}


@pytest.mark.parametrize("version", ["1.33", "1.35", "1.37", "1.38"])
def test_recorded_client_requests_get_what_those_clients_read(tmp_path: Path, version: str) -> None:
    (core, apis, raw) = ask(tmp_path, version, [("/api", RECORDED["kubectl 1.31-1.33 discovery"]),
                                               ("/apis", RECORDED["kubectl 1.31-1.33 discovery"]),
                                               ("/apis", RECORDED["kubectl 1.31-1.33 get --raw"])])
    assert core[:2] == apis[:2] == (200, V2)
    assert kind_of(apis) == "apidiscovery.k8s.io/v2 APIGroupDiscoveryList"
    assert raw[:2] == (200, "application/json") and kind_of(raw) == "v1 APIGroupList"


def test_reads_tolerate_an_unknown_accept_parameter(tmp_path: Path) -> None:
    """A 1.38 client may ask to leave managedFields out (#139561, alpha ManagedFieldsOptOut): the server that does
    not know the parameter answers as usual, never 406."""
    plain, table = ask(tmp_path, "1.38", [
        ("/api/v1/namespaces", "application/json;drop=metadata.managedFields"),
        ("/api/v1/namespaces", "application/json;as=Table;v=v1;g=meta.k8s.io;drop=metadata.managedFields"),
    ])
    assert plain[0] == 200 and plain[3]["kind"] == "NamespaceList"
    assert table[0] == 200 and table[3]["kind"] == "Table"


def test_a_concrete_type_outranks_a_wildcard_and_a_refused_type_is_not_served_through_one(tmp_path: Path) -> None:
    """goautoneg's order (a concrete type before */* at equal q) and kube-apiserver's rejectedMediaTypes (a media
    type whose most specific clause says q=0 is not served through a wildcard)."""
    concrete_first, json_refused, all_refused = ask(tmp_path, "1.38", [
        ("/apis", f"*/*,{V2}"),
        ("/apis", "application/json;q=0,*/*"),
        ("/apis", "application/json;q=0,application/yaml;q=0,*/*"),
    ])
    assert concrete_first[1] == V2
    assert json_refused[1] == "application/yaml" and kind_of(json_refused) == "v1 APIGroupList"
    assert all_refused[0] == 406
