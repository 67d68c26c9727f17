"""The reward contract: completions in, one value (and one reason) per completion out.

A reward is called as ``reward(completions, **columns) -> list[float | None]``:

* ``completions`` is a list of strings, or of chat message lists
  (``[{"role": "assistant", "content": "..."}]``; the last assistant message counts, see
  :mod:`rewardkit.chat`);
* every column is a list aligned with ``completions``; unknown columns are ignored;
* ``None`` means "not applicable to this sample" (trainers skip it).

:meth:`Reward.score_detailed` returns the same values plus a reason per item, so that callers (the CLI,
the service) can say *why* a sample got what it got. One bad sample never fails the batch: it gets its
reward's defined value and a reason.
"""

from __future__ import annotations

import abc
import itertools
import json
import logging
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from rewardkit.chat import completion_text
from rewardkit.deadlines import DeadlineExceeded, check_deadline, deadline, deadline_at, remaining_s
from rewardkit.redact import clip, shown
from rewardkit.trainer_names import note_trainer_name

__all__ = [
    "BackendUnavailable",
    "ColumnError",
    "Completion",
    "DeadlineExceeded",
    "Explained",
    "Reward",
    "RewardError",
    "ItemReward",
    "Scored",
    "Unreachable",
    "Verdict",
    "binary_values",
    "MAX_REWARD_VALUE",
    "check_deadline",
    "completion_text",
    "deadline",
    "finite_number",
    "missing_column",
    "number_error",
    "remaining_s",
    "reward_value",
    "revalue",
]

logger = logging.getLogger("rewardkit")


MAX_ALIAS = 64
ALIAS_RE = re.compile(rf"^[A-Za-z][A-Za-z0-9_.\-]{{0,{MAX_ALIAS - 1}}}$")

#: A completion as trainers pass it: plain text, or a list of chat messages.
Completion = str | Sequence[Mapping[str, Any]]


class RewardError(ValueError):
    """A reward was misused or misbehaved (bad parameters, a user reward returning the wrong length)."""


class ColumnError(RewardError):
    """A required column is missing, or a column is not aligned with the completions."""


class BackendUnavailable(RuntimeError):
    """Something a reward needs outside the process (a judge endpoint) could not be reached at all: the
    batch fails loudly rather than scoring every item ``None``."""


class Unreachable(BackendUnavailable):
    """An endpoint a reward calls (a judge's base URL) had nothing answering when ``ready`` asked: no
    connection, or no such host. Unlike a backend that can never run here, it may come up later; the
    message names the URL (its secrets masked) and what failed."""


def finite_number(value: object) -> bool:
    """Whether ``value`` is a finite ``int`` or ``float``: not a bool, not NaN or an infinity, and not an
    integer too large for a float (where ``math.isfinite`` would raise ``OverflowError``).

    >>> [finite_number(v) for v in (3, -0.5, True, "1", float("nan"), float("inf"), 10**400)]
    [True, True, False, False, False, False, False]
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def number_error(owner: str, name: str, rule: str, value: object) -> ValueError:
    """The ``ValueError`` for a parameter ``name`` of ``owner`` that is not ``rule`` ("a finite number"); an
    integer too large for a float is called that rather than printed in full.

    >>> number_error("cosine", "max_len_value_wrong", "a finite number", 10**400)
    ValueError('cosine: max_len_value_wrong is a number too large to use; it must be a finite number')
    """
    if isinstance(value, int) and not isinstance(value, bool) and not finite_number(value):
        return ValueError(f"{owner}: {name} is a number too large to use; it must be {rule}")
    return ValueError(f"{owner}: {name} must be {rule}, got {shown(value)}")


#: The largest magnitude a reward's value parameters (``correct``, ``wrong``, a penalty...) may have. With
#: weights bounded by ``spec.MAX_WEIGHT`` and at most 256 rewards a spec, a weighted sum cannot overflow.
MAX_REWARD_VALUE = 1e6


def reward_value(owner: str, name: str, value: object) -> None:
    """Check a value parameter: a finite number within ``+-MAX_REWARD_VALUE``; ``ValueError`` otherwise.

    >>> reward_value("countdown", "correct", 1e308)
    Traceback (most recent call last):
    ...
    ValueError: countdown: correct must be a finite number within +-1e+06, got 1e+308
    """
    if not finite_number(value) or abs(value) > MAX_REWARD_VALUE:  # type: ignore[arg-type]
        raise number_error(owner, name, f"a finite number within +-{MAX_REWARD_VALUE:g}", value)


def binary_values(owner: str, correct: object, wrong: object) -> None:
    """Check a binary reward's ``correct`` and ``wrong`` values (finite numbers within ``+-MAX_REWARD_VALUE``;
    DAPO-style scoring uses ``correct=1, wrong=-1``); ``ValueError`` otherwise."""
    for name, value in (("correct", correct), ("wrong", wrong)):
        reward_value(owner, name, value)


def revalue(verdicts: Sequence[Any], correct: float, wrong: float) -> list[Any]:
    """A binary reward's verdicts with right (1.0) worth ``correct`` and everything else ``wrong``; ``None``
    stays ``None`` and reasons and details stay as they are."""
    if correct == 1.0 and wrong == 0.0:
        return list(verdicts)
    out = []
    for verdict in verdicts:
        value = verdict[0]
        if value is not None:
            verdict = verdict._replace(value=correct if value >= 1.0 else wrong)
        out.append(verdict)
    return out


class Verdict(NamedTuple):
    """One item's result: the value, and a short machine-readable reason when it was not judged normally.

    ``reason`` is ``None`` when the answer was read and compared on its merits; otherwise a code such as
    ``no_answer``, ``invalid_expression`` or ``invalid_target`` that says what stopped a normal judgement.
    """

    value: float | None
    reason: str | None = None


class Explained(NamedTuple):
    """A :class:`Verdict` with what a user needs when it looks wrong (math: the answer read and the gold);
    it lands in ``score_detailed(...).details``."""

    value: float | None
    reason: str | None = None
    detail: Any = None


@dataclass(frozen=True)
class Scored:
    """A batch result: ``values[i]`` and ``reasons[i]`` belong to completion ``i``."""

    values: list[float | None]
    reasons: list[str | None] = field(default_factory=list)
    details: list[Any] = field(default_factory=list)  # e.g. the judge's raw reply, for debugging

    def __post_init__(self) -> None:
        if not self.reasons:
            object.__setattr__(self, "reasons", [None] * len(self.values))
        if not self.details:
            object.__setattr__(self, "details", [None] * len(self.values))
        if not len(self.reasons) == len(self.details) == len(self.values):
            raise RewardError(
                f"{len(self.values)} values, {len(self.reasons)} reasons, {len(self.details)} details"
            )

    @property
    def has_reasons(self) -> bool:
        """True when at least one item carries a reason."""
        return any(r is not None for r in self.reasons)


#: where datasets keep a reward's column under another name: GSM8K's ``answer`` is the ``solution``
COLUMN_ALIASES = {"solution": ("answer", "label", "ground_truth", "gold", "reference")}


def missing_column(
    reward: str, name: str, n: int, given: Iterable[str], source: str | None = None
) -> ColumnError:
    """The :class:`ColumnError` for a required column ``name`` (read from ``source``) that a batch of ``n``
    lacks; when the batch has the column under a name datasets use for it, it says how to map it.

    >>> print(str(missing_column("math", "solution", 2, ["answer", "question"])).split("; ")[-1])
    the batch has 'answer': map it with columns={"solution": "answer"}
    """
    source = source or name
    names = sorted(given)
    mapped = f" (read as {shown(name)})" if source != name else ""
    message = (
        f"reward {reward!r}: required column {shown(source)}{mapped} is missing (expected a list of {n} "
        f"values, one per completion; columns given: {clip(', '.join(names)) or 'none'})"
    )
    alias = next((a for a in COLUMN_ALIASES.get(name, ()) if a in names and a != source), None)
    if alias is not None:
        message += f"; the batch has {alias!r}: map it with columns={json.dumps({name: alias})}"
    return ColumnError(message)


def as_column(name: str, value: object, n: int, reward: str) -> list[Any]:
    """Turn a column into a list of ``n`` items, or raise :class:`ColumnError` naming what is wrong."""
    if hasattr(value, "tolist") and not isinstance(value, list | tuple):
        value = value.tolist()  # numpy arrays, torch tensors
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ColumnError(
            f"reward {reward!r}: column {shown(name)} must be a list with one value per completion "
            f"({n} completions), got {type(value).__name__}"
        )
    if len(value) != n:
        raise ColumnError(
            f"reward {reward!r}: column {shown(name)} has {len(value)} values but there are {n} completions"
        )
    return list(value)


def _normalise(value: object, reward: str, index: int) -> Explained:
    """Check what a reward produced for one item and turn it into a :class:`Verdict`."""
    reason, detail = None, None
    if isinstance(value, Explained):
        value, reason, detail = value
    elif isinstance(value, Verdict):
        value, reason = value
    if value is None:
        return Explained(None, reason, detail)
    if isinstance(value, bool | int | float) or hasattr(value, "__float__"):
        number = float(value)
        if not finite_number(number):
            return Explained(None, "non_finite", detail)
        return Explained(number, reason, detail)
    raise RewardError(
        f"reward {reward!r} returned {type(value).__name__} for item {index}; expected a float or None"
    )


_INVALID_COMPLETION = Verdict(0.0, "invalid_completion")


class Reward(abc.ABC):
    """Base class of every reward: the contract, column checks and per-item reasons.

    Subclasses set ``columns`` (required) and ``optional_columns`` through :func:`rewardkit.register` and
    implement :meth:`_score`. Instances are plain callables with a stable ``__name__`` (the registry name),
    so they pickle, log and plug into trainers as they are.
    """

    name: ClassVar[str] = ""
    columns: ClassVar[tuple[str, ...]] = ()
    optional_columns: ClassVar[tuple[str, ...]] = ()
    #: set per instance by :meth:`configure` (``rewardkit.get(..., alias=..., columns=...)``)
    _alias: str | None = None
    _column_map: Mapping[str, str] | None = None

    @property
    def __name__(self) -> str:
        """What trainers log this reward under: its alias, or its registry name."""
        return self._alias or self.reward_name

    def configure(self, *, alias: str | None = None, columns: Mapping[str, str] | None = None) -> Reward:
        """Name this instance ``alias`` (its ``__name__``, so a trainer's metric name) and read the reward's
        columns from the caller's: ``columns={"solution": "answer"}`` reads ``solution`` from ``answer``.
        Returns the reward itself. ``RewardError`` (a ``ValueError``) for a bad alias or map."""
        if alias is not None:
            if not isinstance(alias, str) or not ALIAS_RE.fullmatch(alias):
                raise RewardError(
                    f"alias must be 1-{MAX_ALIAS} characters: letters, digits, '_ . -', starting with a "
                    f"letter; got {alias!r}"
                )
            object.__setattr__(self, "_alias", alias)
        if columns is not None:
            if not isinstance(columns, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) and k and v for k, v in columns.items()
            ):
                raise RewardError(
                    'columns must map column names to column names, e.g. {"solution": "answer"}'
                )
            unknown = sorted(set(columns) - set(self.accepted_columns))
            if unknown:
                raise RewardError(
                    f"columns: {self.reward_name!r} reads no column(s) {', '.join(unknown)}; it reads "
                    f"{', '.join(self.accepted_columns) or 'none'}"
                )
            object.__setattr__(self, "_column_map", dict(columns))
        return self

    def caller_columns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(required, optional) columns under the names the caller's data has them (after ``columns=``)."""
        rename = self._column_map or {}
        return (
            tuple(rename.get(c, c) for c in self.required_columns),
            tuple(rename.get(c, c) for c in self.optional),
        )

    @property
    def reward_name(self) -> str:
        """The registry name of this reward."""
        return self.name or type(self).__qualname__

    @property
    def required_columns(self) -> tuple[str, ...]:
        return self.columns

    @property
    def accepted_columns(self) -> tuple[str, ...]:
        return self.required_columns + self.optional

    @property
    def optional(self) -> tuple[str, ...]:
        return self.optional_columns

    def __call__(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        """Score a batch: one value per completion (``None``: not applicable)."""
        note_trainer_name(columns, self.__name__, self)
        return self.score_detailed(completions, **columns).values

    def score_detailed(
        self, completions: Sequence[Completion], *, raise_on_error: bool = False, **columns: Any
    ) -> Scored:
        """Score a batch and say why: values plus a reason per item.

        Raises :class:`ColumnError` for a missing or misaligned column. An exception while judging one item
        gives that item ``0.0`` with the reason ``internal_error:<type>`` (or is raised with
        ``raise_on_error=True``, for tests).
        """
        n = len(completions)
        bound = self.bind_columns(completions, columns)
        verdicts = self._score(completions, bound, raise_on_error)
        if len(verdicts) != n:
            raise RewardError(
                f"reward {self.reward_name!r} returned {len(verdicts)} values for {n} completions"
            )
        values: list[float | None] = []
        reasons: list[str | None] = []
        details: list[Any] = []
        for i, verdict in enumerate(verdicts):
            if type(verdict) is Verdict and (verdict[0] is None or type(verdict[0]) is float):
                values.append(verdict[0])  # the common case, kept fast
                reasons.append(verdict[1])
                details.append(None)
                continue
            explained = _normalise(verdict, self.reward_name, i)  # anything but a clean Verdict
            values.append(explained.value)
            reasons.append(explained.reason)
            details.append(explained.detail)
        return Scored(values, reasons, details)

    def bind_columns(
        self, completions: Sequence[Completion], columns: dict[str, Any]
    ) -> dict[str, list[Any]]:
        """Check the batch and its columns; return the required ones and the optional ones given, as lists.

        Raises :class:`ColumnError` for a missing or misaligned column.
        """
        if isinstance(completions, str | bytes) or not isinstance(completions, Sequence):
            raise RewardError(
                f"reward {self.reward_name!r}: completions must be a list, got {type(completions).__name__}"
            )
        n = len(completions)
        bound: dict[str, list[Any]] = {}
        rename = self._column_map or {}
        for name in self.required_columns:
            source = rename.get(name, name)
            if source not in columns:
                raise missing_column(self.__name__, name, n, columns, source)
            bound[name] = as_column(source, columns[source], n, self.__name__)
        for name in self.optional:  # bound only when given, so the reward's defaults apply
            source = rename.get(name, name)
            if columns.get(source) is not None:
                bound[name] = as_column(source, columns[source], n, self.__name__)
        return bound

    @abc.abstractmethod
    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> Sequence[Verdict | Explained | float | None]:
        """Judge a batch whose columns are checked and aligned."""

    def params(self) -> dict[str, Any]:
        """The parameters this instance was configured with."""
        return {}

    # -- lifecycle: what adapters (the service) ask every reward, without knowing its internals
    def ready(self, timeout_s: float) -> bool | None:
        """Whether the process resources this reward needs answer within ``timeout_s`` (starting them if
        needed); ``None`` when it has none to check; :class:`BackendUnavailable` when they never can here,
        :class:`Unreachable` when an endpoint it calls has nothing answering now."""
        return None

    def stats(self) -> dict[str, float]:
        """Figures about this reward's shared resources (cache hits, timeouts, ...), for monitoring."""
        return {}

    def notes(self) -> dict[str, str]:
        """How this reward runs here, for an operator (``/readyz``): the code reward's ``memory_bound``."""
        return {}

    def close(self) -> None:  # noqa: B027 - a hook with nothing to do by default, not an abstract method
        """Release the process resources this reward uses (worker pools); a later call starts them again."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        named = f" as {self._alias}" if self._alias else ""
        mapped = f" columns={dict(self._column_map)}" if self._column_map else ""
        return f"<reward {self.reward_name}({args}){named}{mapped}>"


class ItemReward(Reward):
    """A reward judged one completion at a time: implement :meth:`score_one`.

    ``score_one(text, *values)`` receives the completion's text and that item's value of each column, in
    the order of ``columns`` then ``optional_columns`` (``None`` for an optional column not given). A
    completion that is not text or chat messages gets ``0.0`` with the reason ``invalid_completion``.
    """

    @abc.abstractmethod
    def score_one(self, text: str, *values: Any) -> Verdict | Explained:
        """Judge one completion."""

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict | Explained]:
        n = len(completions)
        ordered = [columns.get(name) or [None] * n for name in self.accepted_columns]
        rows = zip(*ordered, strict=True) if ordered else itertools.repeat(())
        score_one = self.score_one
        out: list[Verdict | Explained] = []
        logged = False
        # the request deadline, checked before each item: a clock read (~60 ns), under 2% of the cheapest
        # reward's item; DeadlineExceeded stops the batch, it is never an item's internal_error
        stop = deadline_at()
        # strict=False: with no columns, rows is an endless repeat of ()
        for i, (completion, values) in enumerate(zip(completions, rows, strict=False)):
            if stop is not None and time.monotonic() >= stop:
                check_deadline(f"reward {self.reward_name!r}, item {i}")
            text = completion if type(completion) is str else completion_text(completion)
            if text is None:
                out.append(_INVALID_COMPLETION)
                continue
            try:
                out.append(score_one(text, *values))
            except DeadlineExceeded:
                raise
            except Exception as exc:
                if raise_on_error:
                    raise
                if not logged:  # once per batch: a systematic bug would otherwise flood the log
                    logger.warning("reward %s failed on item %d", self.reward_name, i, exc_info=True)
                    logged = True
                out.append(Verdict(0.0, f"internal_error:{type(exc).__name__}"))
        return out
