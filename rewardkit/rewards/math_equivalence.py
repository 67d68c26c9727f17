"""Math answer equivalence: the final answer against the reference, by Math-Verify, with hard timeouts.

Extract, then compare. :func:`rewardkit.extract.gold_answer` reads the gold and
:func:`rewardkit.extract.math_answer` the prediction (after the last ``</think>``: the last ``<answer>``, the
final boxes as one answer set, ``#### x`` / ``Answer: x`` / "the final answer is x"; the last number with
``extract="lenient"``). Comparison runs in :mod:`rewardkit.verify`: both sides normalised (degree signs,
units, unicode roots and pi), fast exact paths, guards, then Math-Verify in killable worker processes.

What an item scores when no comparison decided it: ``None`` (no verdict: trainers skip the item) for a
gold that cannot serve as one (``missing_solution``, ``invalid_gold``: a container, bytes, broken text or
nothing but spacing; ``gold_unparseable``, ``gold_too_long``) and for a pair lost to its worker dying twice
(``worker_crashed``); ``wrong`` (0.0) for an answer too costly to check (``timeout``, ``memory_limit``,
the guards' reasons), as peers score it. The request's deadline is checked at every item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import (
    Completion,
    Explained,
    Reward,
    Verdict,
    binary_values,
    check_deadline,
    completion_text,
    finite_number,
    revalue,
)
from rewardkit.extract import EXTRACT_MODES
from rewardkit.registry import named, register
from rewardkit.spec import CallerParam
from rewardkit.verify import pool
from rewardkit.verify.rows import UNREAD, Pending, compared

__all__ = ["MathEquivalence", "math_equivalence"]


@register(
    "math",
    columns=["solution"],
    optional_columns=["choices"],
    # Pool size and memory are the operator's (one pool per server configuration); a caller sizes its own
    # request's work within caps.
    caller_params={
        "timeout_s": CallerParam(cap=60),
        "max_answer_chars": CallerParam(cap=100_000),
        "extract": CallerParam(),
        "rel_tol": CallerParam(),
        "precision": CallerParam(),
        "strict": CallerParam(),
        "set_relations": CallerParam(),
        "correct": CallerParam(),
        "wrong": CallerParam(),
    },
)
@dataclass(frozen=True)
class MathEquivalence(Reward):
    """Math accuracy: 1.0 when the final answer is equivalent to the reference (Math-Verify + SymPy).

    Args:
        timeout_s: hard wall-clock limit per distinct (answer, gold) pair; fractions allowed.
        workers: worker processes (default: REWARDKIT_MATH_WORKERS, else the CPU count).
        memory_mb: address-space cap of each worker (0: none).
        max_answer_chars: longer answers are wrong without being parsed.
        extract: ``"strict"`` (an answer block, a box or an answer phrase) or ``"lenient"`` (then also the
            last number or ``$...$`` of the last sentence, for eval-style outputs).
        rel_tol: plain numbers within this relative difference of the gold are equal (0: off), as physics
            golds are graded; it decides two plain numbers before ``precision`` is asked.
        precision: decimal places to which a decimal is compared with another number (Math-Verify's
            ``float_rounding``, 0 to 15). At 6, the default, a decimal equals an exact value that agrees to
            six places and two decimals compare exactly; at any other value a decimal equals any number that
            rounds alike (``0.33`` is ``\\frac{1}{3}`` at 2), as Math-Verify rounds.
        strict: ``False`` matches variables by position (Math-Verify's ``strict``: ``f(y)`` is ``f(x)``,
            ``x + 1`` is ``y + 1``); the default keeps names.
        set_relations: ``True`` lets a relation equal a set (``-2 \\le x \\le 7`` is ``x \\in [-2, 7]``;
            Math-Verify's ``allow_set_relation_comp``); off by default.
        correct, wrong: what a right and a wrong answer are worth (1.0 and 0.0; DAPO: 1 and -1).

    Verdicts are kept per options: two rewards with other options in one process share the workers, never
    a verdict.

    >>> import rewardkit
    >>> rewardkit.get("math")(["\\\\boxed{0.33}"], solution=["\\\\frac{1}{3}"])
    [0.0]
    >>> rewardkit.get("math", precision=2)(["\\\\boxed{0.33}"], solution=["\\\\frac{1}{3}"])
    [1.0]
    """

    timeout_s: float = 5.0
    workers: int | None = None
    memory_mb: int = 2048
    max_answer_chars: int = 1000
    extract: str = "standard"
    rel_tol: float = 0.0
    precision: int = 6
    strict: bool = True
    set_relations: bool = False
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        t = self.timeout_s
        if not finite_number(t) or not 0 < t <= 600:
            raise ValueError(f"math: timeout_s must be a number of seconds in (0, 600], got {t!r}")
        object.__setattr__(self, "timeout_s", float(t))
        if self.workers is not None and (
            isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1
        ):
            raise ValueError(f"math: workers must be a positive integer or null, got {self.workers!r}")
        m = self.memory_mb
        if isinstance(m, bool) or not isinstance(m, int) or (m != 0 and m < 256):
            raise ValueError(f"math: memory_mb must be 0 (no cap) or at least 256, got {m!r}")
        c = self.max_answer_chars
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ValueError(f"math: max_answer_chars must be a positive integer, got {c!r}")
        r = self.rel_tol
        if not finite_number(r) or not 0.0 <= r < 1.0:
            raise ValueError(f"math: rel_tol must be a number in [0, 1), got {r!r}")
        object.__setattr__(self, "rel_tol", float(r))
        p = self.precision
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= MAX_PRECISION:
            raise ValueError(
                f"math: precision must be an integer number of decimal places in [0, {MAX_PRECISION}], "
                f"got {p!r}"
            )
        for name in ("strict", "set_relations"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"math: {name} must be true or false, got {getattr(self, name)!r}")
        binary_values("math", self.correct, self.wrong)
        if self.extract not in EXTRACT_MODES:
            raise ValueError(f"math: extract must be one of {', '.join(EXTRACT_MODES)}, got {self.extract!r}")
        pool.require_math()

    def params(self) -> dict[str, Any]:
        return {
            "timeout_s": self.timeout_s,
            "workers": self.workers,
            "memory_mb": self.memory_mb,
            "max_answer_chars": self.max_answer_chars,
            "extract": self.extract,
            "rel_tol": self.rel_tol,
            "precision": self.precision,
            "strict": self.strict,
            "set_relations": self.set_relations,
            "correct": self.correct,
            "wrong": self.wrong,
        }

    # -- lifecycle (the service asks every reward; it never reaches into the pools itself)
    def _verifier(self) -> pool.MathVerifier:
        return pool.get_verifier(self.workers or pool.default_workers(), self.memory_mb)

    def ready(self, timeout_s: float) -> bool | None:
        return self._verifier().ready(timeout_s)

    def stats(self) -> dict[str, float]:
        return dict(self._verifier().stats)

    def close(self) -> None:
        pool.close_verifier(self.workers or pool.default_workers(), self.memory_mb)

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict | Explained]:
        verdicts: list[Verdict | Explained | None] = [None] * len(completions)
        options_column = columns.get("choices") or [None] * len(completions)
        rows: list[tuple[Any, str | None, Any]] = []  # (solution, text, options) of the rows to read
        where: list[int] = []
        for i, (completion, solution) in enumerate(zip(completions, columns["solution"], strict=True)):
            check_deadline("math")
            if isinstance(solution, _NOT_A_GOLD):  # str() of these is a Python repr, not a reference
                verdicts[i] = Verdict(None, "invalid_gold")
                continue
            rows.append((solution, completion_text(completion), options_column[i]))
            where.append(i)
        verifier = self._verifier()
        # the gold, the answer, a choice and what is decided without SymPy (rewardkit.verify.rows): in the
        # workers for a large batch, so that this process's share of it runs in parallel too
        read = verifier.read_many(
            rows,
            mode=self.extract,
            rel_tol=self.rel_tol,
            max_chars=self.max_answer_chars,
            options=pool.Options(self.precision, self.strict, self.set_relations),
        )
        pending: list[tuple[int, Pending]] = []
        for i, one in zip(where, read, strict=True):
            if isinstance(one, Pending):
                pending.append((i, one))
            else:
                verdicts[i] = one
        if pending:
            results = verifier.judge(
                [one for _, one in pending], timeout_s=self.timeout_s, max_chars=self.max_answer_chars
            )
            for (i, one), (equal, reason) in zip(pending, results, strict=True):
                check_deadline("math")
                check = one.check
                detail = {"answer": check.prediction, "gold": check.gold}
                if reason not in UNREAD:  # refused unread: nothing compared
                    detail["compared"] = one.compared if one.compared is not None else compared(check)
                verdicts[i] = Explained(None if equal is None else float(equal), reason, detail)
        judged = [v if v is not None else Verdict(0.0, "internal_error") for v in verdicts]
        return revalue(judged, self.correct, self.wrong)


_NOT_A_GOLD = (Mapping, list, tuple, set, frozenset, bytes, bytearray)
MAX_PRECISION = 15  # decimal places: a double holds no more


@named("math")
def math_equivalence(
    completions: Sequence[Completion],
    solution: Sequence[Any],
    *,
    timeout_s: float = 5.0,
    workers: int | None = None,
    memory_mb: int = 2048,
    max_answer_chars: int = 1000,
    extract: str = "standard",
    **kwargs: Any,
) -> list[float | None]:
    """Math accuracy of each completion against its reference solution (the registry's ``math``).

    Args:
        completions: strings or chat message lists.
        solution: the reference per completion: a solution ending in ``\\boxed{}``, an ``<answer>``
            block, or a bare answer.
        timeout_s: hard limit per distinct (answer, gold) pair.
        workers: worker processes (default: REWARDKIT_MATH_WORKERS, else the CPU count).
        memory_mb: address-space cap per worker.
        max_answer_chars: longer answers are wrong without being parsed.
        extract: ``"lenient"`` also reads the last number of the last sentence.

    Returns:
        1.0 when equivalent, 0.0 when not (or on no answer, a timeout, a refused answer), ``None`` when
        the reference cannot be read or the comparison was lost (``worker_crashed``: its worker died
        twice).

    >>> math_equivalence(["so the answer is \\\\boxed{\\\\dfrac{1}{2}}", "<answer>0.4</answer>"],
    ...                  solution=["$\\\\boxed{\\\\frac12}$", "\\\\boxed{\\\\frac{1}{2}}"])
    [1.0, 0.0]
    """
    reward = MathEquivalence(
        timeout_s=timeout_s,
        workers=workers,
        memory_mb=memory_mb,
        max_answer_chars=max_answer_chars,
        extract=extract,
    )
    return reward(completions, solution=solution, **kwargs)
