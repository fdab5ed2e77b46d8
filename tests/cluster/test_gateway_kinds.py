"""The build step names the Gateway API kinds without importing model/gatewayapi.py (a cold start that
reads no Gateway API object does not load it); the lists must stay one."""

from knetsim.cluster.build import GATEWAY_API_KINDS, GATEWAY_READ_AS_KEPT
from knetsim.model import gatewayapi


def test_build_knows_every_kind_gatewayapi_parses_and_reads():
    assert sorted(GATEWAY_API_KINDS) == sorted(gatewayapi.KINDS)
    assert sorted(GATEWAY_READ_AS_KEPT) == sorted(gatewayapi.READ_AS_KEPT)
