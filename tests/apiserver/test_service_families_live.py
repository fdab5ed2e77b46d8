"""Service IP families at create time through the HTTP API of a dual-stack cluster, as kube-apiserver answers.

The rows are upstream's (TestCreateInitIPFields, pkg/registry/core/service/storage/storage_test.go, dualstack:v4v6):
an unset ipFamilyPolicy is SingleStack, so two families without a policy are refused, with or without
clusterIPs, headless with a selector too; a headless Service without selector defaults to RequireDualStack.
The offline path runs the same table (tests/cluster/test_ip_families.py); this proves the live registry agrees.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from knetsim.apiserver.server import ApiServer
from knetsim.cluster.config import config_from_dict
from knetsim.daemon.daemon import bring_up

DUAL = config_from_dict({"ipFamily": "dual"})
TWO_FAMILIES = ("must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified")

# (spec besides ports, the answer: a message the 422 ends with, or (policy, families))
ROWS: list[tuple[dict[str, Any], Any]] = [
    ({"selector": {"app": "a"}, "ipFamilies": ["IPv4", "IPv6"]}, TWO_FAMILIES),
    ({"selector": {"app": "a"}, "ipFamilies": ["IPv6", "IPv4"]}, TWO_FAMILIES),
    ({"selector": {"app": "a"}, "clusterIP": "10.96.0.60", "ipFamilies": ["IPv4", "IPv6"]}, TWO_FAMILIES),
    ({"selector": {"app": "a"}, "clusterIP": "10.96.0.61", "clusterIPs": ["10.96.0.61", "fd00:10:96::61"],
      "ipFamilies": ["IPv4", "IPv6"]}, "when multiple cluster IPs are specified, spec.ipFamilyPolicy: Invalid "
                                       f'value: "SingleStack": {TWO_FAMILIES}]'),
    ({"selector": {"app": "a"}, "clusterIP": "None", "ipFamilies": ["IPv4", "IPv6"]}, TWO_FAMILIES),
    ({"clusterIP": "None"}, ("RequireDualStack", ["IPv4", "IPv6"])),
    ({"clusterIP": "None", "ipFamilies": ["IPv6"]}, ("RequireDualStack", ["IPv6", "IPv4"])),
    ({"selector": {"app": "a"}, "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack"},
     ("RequireDualStack", ["IPv4", "IPv6"])),
    ({"selector": {"app": "a"}, "clusterIP": "10.96.0.62", "ipFamilies": ["IPv4", "IPv6"],
      "ipFamilyPolicy": "PreferDualStack"}, ("PreferDualStack", ["IPv4", "IPv6"])),
    ({"selector": {"app": "a"}, "ipFamilies": ["IPv6"]}, ("SingleStack", ["IPv6"])),
]


async def scenario(client: TestClient) -> list[Any]:
    async def create(name: str, spec: dict[str, Any]) -> tuple[int, Any]:
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                "spec": {"ports": [{"port": 80}], **spec}}
        resp = await client.post("/api/v1/namespaces/default/services", data=json.dumps(body),
                                 headers={"Content-Type": "application/json"})
        return resp.status, await resp.json()

    answers: list[Any] = []
    for i, (spec, _) in enumerate(ROWS):
        code, body = await create(f"row{i}", spec)
        if code == 201:
            answers.append((body["spec"]["ipFamilyPolicy"], body["spec"]["ipFamilies"]))
        else:
            assert code == 422, body
            answers.append(body["message"])
    # A ClusterIP another Service holds.
    code, first = await create("first", {"selector": {"app": "a"}, "clusterIP": "10.96.0.50"})
    assert code == 201, first
    code, second = await create("second", {"selector": {"app": "a"}, "clusterIP": "10.96.0.50"})
    answers.append((code, second["message"]))
    return answers


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    async def main() -> list[Any]:
        server = ApiServer(tmp_path_factory.mktemp("dual"), DUAL)
        manager = bring_up(server)
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        try:
            await server.settle()
            return await scenario(client)
        finally:
            await client.close()
            await manager.close()
            await server.close()
    return asyncio.run(main())


@pytest.mark.parametrize("row", range(len(ROWS)), ids=[json.dumps(r[0], separators=(",", ":")) for r in ROWS])
def test_a_dual_stack_clusters_api_server_defaults_and_refuses_families_as_upstream(answers: list[Any],
                                                                                    row: int) -> None:
    want = ROWS[row][1]
    if isinstance(want, str):
        assert isinstance(answers[row], str) and answers[row].endswith(want), answers[row]
    else:
        assert answers[row] == want


def test_a_cluster_ip_another_service_holds_is_refused_live(answers: list[Any]) -> None:
    assert answers[-1] == (422, 'Service "second" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.50"}:'
                                " failed to allocate IP 10.96.0.50: provided IP is already allocated")
