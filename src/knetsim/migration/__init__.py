"""Migrating from Ingress to Gateway API: the conversion, and the proof that it routes every request the same.

``convert(state)`` writes the Gateway API equivalent of the Ingresses ingress-nginx serves;
``check(state)`` sends one generated request set through the Ingress side and the Gateway side and
lists every request whose status, backend or redirect differs. It sits above ``ingress``,
``gateway`` and ``network`` (it asks which Gateway a host reaches), beside ``doctor``.
"""

from __future__ import annotations

from .check import Caveat, CheckResult, Comparison, check, requests
from .convert import Conversion, Note, convert

__all__ = ["Caveat", "CheckResult", "Comparison", "Conversion", "Note", "check", "convert", "requests"]
