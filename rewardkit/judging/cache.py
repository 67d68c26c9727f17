"""The judge's verdict cache: one bounded LRU per process, keyed by a hash of the whole request.

Keys are SHA-256 digests of the request (endpoint, model, temperature, messages), so a cache of many
multimodal requests does not hold their base64 images twice. A size of 0 neither reads nor writes.

>>> cache = VerdictCache()
>>> key = cache.key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
>>> cache.put(key, (0.7, None, "[[7]]"), max_size=10); cache.get(key, max_size=10)
(0.7, None, '[[7]]')
>>> cache.get(key, max_size=0) is None
True
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["Outcome", "VerdictCache", "verdicts"]

#: (reward, reason, raw reply)
Outcome = tuple[float | None, str | None, str | None]


class VerdictCache:
    """A thread-safe LRU of judge outcomes; each call says how large the cache may be."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Outcome] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(request: Any) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8", "replace")).hexdigest()

    def get(self, key: str, *, max_size: int) -> Outcome | None:
        if max_size <= 0:
            return None
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: str, outcome: Outcome, *, max_size: int) -> None:
        if max_size <= 0:
            return
        with self._lock:
            self._items[key] = outcome
            self._items.move_to_end(key)
            while len(self._items) > max_size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


#: The process-wide cache every judge uses.
verdicts = VerdictCache()
