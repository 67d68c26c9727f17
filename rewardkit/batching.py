"""How a batch becomes requests to the scoring service, and their results one result again.

A batch is cut into bodies of at most the server's ``max_batch`` items, each under its body limit, never
inside a GRPO group (rewards such as ``length`` compare within one); the results of the pieces are merged in
order (:meth:`ScoreResult.merge`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion
from rewardkit.lengths import GROUP_COLUMNS, group_keys
from rewardkit.spec import RewardSpec

__all__ = ["RewardServiceError", "ScoreResult", "func_json", "json_body", "request_bodies"]


class RewardServiceError(RuntimeError):
    """The service answered with an error (or could not be reached after the retries)."""

    def __init__(self, message: str, status_code: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.status_code, self.detail = status_code, detail


@dataclass
class ScoreResult:
    """The body of ``POST /score``, typed."""

    rewards: list[float | None]
    scores: dict[str, list[float | None]]
    errors: dict[str, list[str | None]]
    timing_ms: dict[str, float]

    @classmethod
    def merge(cls, parts: Sequence[ScoreResult]) -> ScoreResult:
        """Concatenate the results of consecutive chunks of one batch."""
        keys = list(parts[0].scores) if parts else []
        sizes = [len(p.rewards) for p in parts]
        errors: dict[str, list[str | None]] = {}
        for key in {k for p in parts for k in p.errors}:
            errors[key] = [
                r for p, n in zip(parts, sizes, strict=True) for r in p.errors.get(key, [None] * n)
            ]
        return cls(
            rewards=[r for p in parts for r in p.rewards],
            scores={k: [v for p in parts for v in p.scores[k]] for k in keys},
            errors=errors,
            timing_ms={k: round(sum(p.timing_ms.get(k, 0.0) for p in parts), 3) for k in keys},
        )


def func_json(func: str | RewardSpec) -> str | dict[str, Any]:
    return func if isinstance(func, str) else func.to_json()


def json_body(body: Any) -> bytes:
    """ASCII JSON: faster to encode here than UTF-8 output, and text a model broke (lone surrogates)
    travels escaped instead of failing the call."""
    return json.dumps(body).encode("ascii")


def _group_keys(columns: dict[str, Any], n: int) -> list[int] | None:
    """Each completion's GRPO group (see :func:`rewardkit.lengths.group_keys`), or ``None`` without one."""
    named = {k: v for k, v in columns.items() if k in GROUP_COLUMNS and isinstance(v, list) and len(v) == n}
    return group_keys(named, n, "client") if named else None


class _Cuts:
    """Where a batch may be cut into requests: anywhere, or only between groups."""

    def __init__(self, groups: list[int] | None, n: int) -> None:
        self.groups, self.n = groups, n

    def before(self, start: int, end: int) -> int | None:
        """The last cut in ``(start, end]``, or ``None`` when a group fills it all."""
        if self.groups is None or end >= self.n:
            return end if end > start else None
        for cut in range(end, start, -1):
            if self.groups[cut] != self.groups[cut - 1]:
                return cut
        return None

    def too_large(self, start: int, what: str) -> str:
        unit = "completion" if self.groups is None else "the group starting at completion"
        return f"{unit} {start} alone is over {what}; it cannot be split across requests"

    def check_contiguous(self, spans: list[tuple[int, int]]) -> None:
        if self.groups is None or len(spans) < 2:
            return
        seen: dict[int, int] = {}
        for number, (start, end) in enumerate(spans):
            for key in set(self.groups[start:end]):
                if seen.setdefault(key, number) != number:
                    raise RewardServiceError(
                        "the batch must be split to fit the server's limits, but a group's completions are "
                        "not next to each other, so a group would be scored in two requests; keep each "
                        "group's completions together (as GRPO trainers do)"
                    )


def _body(
    funcs: Sequence[str | RewardSpec],
    completions: Sequence[Completion],
    columns: dict[str, Any],
    start: int,
    end: int,
) -> dict[str, Any]:
    return {
        "funcs": [func_json(f) for f in funcs],
        "completions": list(completions[start:end]),
        "columns": {k: list(v)[start:end] for k, v in columns.items()},
    }


def request_bodies(
    server: dict[str, Any],
    funcs: Sequence[str | RewardSpec],
    completions: Sequence[Completion],
    columns: dict[str, Any],
    max_batch: int,
    base_url: str,
) -> list[bytes]:
    """The request bodies of a batch: at most the smaller of our and the server's ``max_batch`` items
    each, and each under the server's body limit (a chunk over it is halved until it fits).

    A GRPO group (the completions sharing a ``group``, ``prompt``, ``prompts`` or ``messages`` value) is
    never cut: rewards such as ``length`` compare within it. A group that does not fit one request, or
    groups that are not contiguous in a batch that must be split, raise :class:`RewardServiceError`."""
    n = len(completions)
    size = max(1, min(max_batch, int(server.get("max_batch") or max_batch)))
    limit = int(float(server.get("max_body_mb") or 64.0) * 1024 * 1024 * 0.98)  # headroom for framing
    groups = _group_keys(columns, n)
    cuts = _Cuts(groups, n)
    pending: list[tuple[int, int]] = []
    start = 0
    while start < n:  # chunks of at most `size`, cut between groups
        end = cuts.before(start, min(start + size, n))
        if end is None:
            raise RewardServiceError(cuts.too_large(start, f"the server's max_batch of {size}"), 413)
        pending.append((start, end))
        start = end
    pending = list(reversed(pending or [(0, 0)]))
    bodies: list[bytes] = []
    spans: list[tuple[int, int]] = []
    while pending:
        start, end = pending.pop()
        body = json_body(_body(funcs, completions, columns, start, end))
        if len(body) <= limit:
            bodies.append(body)
            spans.append((start, end))
            continue
        middle = cuts.before(start, (start + end) // 2) or cuts.before(start, end - 1)
        if middle is None or middle <= start:
            raise RewardServiceError(
                cuts.too_large(start, f"{len(body):,} bytes, over the server's limit of {limit:,}")
                + f" (REWARDKIT_MAX_BODY_MB on {base_url})",
                413,
            )
        pending += [(middle, end), (start, middle)]  # the first half goes first
    cuts.check_contiguous(spans)
    return bodies
