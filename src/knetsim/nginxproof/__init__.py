"""The Ingress side proven by a real nginx: ingress-nginx's configuration rendered, run and compared.

See README.md in this directory and docs/ingress.md ("Proof against a real nginx").
"""

from __future__ import annotations

from .render import render
from .verify import Check, ConfigRefused, Report, Unavailable, format_report, missing_requirements, verify

__all__ = ["Check", "ConfigRefused", "Report", "Unavailable", "format_report", "missing_requirements", "render",
           "verify"]
