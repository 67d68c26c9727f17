"""A row's time limit, read as the datasets carry it, and scaled by the server's factor; its memory limit.

The ``time_limit`` column: a number of seconds, or of milliseconds when over :data:`MS_ABOVE` (open-r1's
Codeforces and IOI rows carry seconds, ``2.0``; others milliseconds, ``2000``: no test runs for over 100 s,
so a number over 100 is milliseconds); a text with a unit (``"2 seconds"``, ``"1.5s"``, ``"1000 ms"``,
TACO's) or without (read as the number); CodeContests' ``{"seconds": 2, "nanos": 500000000}``. The
test's wall clock is then ``min(limit, MAX_S) * time_factor`` (``time_factor``: the operator's setting for
a server slower or faster than the judge the limits were set on, default 1.0); its CPU limit the next
whole second. Unreadable or not positive: :class:`ValueError` (the row's ``bad_tests``).

>>> [seconds(v) for v in (2, 2.5, 1500, "2 seconds", "1000 ms", "3s", {"seconds": 1, "nanos": 5e8})]
[2.0, 2.5, 1.5, 2.0, 1.0, 3.0, 1.5]
>>> scaled_timeout(1000, time_factor=2.0), scaled_timeout(90)
(2.0, 30.0)

The ``memory_limit`` column (open-r1's Codeforces and IOI rows: ``256.0``): megabytes, a number or a text
with a unit (``"256 MB"``, ``"256 megabytes"``, ``"1 GB"``), capped at :data:`MAX_MEMORY_MB` (the code
reward's cap on ``memory_mb``) and at least 64.

>>> [memory_mb(v) for v in (256.0, "512 megabytes", "1 GB", 10**6, 1)]
[256, 512, 1024, 4096, 64]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_MEMORY_MB", "MAX_S", "MS_ABOVE", "memory_mb", "scaled_timeout", "seconds"]

MS_ABOVE = 100.0
MAX_MEMORY_MB = 4096
MAX_S = 30.0  # a row's limit is capped here before the factor (a caller's timeout_s has the same cap)
_TEXT = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(ms|milliseconds?|s|secs?|seconds?)?\s*\.?\s*", re.IGNORECASE)


def seconds(value: Any) -> float:
    """The time limit ``value`` in seconds (see the module's docstring); ``ValueError`` otherwise."""
    if isinstance(value, Mapping) and ("seconds" in value or "nanos" in value):
        whole, nanos = value.get("seconds") or 0, value.get("nanos") or 0
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (whole, nanos)):
            raise ValueError(f"time_limit: seconds and nanos must be numbers, got {dict(value)!r:.80}")
        found = float(whole) + float(nanos) / 1e9
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found = float(value) / 1000 if value > MS_ABOVE else float(value)
    elif isinstance(value, str) and (match := _TEXT.fullmatch(value[:100])):
        number, unit = float(match.group(1)), (match.group(2) or "").lower()
        if unit.startswith("m"):
            found = number / 1000
        else:
            found = number if unit else (number / 1000 if number > MS_ABOVE else number)
    else:
        raise ValueError(
            f"time_limit: expected seconds, milliseconds or a text with a unit, got {value!r:.80}"
        )
    if not math.isfinite(found) or found <= 0:
        raise ValueError(f"time_limit must be positive, got {value!r:.80}")
    return found


def scaled_timeout(value: Any, time_factor: float = 1.0) -> float:
    """A test's wall-clock limit for the row's ``time_limit`` ``value``: capped, then scaled."""
    return min(seconds(value), MAX_S) * time_factor


_MEMORY = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(mb|mib|megabytes?|gb|gib|gigabytes?)?\s*", re.IGNORECASE)


def memory_mb(value: Any) -> int:
    """The memory limit ``value`` in whole MB, within 64 and :data:`MAX_MEMORY_MB`; else ``ValueError``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        found = float(value)
    elif isinstance(value, str) and (match := _MEMORY.fullmatch(value[:100])):
        found = float(match.group(1)) * (1024 if (match.group(2) or "m").lower().startswith("g") else 1)
    else:
        raise ValueError(f"memory_limit: expected megabytes, got {value!r:.80}")
    if not math.isfinite(found) or found <= 0:
        raise ValueError(f"memory_limit must be positive, got {value!r:.80}")
    return max(64, min(MAX_MEMORY_MB, math.ceil(found)))
