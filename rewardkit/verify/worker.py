"""What runs inside the math worker processes: Math-Verify parsing and verification.

Only strings go in and only ``(equal, reason)`` tuples come out: SymPy objects never cross into the parent.
Each worker is single-threaded, so a soft ``setitimer`` alarm (fractions of a second work) interrupts
Python-level work early and keeps the worker alive; the parent's hard limit (pebble kills the process)
catches what a signal cannot interrupt, such as one huge integer power inside C code.
"""

from __future__ import annotations

import cmath
import logging
import random
import resource
import signal
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import sympy
from latex2sympy2_extended.latex2sympy2 import NormalizationConfig
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy.core.function import AppliedUndef

from rewardkit.lru import LRUCache, text_digest
from rewardkit.verify import latex
from rewardkit.verify.options import DEFAULT_OPTIONS, Options, Pair

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


def init_worker(memory_mb: int, busy: Any = None) -> None:
    """Pool initializer: cap the address space and install the alarm handler. ``busy`` (a shared byte the
    host sets to 1 while it runs a batch) stops :func:`learn` between two texts."""
    global _busy
    _busy = busy
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.signal(signal.SIGALRM, _on_alarm)


def _parse_answer(text: str) -> list[Any]:
    return parse("\\boxed{" + text + "}", extraction_config=_ANSWER, parsing_timeout=None)  # type: ignore[no-any-return]


# Golds repeat across a group and across batches: each worker parses a distinct gold once, and keeps at
# most 4,096 parsed golds, of at most GOLD_CACHE_BYTES of gold text together (a parsed gold's size follows
# its text's), keyed by their digests.
GOLD_CACHE_BYTES = 16 << 20
_golds: LRUCache[bytes, tuple[list[Any], int]] = LRUCache(
    4096, max_total=GOLD_CACHE_BYTES, sizeof=lambda entry: entry[1]
)


def _parse_gold(gold: str) -> list[Any]:
    key = text_digest(gold)
    entry = _golds.get(key)
    if entry is None:
        entry = (_parse_answer(gold), sys.getsizeof(gold))
        _golds.put(key, entry)
    return entry[0]


def judges() -> bool:
    """Whether this worker judges a real pair right (what a readiness check asks of it)."""
    return check("x^2+1", "1+x^2", 5.0) == (True, None)


def check(
    gold: str, prediction: str, soft_timeout_s: float, options: Options = DEFAULT_OPTIONS
) -> tuple[bool | None, str | None]:
    """Is ``prediction`` equivalent to ``gold`` under ``options`` (Math-Verify's ``verify`` options)?
    ``(None, "gold_unparseable")`` if the gold cannot be read. A parsed gold is kept whatever the options
    (parsing does not depend on them); a verdict is not kept here."""
    try:
        return _check(gold, prediction, soft_timeout_s, options)
    except SoftTimeout:  # also when the alarm lands while _check is already returning
        return False, "timeout"


_busy: Any = None  # the host's "a batch is running" flag, a shared byte (init_worker)
# digests of the texts this worker has parsed to learn their forms (learn); forgotten at LEARNT_MAX
LEARNT_MAX = 100_000
_learnt: set[bytes] = set()


def learn(texts: list[str], soft_timeout_s: float, hold_s: float = 0.0, budget_s: float = 10.0) -> int:
    """Parse the texts this worker has not learnt yet, so that the parser's prediction tables know their
    forms before a batch brings them (other workers met them first; each process learns its own tables).

    Each parse has ``soft_timeout_s``, the whole lesson ``budget_s`` (then it ends, as if done: a lesson is
    best effort, never a reason to kill a worker). It stops between two texts once the host's ``busy`` byte
    is set (a batch came in), and keeps the worker at least ``hold_s`` (so that each idle worker takes a
    lesson of the host's, not one worker two). Nothing is kept but the parser's tables and SymPy's caches.
    The number of texts parsed, or -1 when a batch stopped it first."""
    start = time.monotonic()
    parsed = 0
    for text in texts:
        if _is_busy():
            return -1
        if time.monotonic() - start > budget_s:
            break
        key = text_digest(text)
        if key in _learnt:
            continue
        if len(_learnt) >= LEARNT_MAX:
            _learnt.clear()
        _learnt.add(key)
        try:
            _parse_within(text, soft_timeout_s)
        except SoftTimeout:  # also when the alarm lands as the parse returns
            pass
        parsed += 1
    while time.monotonic() - start < hold_s and not _is_busy():
        time.sleep(0.002)
    return parsed


def _is_busy() -> bool:
    return _busy is not None and bool(_busy.value)


def _parse_within(text: str, soft_timeout_s: float) -> None:
    with _alarm(soft_timeout_s):
        try:
            _parse_answer(text)
        except Exception:  # a text that cannot be read teaches nothing more
            pass


MIN_LEFT_S = 0.05  # a later pair of a task starts only with this much of the task's soft limit left


def check_many(pairs: list[Pair], soft_timeout_s: float) -> list[tuple[bool | None, str | None]]:
    """:func:`check` of pairs in turn (each ``(gold, prediction)``, or ``(gold, prediction, options)``),
    all within one soft limit: the results of the first ones. The first
    pair has the whole limit; a later one has what the pairs before it left, and one the limit stops, or
    one with less than ``MIN_LEFT_S`` left to start with, ends the list unchecked (the host checks it
    again, alone, with a limit of its own), so a pair is never timed out on less than its own limit."""
    end = time.monotonic() + soft_timeout_s
    out: list[tuple[bool | None, str | None]] = []
    for gold, prediction, *options in pairs:
        left = end - time.monotonic()
        if out and left < MIN_LEFT_S:
            break
        result = check(gold, prediction, soft_timeout_s if not out else left, *options)
        if out and result == (False, "timeout"):
            break
        out.append(result)
    return out


def _check(
    gold: str, prediction: str, soft_timeout_s: float, options: Options
) -> tuple[bool | None, str | None]:
    with _alarm(soft_timeout_s):
        try:
            gold_parsed = _parse_gold(gold)
            if not gold_parsed:
                return None, "gold_unparseable"
            predicted = _parse_answer(prediction)
            if not predicted:
                return False, "unparseable_answer"
            numeric = numeric_verdict(gold_parsed[0], predicted[0], options)
            if numeric is not None:
                return numeric, None
            equal = verify(
                gold_parsed,
                predicted,
                float_rounding=options.precision,
                strict=options.strict,
                allow_set_relation_comp=options.set_relations,
                timeout_seconds=None,
            )
            return bool(equal), None
        except MemoryError:
            return False, "memory_limit"
        except RecursionError:
            return False, "too_deep"
        except Exception as exc:  # a parser bug on one answer is that answer's problem
            return False, f"verify_error:{type(exc).__name__}"


@contextmanager
def _alarm(soft_timeout_s: float) -> Iterator[None]:
    """The soft alarm (:class:`SoftTimeout`) set for the block, and cleared after it however it ends."""
    signal.setitimer(signal.ITIMER_REAL, max(soft_timeout_s, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


NUMERIC_POINTS = 5  # random points two expressions are evaluated at
NUMERIC_AGREE = 3  # points that must be finite on both sides to confirm
NUMERIC_TOLERANCE = 1e-6  # relative, whatever the magnitude: 1.6e-19 V is not 3.2e-19 V
NUMERIC_PRECISION = 6  # the option precision the numeric check stands for (its tolerance, in places)
MAX_NUMERIC_SYMBOLS = 6
# not compared at sample points: functions of integers, pieces and bounds (floor(x/3) and floor(x/2) agree
# at many points), calculus a point cannot settle
_NOT_EVALUATED = (
    sympy.Derivative,
    sympy.Integral,
    sympy.Sum,
    sympy.Product,
    sympy.floor,
    sympy.ceiling,
    sympy.frac,
    sympy.Min,
    sympy.Max,
    sympy.Abs,
    sympy.sign,
    sympy.Mod,
    sympy.Piecewise,
    sympy.factorial,
    sympy.binomial,
)


def numeric_verdict(gold: Any, prediction: Any, options: Options = DEFAULT_OPTIONS) -> bool | None:
    """Two expressions compared by value at random points (``\\sinh(at)/a`` against
    ``\\frac{1}{2a}(e^{at}-e^{-at})``, where symbolic simplification can take seconds or give up), and two
    equations by their solution sets (:func:`_equation_verdict`).

    ``False`` as soon as they differ at a point (beyond ``NUMERIC_TOLERANCE``, relative; points of magnitude
    0.1 to 20, both signs), ``True`` when they agree at every point where both are finite and those are at
    least ``NUMERIC_AGREE``, ``None`` (ask Math-Verify) for anything else: constants, sets, matrices, a bare
    name against names (Math-Verify reads ``abc`` against ``a b c`` as text, :func:`_a_name`), functions a
    point cannot settle (``_NOT_EVALUATED``). The points range over the variables of both sides: a
    variable only one side has must cancel out of it for the two to be equal (``x + y`` is not ``x + 1``).
    Two different expressions that agree at several random points is the standard probabilistic identity
    test; the points are the same on every run for the same pair.

    It steps aside (``None``: Math-Verify decides, under the options) for options it does not share: a
    ``precision`` other than ``NUMERIC_PRECISION`` (its tolerance is that one) and ``strict=False``
    (variables matched by position: ``x + 1`` is ``y + 1``). ``set_relations`` concerns no pair it judges.
    """
    if options.precision != NUMERIC_PRECISION or not options.strict:
        return None
    try:
        gold, prediction = _defined_values(gold, prediction)
        rng = random.Random(zlib.crc32(f"{gold}|{prediction}".encode()))
        if isinstance(gold, sympy.Eq) and isinstance(prediction, sympy.Eq):
            return _equation_verdict(gold, prediction, rng)
        if not (isinstance(gold, sympy.Expr) and isinstance(prediction, sympy.Expr)):
            return None
        if _a_name(gold, prediction) or _a_name(prediction, gold):
            return None
        symbols = sorted(gold.free_symbols | prediction.free_symbols, key=str)
        if not (gold.free_symbols and prediction.free_symbols) or len(symbols) > MAX_NUMERIC_SYMBOLS:
            return None
        for side in (gold, prediction):
            if side.atoms(AppliedUndef, *_NOT_EVALUATED):
                return None  # f(x), derivatives, sums, piecewise and integer-valued functions: Math-Verify's
        agreed = 0
        for a, b in _sampled(gold, prediction, symbols, rng):
            if abs(a - b) > NUMERIC_TOLERANCE * max(abs(a), abs(b)):  # relative; 0 only equals 0
                return False
            agreed += 1
        return True if agreed >= NUMERIC_AGREE else None
    except (TypeError, ValueError, ArithmeticError, AttributeError, RecursionError):
        return None


def _a_name(one: Any, other: Any) -> bool:
    """Is ``one`` a bare name that Math-Verify reads against ``other`` as text (``abc`` against the
    product ``a b c``, ``e`` against Euler's number)?"""
    if not isinstance(one, sympy.Symbol):
        return False
    parts = sympy.Mul.make_args(other)
    return all(isinstance(part, sympy.Symbol) or part == sympy.E for part in parts)


MAX_EQUATION_SYMBOLS = 12  # an equation of motion names masses, lengths, angles, forces and their rates


def _equation_verdict(gold: sympy.Eq, prediction: sympy.Eq, rng: random.Random) -> bool | None:
    """Two equations have the same solutions (``\\frac{dy}{dx} = \\frac{2xy}{1+x^2}`` against
    ``(x^2+1)\\,\\frac{dy}{dx} = 2yx``, or ``m l \\ddot\\theta + m g \\sin\\theta = f`` against
    ``m l \\ddot\\theta - m g \\sin\\theta = f \\cos\\theta``)?

    Both are written as ``d = lhs - rhs = 0``. When a variable ``s`` both have enters each linearly
    (``d = a s + b``, ``a`` and ``b`` free of ``s``), each equation fixes ``s`` from the others: at random
    values of the others, the root of one side must be a root of the other, both ways (:func:`_same_roots`,
    for each such variable). ``False`` at the first point where it is not (relative to the size of the
    terms), ``True`` after ``NUMERIC_AGREE`` points each way for every such variable when one side is a
    constant multiple of the other (:func:`_proportional`), ``None`` (ask Math-Verify, which solves them)
    otherwise: no such variable, points that say nothing, or a factor that may vanish. An applied unknown
    function ``\\theta(t)`` is an unknown value here, the same on both sides; derivatives and the other
    ``_NOT_EVALUATED`` functions are left to Math-Verify.
    """
    sides = [_opaque(gold.lhs - gold.rhs), _opaque(prediction.lhs - prediction.rhs)]
    if any(side.atoms(*_NOT_EVALUATED) for side in sides):
        return None
    symbols = sorted(sides[0].free_symbols | sides[1].free_symbols, key=str)
    if len(symbols) > MAX_EQUATION_SYMBOLS:
        return None
    linear = _shared_linear_symbols(sides[0], sides[1])
    if not linear:
        return None
    verdicts = [_same_roots(sides, variable, slopes, symbols, rng) for variable, slopes in linear]
    if False in verdicts:
        return False
    if not all(verdicts):
        return None
    return True if _proportional(sides, symbols, rng) else None


def _proportional(sides: list[Any], symbols: list[Any], rng: random.Random) -> bool:
    """Is one side a constant multiple of the other (``d2 = c d1``, ``c`` not 0)? Roots that agree make
    ``d2 / d1`` the ratio of the slopes; when that ratio holds a variable, the other equation has a branch
    of its own where it vanishes (``x y = 2 x^2`` is ``y = 2x`` or ``x = 0``), which Math-Verify's solve
    is asked about instead."""
    ratios = [b / a for a, b in _sampled(sides[0], sides[1], symbols, rng) if a != 0]
    if len(ratios) < NUMERIC_AGREE or ratios[0] == 0:
        return False
    return all(abs(r - ratios[0]) <= NUMERIC_TOLERANCE * abs(ratios[0]) for r in ratios)


MAX_LINEAR_CHECKED = 4


def _shared_linear_symbols(first: Any, second: Any) -> list[tuple[Any, tuple[Any, Any]]]:
    """The variables (by name, at most ``MAX_LINEAR_CHECKED``) that both expressions have and that each
    holds linearly, with each one's coefficient of it."""
    found = []
    for symbol in sorted(first.free_symbols & second.free_symbols, key=str):
        slopes = (first.diff(symbol), second.diff(symbol))
        if all(slope != 0 and symbol not in slope.free_symbols for slope in slopes):
            found.append((symbol, slopes))
            if len(found) == MAX_LINEAR_CHECKED:
                break
    return found


def _same_roots(
    sides: list[Any], variable: Any, slopes: tuple[Any, Any], symbols: list[Any], rng: random.Random
) -> bool | None:
    """At random values of the other variables, is the root in ``variable`` of each side (``d = a s + b``,
    the root ``-b/a``) a root of the other? One variable sees one part of a solution set: ``C (S - L) = 0``
    is ``C = 0`` or ``S = L``, and solving for ``C`` finds only the first, so a root 0 (``b = 0``) counts
    for nothing, and the caller asks every shared linear variable."""
    others = [s for s in symbols if s != variable]
    agreed = [0, 0]
    for _ in range(NUMERIC_POINTS):
        for one in (0, 1):
            point = _random_point(rng, others)
            slope = complex(slopes[one].evalf(30, subs=point))
            rest = complex(sides[one].evalf(30, subs={**point, variable: 0}))
            if not (cmath.isfinite(slope) and cmath.isfinite(rest)) or abs(rest) <= 1e-20 * abs(slope):
                continue  # no root here, or the root 0 of a factor (``C = 0``) that says nothing of the rest
            point[variable] = sympy.sympify(-rest / slope)
            other = sides[1 - one]
            value = complex(other.evalf(30, subs=point))
            size = max(abs(complex(term.evalf(30, subs=point))) for term in sympy.Add.make_args(other))
            if not (cmath.isfinite(value) and cmath.isfinite(size)):
                continue
            if abs(value) > NUMERIC_TOLERANCE * size:
                return False
            agreed[one] += 1
    return True if min(agreed) >= NUMERIC_AGREE else None


def _opaque(expr: Any) -> Any:
    """``expr`` with each applied unknown function (``\\theta(t)``) as a variable of that name."""
    applied = expr.atoms(AppliedUndef)
    return expr.xreplace({f: sympy.Symbol(str(f)) for f in applied}) if applied else expr


def _sampled(
    first: Any, second: Any, symbols: list[Any], rng: random.Random
) -> Iterator[tuple[complex, complex]]:
    """The values of two expressions at ``NUMERIC_POINTS`` random points of ``symbols``, where both are
    finite."""
    for _ in range(NUMERIC_POINTS):
        point = _random_point(rng, symbols)
        a = complex(first.evalf(30, subs=point))
        b = complex(second.evalf(30, subs=point))
        if cmath.isfinite(a) and cmath.isfinite(b):
            yield a, b


def _random_point(rng: random.Random, symbols: list[Any]) -> dict[Any, Any]:
    return {s: sympy.Float(rng.choice((-1, 1)) * 10 ** rng.uniform(-1, 1.3), 30) for s in symbols}


def _defined_values(gold: Any, prediction: Any) -> tuple[Any, Any]:
    """``x(t) = e^{t}`` or ``y = 2x`` (what is being defined, then its value) against a plain expression:
    the value itself. Two equations stay equations (``y = 2x`` is not ``z = 2x``)."""
    if isinstance(gold, sympy.Eq) and isinstance(prediction, sympy.Eq):
        return gold, prediction
    return _value_of(gold), _value_of(prediction)


def _value_of(expr: Any) -> Any:
    if isinstance(expr, sympy.Eq) and isinstance(expr.lhs, sympy.Symbol | AppliedUndef):
        return expr.rhs
    return expr


# The forms answers take, one pair each (written from LaTeX's grammar, not from any data set): parsing and
# verifying them once builds the parser's prediction tables and SymPy's caches for each construct.
WARM_PAIRS = (
    ("x^2+1", "\\frac{2}{2}+x^{2}"),
    ("42", "42"),
    ("-7", "-7.0"),
    ("0.25", "\\frac{1}{4}"),
    ("\\frac{3}{4}", "\\dfrac{6}{8}"),
    ("2\\frac{1}{2}", "\\tfrac{5}{2}"),
    ("3\\sqrt{2}", "\\sqrt{18}"),
    ("\\sqrt[3]{27}", "3"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"),
    ("2\\pi", "\\pi+\\pi"),
    ("45^\\circ", "45"),
    ("12\\%", "12"),
    ("(-\\infty, 3]", "(-\\infty,3]"),
    ("[1,2)\\cup(3,\\infty)", "[1,2) \\cup (3, \\infty)"),
    ("(1, 2)", "\\left( 1, 2 \\right)"),
    ("\\{1, 2, 3\\}", "\\{3,2,1\\}"),
    ("1, 2", "2, 1"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("y = 2x + 1", "y=1+2x"),
    ("x \\le 3", "x \\leq 3"),
    ("(x+1)^{2}", "x^2+2x+1"),
    ("\\sin^{2} x + \\cos^{2} x", "1"),
    ("\\tan\\theta", "\\frac{\\sin\\theta}{\\cos\\theta}"),
    ("\\log_{2} 8", "3"),
    ("\\ln(e^{2})", "2"),
    ("e^{-x}", "\\frac{1}{e^{x}}"),
    ("\\binom{5}{2}", "10"),
    ("5!", "120"),
    ("\\pm 2", "-2, 2"),
    ("3 + 4i", "4i+3"),
    ("3 \\times 10^{5}", "300000"),
    ("2 \\cdot 3^{2}", "18"),
    ("\\frac{a+b}{2}", "\\frac{b+a}{2}"),
    ("\\infty", "\\infty"),
    ("x = 3", "3"),
    ("\\text{(B)}", "B"),
    ("\\mathrm{A}", "\\text{A}"),
    ("\\overline{AB}", "\\overline{AB}"),
    ("|x-1|", "|1-x|"),
    ("\\lfloor 2.5 \\rfloor", "2"),
    ("1{,}000", "1000"),
    ("f(x) = x^{3}", "x^3"),
    ("\\angle ABC", "\\angle ABC"),
    ("\\int_{0}^{1} x \\, dx", "\\frac{1}{2}"),
    ("\\sum_{k=1}^{3} k", "6"),
)


def _warm_up() -> None:
    """Build the parsers' lazy state once, here in the forkserver, so that every worker forked from it
    (including each replacement of a killed one) starts warm instead of learning each form of answer on
    its own, once per worker."""
    try:  # check() sets the alarm: a handler first (signals are set in a main thread only)
        previous = signal.signal(signal.SIGALRM, _on_alarm)
    except ValueError:
        return
    try:
        for gold, prediction in WARM_PAIRS:  # check() turns any failure into a reason: none stops this
            check(gold, prediction, 2.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


latex.install()  # two-stage parsing and plain numbers, before the warm-up builds the parser's tables
# Math-Verify warns on every call that its own signal timeouts are off: ours are on, in these processes.
logging.getLogger("math_verify").setLevel(logging.ERROR)
_warm_up()
