"""Times as the API writes them: metav1.Time is RFC 3339 in UTC with whole seconds (``2026-12-04T12:00:00Z``)."""

from __future__ import annotations

from datetime import UTC, datetime

RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime(RFC3339)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime(RFC3339)


def parse_rfc3339(text: str) -> datetime:
    """A stored timestamp (``Z`` or an offset; fractions kept) as an aware datetime; ValueError if it is none."""
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
