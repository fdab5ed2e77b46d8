"""model/kinds.py names the Gateway API kinds without importing model/gatewayapi.py (a build or a live
cluster start that reads no Gateway API object does not load it); the lists must stay one."""

from knetsim.model import gatewayapi
from knetsim.model.kinds import GATEWAY_API_KINDS, GATEWAY_READ_AS_KEPT


def test_build_knows_every_kind_gatewayapi_parses_and_reads():
    assert sorted(GATEWAY_API_KINDS) == sorted(gatewayapi.KINDS)
    assert sorted(GATEWAY_READ_AS_KEPT) == sorted(gatewayapi.READ_AS_KEPT)
