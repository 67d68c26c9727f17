"""The judge's verdict cache: one bounded LRU per process (:class:`rewardkit.lru.LRUCache`), keyed by a
hash of the whole request.

Keys are SHA-256 digests of the request (endpoint, model, temperature, messages), so a cache of many
multimodal requests does not hold their base64 images twice. Each judge bounds the cache by its own
``cache_size`` when it stores a verdict; a size of 0 neither reads nor writes.

>>> key = request_key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
>>> verdicts.put(key, (0.7, None, "[[7]]"), max_items=10); verdicts.get(key)
(0.7, None, '[[7]]')
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rewardkit.lru import LRUCache

__all__ = ["Outcome", "request_key", "verdicts"]

#: (reward, reason, raw reply)
Outcome = tuple[float | None, str | None, str | None]


def request_key(request: Any) -> str:
    """The cache key of a judge request: the SHA-256 of its canonical JSON, in hex."""
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8", "replace")).hexdigest()


#: The process-wide cache every judge uses (each passes its own ``cache_size`` as the bound).
verdicts: LRUCache[str, Outcome] = LRUCache(10_000)
