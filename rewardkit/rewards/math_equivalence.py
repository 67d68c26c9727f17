"""Math answer equivalence: the final answer against the reference, by Math-Verify, with hard timeouts.

Extract, then compare. The gold is the last ``<answer>`` of ``solution``, else its last ``\\boxed{}``,
else the whole solution. The prediction is the last ``<answer>`` of the completion (its last ``\\boxed{}``
inside, if any), else the completion's last ``\\boxed{}``, else an anchored form in the completion's tail
("the final answer is ..."). Comparison runs in :mod:`rewardkit.equivalence`: fast exact paths, guards,
then Math-Verify in killable worker processes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, Reward, Verdict, completion_text
from rewardkit.equivalence import (
    Check,
    MathVerifier,
    close_verifier,
    default_workers,
    get_verifier,
    require_math,
)
from rewardkit.extract import math_answer, math_gold
from rewardkit.policy import CallerParam
from rewardkit.registry import register

__all__ = ["MathEquivalence", "math_equivalence"]

ANCHOR_TAIL_CHARS = 600  # where "the final answer is ..." is looked for when there is no answer block
_ANCHOR = re.compile(r"answer", re.IGNORECASE)


def gold_text(solution: object) -> str | None:
    """The gold answer text of a ``solution`` value, or ``None`` when there is none."""
    if solution is None or isinstance(solution, bool):
        return None
    if isinstance(solution, float) and not math.isfinite(solution):
        return None
    text = math_gold(solution if isinstance(solution, str) else str(solution))
    return text or None


@register(
    "math",
    columns=["solution"],
    # Pool size and memory are the operator's (one pool per server configuration); a caller sizes its own
    # request's work within caps.
    caller_params={"timeout_s": CallerParam(cap=60), "max_answer_chars": CallerParam(cap=100_000)},
)
@dataclass(frozen=True)
class MathEquivalence(Reward):
    """Math accuracy: 1.0 when the final answer is equivalent to the reference (Math-Verify + SymPy).

    Args:
        timeout_s: hard wall-clock limit per distinct (answer, gold) pair; fractions allowed.
        workers: worker processes (default: REWARDKIT_MATH_WORKERS, else the CPU count).
        memory_mb: address-space cap of each worker (0: none).
        max_answer_chars: longer answers are wrong without being parsed.
    """

    timeout_s: float = 5.0
    workers: int | None = None
    memory_mb: int = 2048
    max_answer_chars: int = 1000

    def __post_init__(self) -> None:
        t = self.timeout_s
        if isinstance(t, bool) or not isinstance(t, int | float) or not (0 < t <= 600) or t != t:
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
        require_math()

    def params(self) -> dict[str, Any]:
        return {
            "timeout_s": self.timeout_s,
            "workers": self.workers,
            "memory_mb": self.memory_mb,
            "max_answer_chars": self.max_answer_chars,
        }

    # -- lifecycle (the service asks every reward; it never reaches into the pools itself)
    def _verifier(self) -> MathVerifier:
        return get_verifier(self.workers or default_workers(), self.memory_mb)

    def ready(self, timeout_s: float) -> bool | None:
        return self._verifier().ready(timeout_s)

    def stats(self) -> dict[str, float]:
        return dict(self._verifier().stats)

    def close(self) -> None:
        close_verifier(self.workers or default_workers(), self.memory_mb)

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(completions)
        pending: list[tuple[int, Check]] = []
        for i, (completion, solution) in enumerate(zip(completions, columns["solution"], strict=True)):
            gold = gold_text(solution)
            if gold is None:
                verdicts[i] = Verdict(None, "missing_solution")
                continue
            text = completion_text(completion)
            if text is None:
                verdicts[i] = Verdict(0.0, "invalid_completion")
                continue
            answer = math_answer(text)
            if answer is None:
                tail = text[-ANCHOR_TAIL_CHARS:]
                if _ANCHOR.search(tail):
                    pending.append((i, Check(gold, tail, anchored=True)))
                else:
                    verdicts[i] = Verdict(0.0, "no_answer")
            elif not answer:
                verdicts[i] = Verdict(0.0, "empty_answer")
            else:
                pending.append((i, Check(gold, answer)))
        if pending:
            results = self._verifier().verify_many(
                [check for _, check in pending], timeout_s=self.timeout_s, max_chars=self.max_answer_chars
            )
            for (i, _), (equal, reason) in zip(pending, results, strict=True):
                verdicts[i] = Verdict(None if equal is None else float(equal), reason)
        return [v if v is not None else Verdict(0.0, "internal_error") for v in verdicts]


def math_equivalence(
    completions: Sequence[Completion],
    solution: Sequence[Any],
    *,
    timeout_s: float = 5.0,
    workers: int | None = None,
    memory_mb: int = 2048,
    max_answer_chars: int = 1000,
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

    Returns:
        1.0 when equivalent, 0.0 when not (or on no answer, a timeout, a refused answer), ``None`` when
        the reference cannot be read.

    >>> math_equivalence(["so the answer is \\\\boxed{\\\\dfrac{1}{2}}", "<answer>0.4</answer>"],
    ...                  solution=["$\\\\boxed{\\\\frac12}$", "\\\\boxed{\\\\frac{1}{2}}"])
    [1.0, 0.0]
    """
    reward = MathEquivalence(
        timeout_s=timeout_s, workers=workers, memory_mb=memory_mb, max_answer_chars=max_answer_chars
    )
    return reward(completions, solution=solution, **kwargs)
