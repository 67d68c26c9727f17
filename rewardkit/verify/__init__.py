r"""Math answer verification: cheap sound checks in the parent, Math-Verify in killable worker processes.

The second half of the ``math`` reward's verdict rules: how an answer and a gold, once read
(:mod:`rewardkit.extract` holds the first half: what is read), are normalised and compared, and why a
verdict never hangs a training run. ``score_detailed(...).details`` says what was compared for every item:

>>> import rewardkit
>>> math = rewardkit.get("math")
>>> def compared(answers, golds):
...     scored = math.score_detailed([f"\\boxed{{{a}}}" for a in answers], solution=golds)
...     return scored.values, [detail["compared"] for detail in scored.details]

**Both sides are normalised** before anything compares them (:mod:`~rewardkit.verify.normalise`): ``√x``,
``√{x}``, ``√(x)``, ``sqrt(x)`` are ``\sqrt{x}``; ``π`` and ``pi`` are ``\pi``; ``×``, ``÷``, ``·``, ``−``
are operators; ``12,345`` is 12345 outside brackets (a group of thousands starts with 1-9: ``0,111`` is
not one); a decimal comma (``2,74``) is a point against a decimal written with one, and only then (``1,2``
stays a list); a trailing degree sign (``°``, ``^\circ``, "degrees",
``度``), percent sign or unit (SI and English units, and CJK units such as 米, 厘米, 海里, 平方米, 元, 个) on
a bare quantity is split off, and the values compare when one side has no unit or both have the same one
(spellings of one unit are one unit: ``cm``, ``centimeters``, ``厘米``). **Units are never converted**:
``12 cm`` is not ``0.12 m``. A letter is a unit only where it is written as one: after a space or spacing
command (``5 m``, ``5\,\mathrm{m}``), in ``\text{}``, or glued to a number (``10.8m``); never glued to a
fraction or a group (``\frac{37}{4}m`` is 37m/4), and never when the other side uses it as a variable.
Math-Verify's own unit stripping is off for the same reason. ``&`` outside a matrix is a list separator,
never dropped (``2 & 3`` is not ``1 & 3``). White space between two digits is kept (``2 3/4`` is not
``23/4``). Inside an expression nothing is dropped: ``\sin 30^\circ`` keeps its degree sign, and text that
still holds a symbol nothing read is not equal to a number. A decimal equals an exact value when both agree
to six decimal places (Math-Verify's rule: ``1.3333333333333333`` is ``\frac{4}{3}``); two decimals compare
exactly.

>>> compared(["2√3", "12,345", "40^\\circ"], ["2\\sqrt{3}", "12345", "40"])
([1.0, 1.0, 1.0], ['2\\sqrt{3} vs 2\\sqrt{3}', '12345 vs 12345', '40 [°] vs 40'])
>>> compared(["12 centimeters", "12厘米"], ["12 cm", "12 cm"])
([1.0, 1.0], ['12 [cm] vs 12 [cm]', '12 [cm] vs 12 [cm]'])
>>> compared(["12 cm", "\\frac{37}{4}m", "2 & 3", "2 3/4"], ["0.12 m", "\\frac{37}{4}", "1 & 3", "23/4"])[0]
[0.0, 0.0, 0.0, 0.0]
>>> compared(["1.3333333333333333", "1.333", "0.50"], ["\\frac{4}{3}", "\\frac{4}{3}", "0.5"])[0]
[1.0, 0.0, 1.0]

**Numbers as scientists write them.** ``4.5e33``, ``1e-3``, ``1.07E+16`` are read on both sides as
``\times 10^{n}``; ``6.02 \times 10^{23}``, ``6.02\cdot10^{23}`` and ``10^{-3}`` compare exactly as rationals
(a power of ten is never rounded to six decimal places). ``rel_tol=0.05`` (default off) accepts plain numbers
within 5% of the gold, as physics golds are graded.

>>> compared(["4.5e33", "10^{-3}", "6.02\\cdot10^{23}"], ["4.5 \\times 10^{33}", "0.001", "6.02e23"])[0]
[1.0, 1.0, 1.0]
>>> rewardkit.get("math", rel_tol=0.05)(["\\boxed{9.6}", "\\boxed{9}"], solution=["9.81", "9.81"])
[1.0, 0.0]

**Expressions in variables** (Minerva's ODE answers: ``\sinh(at)/a`` against ``\frac{1}{2a}(e^{at}-e^{-at})``)
are evaluated at five random points (both signs, magnitudes 0.1 to 20, 30 digits) before any symbolic
simplification: a relative difference beyond 1e-6 at any point rejects at once (whatever the magnitude:
``1.6\times10^{-19} V`` is not ``3.2\times10^{-19} V``), agreement wherever both are finite (three points at
least) accepts. Constants, sets, matrices, different variables, undefined functions (``f(x)``) and functions a
point cannot settle (floor, min/max, absolute value, piecewise, factorials, sums, integrals) go to
Math-Verify. ``x(t) = ...`` and ``y = ...`` against a plain expression are compared by their right side; two
equations stay equations (``y = 2x`` is not ``z = 2x``).

>>> compared(["\\sinh(at)/a", "x(t) = t^2+1", "y = 2x"], ["\\frac{e^{at}-e^{-at}}{2a}", "t^2+1", "z = 2x"])[0]
[1.0, 1.0, 0.0]
>>> compared(["1.6\\times10^{-19} V"], ["3.2\\times10^{-19} V"])[0]
[0.0]

**Math-Verify's verification options** are the reward's too (:mod:`~rewardkit.verify.options`):
``precision`` (its ``float_rounding``: at another value than 6, a decimal equals any number that rounds
alike to that many places), ``strict=False`` (variables matched by position, a set may equal a tuple) and
``set_relations=True`` (its ``allow_set_relation_comp``: a relation may equal a set). What is decided
before SymPy follows them (a decimal's rounding), the numeric check steps aside for a precision other than
6 and for ``strict=False``, and every verdict kept or deduplicated is keyed on them: two rewards with other
options share the workers, never a verdict.

>>> loose = rewardkit.get("math", strict=False, set_relations=True)
>>> loose(["\\boxed{f(y)}", "\\boxed{-2 \\le x \\le 7}"], solution=["f(x)", "x \\in [-2, 7]"])
[1.0, 1.0]
>>> math(["\\boxed{f(y)}", "\\boxed{-2 \\le x \\le 7}"], solution=["f(x)", "x \\in [-2, 7]"])
[0.0, 0.0]

**The math reward never hangs a run.** Math-Verify's own timeouts use ``signal.alarm``, which raises in any
thread but the main one (a FastAPI handler, a Ray worker) and cannot interrupt C code; with them off,
``9^{9^{9^{9}}}`` runs for minutes. rewardkit:

- extracts the final answer first (parsing whole completions grades the wrong thing:
  ``\boxed{18}...\boxed{210}`` merged into 18210, stray ``$...$`` in the reasoning), and parses each distinct
  gold once per worker;
- decides what it soundly can without SymPy (:mod:`~rewardkit.verify.fastpath`): identical normalised
  strings, two plain numbers as rationals, different units; identical (answer, gold) pairs are judged once per
  batch and kept in a 100,000-entry LRU across batches, keyed by digests and bounded in bytes (as are the
  canonical forms and the workers' parsed golds), so long golds cannot grow the process;
- refuses (:mod:`~rewardkit.verify.guards`), in microseconds and with a reason, answers over
  ``max_answer_chars``, nested deeper than 40, or holding numeric power towers or factorials too large to
  compute (``huge_power``, ``huge_factorial``, ...);
- runs the rest in pebble worker processes (``workers``, default ``REWARDKIT_MATH_WORKERS`` or the CPU count)
  with a hard wall-clock limit per pair (``timeout_s``, fractions allowed; the worker is killed and replaced),
  a soft in-worker alarm just before it, and an address-space cap (``memory_mb``). Pairs that share a gold
  go to a worker several at a time (:mod:`~rewardkit.verify.plan`); a pair that did not get its whole limit
  there runs again alone, so none times out on less than its own. While workers are stuck on
  slow pairs, a spill pool takes over the rest of the batch. A pair whose worker dies (killed, out of memory)
  runs once more on another; dying twice it is ``worker_crashed`` and scores ``None`` (no verdict: trainers
  skip it), where a ``timeout`` scores 0.0 (too costly to check is wrong, as peers score it). SymPy objects
  never leave the workers. The pools live in a helper process started with ``python -m rewardkit.verify``,
  so the workers never import your training script; it exits with your process, and ``ready()`` is true
  once it and its pools are up. Each worker learns the parser's tables for each form of answer it meets (a
  few milliseconds a form); while the pool is idle between batches, every worker parses the forms the others
  met (shared lessons, stopped by the next batch at their next text; ``REWARDKIT_MATH_LESSONS=0`` turns
  them off);
- keeps a request's deadline (:func:`rewardkit.core.deadline`): checked at every item in your process, and
  in the worker host, which a restart does not give a fresh budget;
- gives every item a reason you can read: ``score_detailed(...)`` returns ``no_answer``, ``timeout``,
  ``huge_power``, ``gold_unparseable``, ``invalid_gold``, ... per item.

It works the same from the main thread, worker threads and inside an asyncio loop.

>>> scored = math.score_detailed(["\\boxed{9^{9^{9^{9}}}}", "no answer here"], solution=["1", "1"])
>>> scored.values, scored.reasons
([0.0, 0.0], ['huge_power', 'no_answer'])

``tests/golden/verdicts.jsonl`` and ``tests/golden/generalise.jsonl`` pin every rule with its source;
``tests/data/math_verify_suite.jsonl`` is Math-Verify's public test suite rebuilt as (completion, gold,
expected) cases; ``bench/verdicts.py`` measures agreement on every labelled dev file, by half.

One module, one job: :mod:`~rewardkit.verify.normalise` (answer text to a canonical form),
:mod:`~rewardkit.verify.fastpath` (exact decisions without SymPy), :mod:`~rewardkit.verify.guards` (answers
refused before SymPy), :mod:`~rewardkit.verify.rows` (one row read: gold, answer, choice, fast paths and
guards; run in the workers for a large batch), :mod:`~rewardkit.verify.pool` (the math verifier: dedup,
verdict cache, what goes to the workers), :mod:`~rewardkit.verify.host` (the worker host process,
started with ``python -m rewardkit.verify``, and its pebble pools), :mod:`~rewardkit.verify.plan` (which
pairs go in a task, in what order), :mod:`~rewardkit.verify.options` (the options a pair is compared
under), :mod:`~rewardkit.verify.tasks` (the tasks it schedules),
:mod:`~rewardkit.verify.lessons` (forms of answers taught to idle workers),
:mod:`~rewardkit.verify.worker` (what runs in a worker: Math-Verify's parse, the numeric check, verify),
:mod:`~rewardkit.verify.latex` (latex2sympy as the workers run it: two-stage parsing, plain numbers).
"""

from rewardkit.verify.pool import (
    Check,
    MathVerifier,
    close_verifier,
    default_workers,
    get_verifier,
    require_math,
    shutdown,
)

__all__ = [
    "Check",
    "MathVerifier",
    "close_verifier",
    "default_workers",
    "get_verifier",
    "require_math",
    "shutdown",
]
