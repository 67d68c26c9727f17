"""The one bounded cache: a thread-safe map that forgets its least recently used items.

It is bounded by its number of items and, given a size function, by their total size too (bytes, say), so
that a cache of large values (judge replies, images) stays within memory whatever the item count. A cache
keyed by texts a caller chose keys them by :func:`text_digest` (16 bytes, whatever the texts' length), so
that its keys cannot grow it either.

>>> cache = LRUCache(2)
>>> cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
1
>>> sorted(cache._items), cache.get("b") is None
(['a', 'c'], True)
>>> texts = LRUCache(100, max_total=10, sizeof=len)
>>> texts.put("x", "12345678"); texts.put("y", "1234"); texts.put("z", "too long for the whole cache")
>>> list(texts._items), texts.total
(['y'], 4)
>>> len(text_digest("x" * 99_000)), text_digest("ab", "c") == text_digest("a", "bc")
(16, False)
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LRUCache", "text_digest"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A least-recently-used cache of at most ``max_items`` items and, when ``sizeof`` is given, at most
    ``max_total`` in the sum of ``sizeof(value)``. A bound of 0 stores nothing. Thread-safe."""

    def __init__(
        self, max_items: int, *, max_total: int | None = None, sizeof: Callable[[V], int] | None = None
    ) -> None:
        if (max_total is None) != (sizeof is None):
            raise ValueError("LRUCache: max_total and sizeof go together")
        self.max_items = max_items
        self.max_total = max_total
        self._sizeof = sizeof
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.total = 0  # the sum of the sizes held (0 without a size function)

    def get(self, key: K) -> V | None:
        """The value stored under ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key: K, value: V, *, max_items: int | None = None) -> None:
        """Store ``value`` under ``key`` as the most recently used item, then forget the least recently
        used ones beyond the bounds; ``max_items`` bounds the count for this call in place of the cache's
        own (callers sharing one cache with different sizes). Under a bound of 0 it does nothing; a value
        larger than ``max_total`` is not stored (nor is an older value under its key kept)."""
        bound = self.max_items if max_items is None else max_items
        if bound <= 0:
            return
        size = self._sizeof(value) if self._sizeof is not None else 0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.total -= old[1]
            if self.max_total is not None and size > self.max_total:
                return
            self._items[key] = (value, size)
            self.total += size
            while len(self._items) > bound or (self.max_total is not None and self.total > self.max_total):
                _, (_, dropped) = self._items.popitem(last=False)
                self.total -= dropped

    def clear(self) -> None:
        """Forget every item."""
        with self._lock:
            self._items.clear()
            self.total = 0

    def __len__(self) -> int:
        return len(self._items)


def text_digest(*texts: str) -> bytes:
    """A 16-byte BLAKE2b digest of ``texts`` (each prefixed by its length, so ``("ab", "c")`` and
    ``("a", "bc")`` differ; lone surrogates are hashed as they are): the key of a cache of texts."""
    digest = hashlib.blake2b(digest_size=16)
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.digest()
