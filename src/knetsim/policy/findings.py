"""A policy finding: what ``knetsim policy lint`` prints and the doctor reuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str  # error | warning | info
    subject: str
    message: str
    fix: str = ""
    details: tuple[tuple[str, str], ...] = ()
    # The fix as a JSON patch (RFC 6902) of the finding's NetworkPolicy, when one change is the fix: the doctor
    # tries it on a copy of the cluster and prints it as `kubectl patch --type=json` only if it clears the finding.
    json_patch: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "subject": self.subject, "message": self.message,
                "fix": self.fix, "details": dict(self.details)}


__all__ = ["Finding"]
