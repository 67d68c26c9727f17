"""What runs inside the math worker processes: Math-Verify parsing and verification.

Only strings go in and only ``(equal, reason)`` tuples come out: SymPy objects never cross into the parent.
Each worker is single-threaded, so a soft ``setitimer`` alarm (fractions of a second work) interrupts
Python-level work early and keeps the worker alive; the parent's hard limit (pebble kills the process)
catches what a signal cannot interrupt, such as one huge integer power inside C code.
"""

from __future__ import annotations

import functools
import logging
import resource
import signal
from types import FrameType
from typing import Any

from latex2sympy2_extended.latex2sympy2 import NormalizationConfig
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

# The answer text was already extracted and normalised: read it as LaTeX inside \boxed{}, or as a plain
# expression. Units were split off by rewardkit.verify.normalise, which compares them and never drops one
# glued to a value: Math-Verify's own unit stripping would read \frac{37}{4}m as 37/4.
_NORMALISE = NormalizationConfig(
    basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="all", equations=False
)
_ANSWER = [LatexExtractionConfig(normalization_config=_NORMALISE), ExprExtractionConfig()]


class SoftTimeout(BaseException):
    """Raised by the alarm; a BaseException so that libraries' ``except Exception`` cannot swallow it."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise SoftTimeout


def init_worker(memory_mb: int) -> None:
    """Pool initializer: cap the address space and install the alarm handler."""
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.signal(signal.SIGALRM, _on_alarm)


def _parse_answer(text: str) -> list[Any]:
    return parse("\\boxed{" + text + "}", extraction_config=_ANSWER, parsing_timeout=None)  # type: ignore[no-any-return]


# Golds repeat across a group and across batches: each worker parses a distinct gold once.
_parse_gold = functools.lru_cache(maxsize=4096)(_parse_answer)


def check(gold: str, prediction: str, soft_timeout_s: float) -> tuple[bool | None, str | None]:
    """Is ``prediction`` equivalent to ``gold``? ``(None, "gold_unparseable")`` if the gold cannot be read."""
    try:
        return _check(gold, prediction, soft_timeout_s)
    except SoftTimeout:  # also when the alarm lands while _check is already returning
        return False, "timeout"


def _check(gold: str, prediction: str, soft_timeout_s: float) -> tuple[bool | None, str | None]:
    signal.setitimer(signal.ITIMER_REAL, max(soft_timeout_s, 0.001))
    try:
        gold_parsed = _parse_gold(gold)
        if not gold_parsed:
            return None, "gold_unparseable"
        predicted = _parse_answer(prediction)
        if not predicted:
            return False, "unparseable_answer"
        return bool(verify(gold_parsed, predicted, timeout_seconds=None)), None
    except MemoryError:
        return False, "memory_limit"
    except RecursionError:
        return False, "too_deep"
    except Exception as exc:  # a parser bug on one answer is that answer's problem
        return False, f"verify_error:{type(exc).__name__}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _warm_up() -> None:
    """Build the parsers' lazy state once, here in the forkserver, so that every worker forked from it
    (including each replacement of a killed one) starts warm instead of paying for it on its first pair."""
    try:
        verify(_parse_answer("x^2+1"), _parse_answer("\\frac{2}{2}+x^{2}"), timeout_seconds=None)
    except Exception:  # a warm-up that fails costs the first pair some time, nothing more
        pass


# Math-Verify warns on every call that its own signal timeouts are off: ours are on, in these processes.
logging.getLogger("math_verify").setLevel(logging.ERROR)
_warm_up()
