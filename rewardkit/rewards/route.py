"""Route: each row is scored by the reward its ``column`` names (mixed datasets: math rows, countdown rows).

>>> import rewardkit
>>> route = rewardkit.get("route", column="task", routes={"cd": "countdown", "gsm8k": "math"})
>>> route(
...     ["<answer>6 * 4</answer>", "3 + 4, so the answer is 7."],
...     task=["cd", "gsm8k"],
...     target=[24, None], nums=[[4, 6], None],   # the countdown row's columns
...     solution=[None, "7"],                      # the math row's
... )
[1.0, 1.0]

A route is a reward name, or ``{"name": ..., "params": {...}, "columns": {...}}``; a key may be a glob
(``aime*``), tried after the exact keys in the order given. Rows of one route need only that route's
columns. A row whose key has no route raises (``unknown="none"``: it scores ``None``, reason ``no_route``);
a row whose key is ``None`` scores ``None``, reason ``no_route``.

Globs mean what :func:`fnmatch.fnmatchcase` says, matched in time linear in the value: each glob is split
at its ``*`` into fixed-length pieces, compiled once; the first and last are anchored and the others found
left to right (:class:`Glob`). A route value is a label (a ``data_source``, a task name): one longer than
:data:`MAX_VALUE` (1,024 characters) is matched only by a glob that is nothing but ``*`` (a catch-all), so
matching a row costs at most about ``MAX_VALUE`` x the keys' characters. Each distinct value of a batch is
matched once, and the request deadline is checked between rows.

On an event loop (the service), :meth:`Route.ascore_detailed` awaits the async faces of the rewards it routes
to (a routed judge waits on the loop and holds no thread) and runs the others in threads, the routes at once.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.core import Completion, Explained, Reward, RewardError, Scored, check_deadline
from rewardkit.redact import clip, shown
from rewardkit.registry import register
from rewardkit.rewards._composed import inner_name, inner_reward
from rewardkit.spec import CallerParam

__all__ = ["MAX_KEY", "MAX_VALUE", "Glob", "KeyMatcher", "Route", "ascore_reward"]

MAX_KEY = 256  # characters in a route key
MAX_VALUE = 1_024  # characters of a route value matched against the glob keys (longer: catch-alls only)


def _pieces(glob: str) -> list[tuple[str, int]]:
    """``glob`` split at its ``*`` (not one inside a ``[...]`` class), each piece with the number of
    characters it matches. Where a class ends follows :func:`fnmatch.translate`: a ``]`` right after
    ``[`` or ``[!`` belongs to the class, and a ``[`` with no ``]`` after it is a literal."""
    pieces: list[tuple[str, int]] = []
    start, length, i, n = 0, 0, 0, len(glob)
    while i < n:
        char = glob[i]
        i += 1
        if char == "*":
            pieces.append((glob[start : i - 1], length))
            start, length = i, 0
            continue
        if char == "[":
            j = i + 1 if i < n and glob[i] == "!" else i
            j = j + 1 if j < n and glob[j] == "]" else j
            while j < n and glob[j] != "]":
                j += 1
            if j < n:
                i = j + 1  # the class: one character
        length += 1
    pieces.append((glob[start:], length))
    return pieces


def _piece_regex(piece: str) -> re.Pattern[str]:
    """A piece without ``*`` as a regex matching exactly as many characters as the piece has (fnmatch's
    translation of it, without its end anchor ``\\Z``)."""
    translated = fnmatch.translate(piece)
    return re.compile(translated.removesuffix("\\Z").removesuffix("\\z"))


class Glob:
    """One glob key, compiled once; :meth:`match` is :func:`fnmatch.fnmatchcase` in time linear in the
    value (the pieces between ``*`` match fixed lengths, so the leftmost place of each is the right one).

    >>> glob = Glob("open*/[!x]?m*")
    >>> [glob.match(v) for v in ("openai/gsm8k", "openai/xsm8k", "open-x/abm", "opengsm")]
    [True, False, True, False]
    """

    def __init__(self, glob: str) -> None:
        self.glob = glob
        pieces = _pieces(glob)
        self.stars = len(pieces) > 1
        (head, self.head_len), (tail, self.tail_len) = pieces[0], pieces[-1]
        self._head = _piece_regex(head) if head else None
        self._tail = _piece_regex(tail) if tail and self.stars else None
        self._middle = [_piece_regex(piece) for piece, _ in pieces[1:-1] if piece]
        #: nothing but ``*``: the one kind of glob that a value longer than MAX_VALUE may match
        self.catch_all = self.stars and not head and not tail and not self._middle

    def match(self, value: str) -> bool:
        """Whether ``value`` matches (a value over :data:`MAX_VALUE` characters only a catch-all)."""
        if len(value) > MAX_VALUE:
            return self.catch_all
        if not self.stars:
            return self._head is not None and self._head.fullmatch(value) is not None
        end = len(value) - self.tail_len
        if end < self.head_len or (self._head is not None and self._head.match(value) is None):
            return False
        pos = self.head_len
        for piece in self._middle:
            found = piece.search(value, pos, end)
            if found is None:
                return False
            pos = found.end()
        return self._tail is None or self._tail.match(value, end) is not None


class KeyMatcher:
    """Values to keys: a key equal to the value first, then the glob keys (``aime*``) in their order. The
    globs are compiled here, once (fnmatch's own cache is process-wide and would keep callers' patterns)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.keys = list(keys)
        self._exact = set(self.keys)
        self._globs = [Glob(k) for k in self.keys if any(c in k for c in "*?[")]

    def match(self, value: str) -> str | None:
        if value in self._exact:
            return value
        return next((glob.glob for glob in self._globs if glob.match(value)), None)


@register(
    "route",
    columns=[],
    caller_params={
        "column": CallerParam(),
        "routes": CallerParam(reward_spec_map=True),
        "unknown": CallerParam(),
    },
    required_params=["routes"],
)
@dataclass(frozen=True)
class Route(Reward):
    """Route: each row scored by the reward its ``column`` value names (``routes``: value -> reward).

    Args:
        column: the column whose value picks the route (``task``, veRL's ``data_source``...).
        routes: ``{value or glob: reward name or {"name", "params", "columns"}}``.
        unknown: ``"raise"`` (default) for a row no route matches, or ``"none"`` to score it ``None``.
    """

    column: str = "task"
    routes: Mapping[str, Any] = field(default_factory=dict)
    unknown: str = "raise"

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"route: column must be a column name, got {self.column!r}")
        if not isinstance(self.routes, Mapping) or not self.routes:
            raise ValueError('route: routes must map values to rewards, e.g. {"gsm8k": "math"}')
        if self.unknown not in ("raise", "none"):
            raise ValueError(f"route: unknown must be 'raise' or 'none', got {self.unknown!r}")
        built: dict[str, Reward] = {}
        for key, spec in self.routes.items():
            if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY:
                raise ValueError(f"route: route keys are strings of 1 to {MAX_KEY} characters, got {key!r}")
            built[key] = inner_reward(spec, f"route {key!r}")
        object.__setattr__(self, "_built", built)
        object.__setattr__(self, "_matcher", KeyMatcher(built))

    @property
    def required_columns(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def optional(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for reward in self._rewards().values():
            required, optional = reward.caller_columns()
            names.update(dict.fromkeys((*required, *optional)))
        names.pop(self.column, None)
        return tuple(names)

    def _rewards(self) -> dict[str, Reward]:
        built: dict[str, Reward] = object.__getattribute__(self, "_built")
        return built

    # -- lifecycle: a route holds the rewards it routes to
    def ready(self, timeout_s: float) -> bool | None:
        answers = [r.ready(timeout_s) for r in self._rewards().values()]
        known = [a for a in answers if a is not None]
        return all(known) if known else None

    def stats(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for reward in self._rewards().values():
            out.update(reward.stats())
        return out

    def notes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for reward in self._rewards().values():
            out.update(reward.notes())
        return out

    def close(self) -> None:
        for reward in self._rewards().values():
            reward.close()

    def params(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "routes": {k: inner_name(v) for k, v in self.routes.items()},
            "unknown": self.unknown,
        }

    def route_of(self, value: Any) -> str | None:
        """The route key that ``value`` takes (an exact key first, then the globs in order), or ``None``."""
        label = _label(value)
        return None if label is None else self._key_matcher().match(label)

    def _key_matcher(self) -> KeyMatcher:
        matcher: KeyMatcher = object.__getattribute__(self, "_matcher")
        return matcher

    def _groups(self, columns: dict[str, list[Any]]) -> dict[str, list[int]]:
        """The rows of each route key, in order (rows without a route in none; raises per ``unknown``).
        Each distinct value is matched once; the request deadline is checked before each row."""
        groups: dict[str, list[int]] = {}
        matched: dict[str, str | None] = {}  # label -> key, for this batch
        match = self._key_matcher().match
        for i, value in enumerate(columns[self.column]):
            check_deadline(f"reward {self.__name__!r}, row {i}")
            if value is None:  # a row without a key: no_route
                continue
            label = _label(value)
            if label is None:
                key = None
            elif label in matched:
                key = matched[label]
            else:
                key = matched[label] = match(label)
            if key is None:
                if self.unknown == "raise":
                    known = clip(", ".join(self._rewards()))
                    raise RewardError(
                        f"reward {self.__name__!r}: row {i} has {self.column}={shown(value)}, which no "
                        f"route matches; routes: {known} (unknown='none' scores such rows None)"
                    )
                continue
            groups.setdefault(key, []).append(i)
        return groups

    def _share(
        self, key: str, rows: list[int], completions: Sequence[Completion], columns: dict[str, list[Any]]
    ) -> tuple[Reward, list[Completion], dict[str, list[Any]]]:
        """A route's reward, its rows' completions and those rows of the columns that reward reads."""
        reward = self._rewards()[key]
        required, optional = reward.caller_columns()
        sub = {name: [columns[name][i] for i in rows] for name in (*required, *optional) if name in columns}
        return reward, [completions[i] for i in rows], sub

    def _shares(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]]
    ) -> tuple[dict[str, list[int]], list[tuple[Reward, list[Completion], dict[str, list[Any]]]]]:
        """The rows of each route key, and each route's :meth:`_share` of the batch."""
        groups = self._groups(columns)
        return groups, [self._share(key, rows, completions, columns) for key, rows in groups.items()]

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        out: list[Explained] = [Explained(None, "no_route")] * len(completions)
        for key, rows in self._groups(columns).items():
            reward, shared, sub = self._share(key, rows, completions, columns)
            scored = reward.score_detailed(shared, raise_on_error=raise_on_error, **sub)
            for j, i in enumerate(rows):
                out[i] = Explained(scored.values[j], scored.reasons[j], scored.details[j])
        return out

    # -- async face: the service awaits it (rewardkit.engine.ascore_batch)
    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """Score on the caller's event loop: each route's rewards at once, through their own async face
        when they have one (the judge: no thread held while it waits), else in a thread."""
        bound = self.bind_columns(completions, columns)
        # matching rows to keys is CPU work on callers' values: in a thread (carrying the deadline), so the
        # event loop goes on answering (/healthz) meanwhile
        groups, shares = await asyncio.to_thread(self._shares, completions, bound)
        tasks = [
            asyncio.ensure_future(ascore_reward(reward, shared, **sub)) for reward, shared, sub in shares
        ]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:  # one route failed (the deadline, a missing column): stop the others
            for task in tasks:
                task.cancel()
            raise
        n = len(completions)
        values: list[float | None] = [None] * n
        reasons: list[str | None] = ["no_route"] * n
        details: list[Any] = [None] * n
        for rows, scored in zip(groups.values(), results, strict=True):
            for j, i in enumerate(rows):
                values[i], reasons[i], details[i] = scored.values[j], scored.reasons[j], scored.details[j]
        return Scored(values, reasons, details)

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values


def _label(value: Any) -> str | None:
    """A route column's value as the text keys are matched against (``None``: an integer with more digits
    than Python converts, which no key names)."""
    try:
        return value if isinstance(value, str) else str(value)
    except ValueError:
        return None


async def ascore_reward(reward: Reward, completions: Sequence[Completion], **columns: Any) -> Scored:
    """``reward``'s detailed scores from an event loop: awaited through its async face
    (``ascore_detailed``) when it has one, else computed in a thread (which carries the request deadline).

    >>> import rewardkit
    >>> asyncio.run(ascore_reward(rewardkit.get("format"), ["<think>a</think><answer>b</answer>"])).values
    [1.0]
    """
    face = getattr(reward, "ascore_detailed", None)
    if face is not None:
        scored: Scored = await face(completions, **columns)
        return scored
    return await asyncio.to_thread(lambda: reward.score_detailed(completions, **columns))
