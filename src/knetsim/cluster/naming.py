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

from ..model.objects import content_key

# k8s.io/apimachinery/pkg/util/rand: "bcdfghjklmnpqrstvwxz2456789"
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


# Each byte's letter (the byte modulo the alphabet's length) as a translation table: bytes.translate maps a digest
# in one C call where a join over a generator took ~1 us a name (one per pod).
_LETTER_OF_BYTE = bytes(ord(ALPHANUMS[b % len(ALPHANUMS)]) for b in range(256))


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte mapped into the alphabet."""
    return text.encode().translate(_LETTER_OF_BYTE).decode()


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


# The template's sorted JSON is itself ~9 us (json.dumps with sort_keys), and 9,000 Deployments of bench/calico.py
# hold 9 distinct templates in as many dicts: the label is remembered per template content (``content_key``, 2-4 us),
# within a bound (templates of a few KB: a few MB at most).
_TEMPLATE_HASHES: dict[tuple[bytes, int], str] = {}
_TEMPLATE_HASHES_MAX = 2048


def pod_template_hash(template: Any, collision_count: int = 0) -> str:
    """The ``pod-template-hash`` label: FNV-32a of the template, printed in decimal, safe-encoded."""
    key = content_key(template)
    if not isinstance(key, bytes):  # not marshal's exact bytes: a repr could match a template whose JSON differs
        return _template_hash(template, collision_count)
    known = _TEMPLATE_HASHES.get((key, collision_count))
    if known is None:
        known = _template_hash(template, collision_count)
        if len(_TEMPLATE_HASHES) < _TEMPLATE_HASHES_MAX:
            _TEMPLATE_HASHES[(key, collision_count)] = known
    return known


def _template_hash(template: Any, collision_count: int) -> str:
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += collision_count.to_bytes(4, "little")
    return safe_encode(str(fnv32a(data)))


def random_suffix(*parts: str, length: int = 5) -> str:
    """A stand-in for ``rand.String(length)``, seeded by ``parts``."""
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    return digest[:length].translate(_LETTER_OF_BYTE).decode()


def stable_index(text: str, modulo: int) -> int:
    """A well-spread, stable integer in [0, modulo) for allocators that upstream randomises."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") % modulo
