"""The offline build converts each object once where it enters: one parse per Ingress (its default class and
published status set on the dict first) and one per Gateway object (shared by the infrastructure and the
state)."""

from collections import Counter

import pytest
from tests.conftest import EXAMPLES

from knetsim.cluster.build import build_cluster
from knetsim.model import gatewayapi
from knetsim.model.loader import load_paths
from knetsim.model.objects import Ingress


def _counting(monkeypatch: pytest.MonkeyPatch, cls: type, counts: Counter[str]) -> None:
    original = cls.parse.__func__  # type: ignore[attr-defined]

    def parse(klass, raw, source=None):  # type: ignore[no-untyped-def]
        counts[f"{klass.__name__} {raw['metadata'].get('namespace', '')}/{raw['metadata']['name']}"] += 1
        return original(klass, raw, source) if source is not None else original(klass, raw)
    monkeypatch.setattr(cls, "parse", classmethod(parse))


def test_each_ingress_and_gateway_object_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counts: Counter[str] = Counter()
    for cls in (Ingress, gatewayapi.GatewayClass, gatewayapi.Gateway, gatewayapi.HTTPRoute):
        _counting(monkeypatch, cls, counts)
    # The views the kinds declare are looked up again, patched.
    monkeypatch.setattr("knetsim.model.kinds._VIEWS", {}, raising=False)
    documents = [*load_paths([str(EXAMPLES / "gateway" / "quickstart")]).documents,
                 *load_paths([str(EXAMPLES / "ingress-nginx")]).documents]
    result = build_cluster(documents)
    assert result.state.ingresses and result.state.gateways and result.state.http_routes
    assert counts and set(counts.values()) == {1}, counts
