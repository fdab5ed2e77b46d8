"""resource.Quantity, read in one place (model/quantity.py) for a claim's storage, a container's limits and an
Envoy Gateway buffer limit; the cases are apimachinery's suffixes (pkg/api/resource/suffix.go)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from knetsim.model.quantity import quantity


@pytest.mark.parametrize(("text", "value"), [
    ("1Gi", 2**30), ("5Ki", 5120), ("1.5Mi", 1572864), ("500m", Decimal("0.5")), ("100n", Decimal("1e-7")),
    ("2", 2), ("1k", 1000), ("1E", 10**18), ("1e3", 1000), ("1E-3", Decimal("0.001")), ("+3", 3), ("-1", -1),
    (".5", Decimal("0.5")), (2, 2), (0.25, Decimal("0.25")),
])
def test_a_quantity_reads_as_apimachinery_reads_it(text: object, value: Decimal | int) -> None:
    assert quantity(text) == value


@pytest.mark.parametrize("text", ["1GB", "1gi", "", "Gi", "1.2.3", "1 Gi", True, None, [1]])
def test_what_is_no_quantity_is_none(text: object) -> None:
    assert quantity(text) is None
