"""apimachinery's resource.Quantity: ``1Gi``, ``500m``, ``1e9``, ``2``: the one reader of them (a claim's storage
request, a container's limits, an Envoy Gateway buffer limit; the typed decoder's format check uses its pattern).

The suffixes (k8s.io/apimachinery pkg/api/resource/suffix.go): binary ``Ki``..``Ei`` (powers of 1024), decimal
``n u m "" k M G T P E`` (powers of 1000), or a decimal exponent ``e``/``E``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

QUANTITY = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE]|)$")
_SUFFIX = {"": Decimal(1), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
           "P": Decimal(10**15), "E": Decimal(10**18), "Ki": Decimal(2**10), "Mi": Decimal(2**20),
           "Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60),
           "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3")}


def quantity(value: Any) -> Decimal | None:
    """The value of a Quantity written as text or as a JSON number; None when it is none."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    m = QUANTITY.match(text)
    if m is None:
        return None
    try:
        number = Decimal(text[:len(text) - len(m.group(2))] if m.group(2) else text)
    except InvalidOperation:
        return None
    suffix = m.group(2)
    if suffix in _SUFFIX:  # "E" alone is exa, "Ei" exbi: an exponent has digits after its e
        return number * _SUFFIX[suffix]
    return number.scaleb(int(suffix[1:]))
