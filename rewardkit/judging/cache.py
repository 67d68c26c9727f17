"""The judge's verdict cache: one bounded LRU per process (:class:`rewardkit.lru.LRUCache`), keyed by a
hash of the whole request.

Keys are SHA-256 digests of the request (endpoint, model, temperature, messages), so a cache of many
multimodal requests does not hold their base64 images twice. Each judge bounds the cache by its own
``cache_size`` when it stores a verdict; a size of 0 neither reads nor writes. Whatever the count, the
verdicts held take at most ``MAX_CACHE_BYTES`` (their replies' and reasons' sizes plus ``ENTRY_BYTES``
each, :func:`outcome_bytes`): a judge sending huge replies cannot grow the process through its cache, and
a verdict larger than the whole budget is not kept.

>>> key = request_key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
>>> verdicts.put(key, (0.7, None, "[[7]]"), max_items=10); verdicts.get(key)
(0.7, None, '[[7]]')
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

from rewardkit.lru import LRUCache

__all__ = ["ENTRY_BYTES", "MAX_CACHE_BYTES", "Outcome", "outcome_bytes", "request_key", "verdicts"]

#: (reward, reason, raw reply)
Outcome = tuple[float | None, str | None, str | None]

MAX_CACHE_BYTES = 64 << 20  # the verdicts held, together
ENTRY_BYTES = 400  # what one entry costs besides its text: the key, the tuple, the score, the LRU's links


def request_key(request: Any) -> str:
    """The cache key of a judge request: the SHA-256 of its canonical JSON, in hex."""
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8", "replace")).hexdigest()


def outcome_bytes(outcome: tuple[Any, ...]) -> int:
    """What a cached verdict holds in memory, about: its texts (the reply, the reason) plus ``ENTRY_BYTES``.

    >>> outcome_bytes((0.7, None, "[[7]]")) < outcome_bytes((0.7, None, "[[7]]" * 100))
    True
    """
    return ENTRY_BYTES + sum(sys.getsizeof(part) for part in outcome if isinstance(part, str | bytes))


#: The process-wide cache every judge uses (each passes its own ``cache_size`` as the bound on the count;
#: the bytes are bounded here).
verdicts: LRUCache[str, Outcome] = LRUCache(10_000, max_total=MAX_CACHE_BYTES, sizeof=outcome_bytes)
