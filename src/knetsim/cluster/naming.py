"""Names the controllers generate, derived from content instead of randomness.

Upstream uses ``rand.String(5)`` and an FNV-32a hash of the pod template, both encoded
with the same 27-character alphabet (no vowels, no confusable digits). knetsim keeps the
alphabet and the shapes but feeds the hashes with stable inputs, so names look real and are
the same on every run.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

# k8s.io/apimachinery/pkg/util/rand: "bcdfghjklmnpqrstvwxz2456789"
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte mapped into the alphabet."""
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in text.encode())


# A byte at a time in Python, FNV is the dearest step of creating a Deployment's ReplicaSet (~50 us for a
# small template); the same template is often deployed in many namespaces (one app per tenant), so the hash of
# a template's bytes is remembered, within a bound.
@functools.lru_cache(maxsize=4096)
def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def pod_template_hash(template: Any, collision_count: int = 0) -> str:
    """The ``pod-template-hash`` label: FNV-32a of the template, printed in decimal, safe-encoded."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += collision_count.to_bytes(4, "little")
    return safe_encode(str(fnv32a(data)))


def random_suffix(*parts: str, length: int = 5) -> str:
    """A stand-in for ``rand.String(length)``, seeded by ``parts``."""
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in digest[:length])


def stable_index(text: str, modulo: int) -> int:
    """A well-spread, stable integer in [0, modulo) for allocators that upstream randomises."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") % modulo
