"""Reading the math reward's rows: the gold, the final answer, an option chosen, and the verdicts reached
without SymPy.

One function reads a row (:func:`read_row`) wherever it runs: in the calling process for a small batch, in
the worker host's workers for a large one (:meth:`rewardkit.verify.pool.MathVerifier.read_many`), a chunk
of rows a worker, so that the caller's own share of a batch (extraction, normalisation, fast paths, guards)
runs in parallel too. The same function, so the same verdicts either way. A row ends as a verdict
(``Verdict``/``Explained``) or as a :class:`Pending` pair for Math-Verify, which carries what was decided
about it without SymPy (:func:`decide`) and its digest, so the caller only looks it up in its verdict cache.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

# choices imports verify.fastpath, so the verify package, so this module: taken from sys.modules as it is,
# its names looked up when a row is read
import rewardkit.choices as choices
from rewardkit.core import Explained, Verdict
from rewardkit.extract import gold_answer, math_answer
from rewardkit.lru import text_digest
from rewardkit.verify.fastpath import fast_verdict, plain_number, within_tolerance
from rewardkit.verify.guards import encodable, guard
from rewardkit.verify.normalise import Canonical, canonical, has_unparsed, normalise, prepared, units_agree
from rewardkit.verify.options import DEFAULT_OPTIONS, Options

__all__ = [
    "MAX_GOLD_CHARS",
    "UNREAD",
    "Check",
    "Options",
    "Pending",
    "compared",
    "decide",
    "digest",
    "read_row",
    "read_rows",
]

#: (equal, reason) for one pair: a verdict (``None``: no verdict) and why.
Result = tuple[bool | None, str | None]

MAX_GOLD_CHARS = 100_000  # a reference longer than this is not read (it is a document, not an answer)
UNREAD = ("answer_too_long", "gold_too_long", "invalid_gold")  # refused unread: nothing compared


@dataclass(frozen=True)
class Check:
    """One pair to judge: a gold answer and a prediction, as extracted (normalisation happens here), and
    the options it is compared under (:class:`~rewardkit.verify.options.Options`: part of its identity, so
    two checks of one pair under other options are never judged as one)."""

    gold: str
    prediction: str
    options: Options = DEFAULT_OPTIONS


def digest(check: Check) -> bytes:
    """The key of ``check``'s verdict in a cache: its texts' digest, and its options' where they are not
    the defaults."""
    return text_digest(check.gold, check.prediction, *check.options.key())


class Pending(NamedTuple):
    """A row whose verdict needs the verifier: its pair as extracted, the pair's digest (the verdict cache's
    key), what :func:`decide` made of it (a verdict and the stat it counts, or ``None`` and the canonical
    pair for Math-Verify) and what the detail says was compared."""

    check: Check
    key: bytes
    decided: Result | None
    stat: str | None
    canonical: Check
    compared: str | None


def decide(check: Check, max_chars: int, guards: bool) -> tuple[Result | None, Check, str | None]:
    """A verdict reached without SymPy (``(result, check, stat)``: ``stat`` is the counter it adds to), or
    ``(None, canonical pair, None)`` for the workers (under the check's options). Both sides are
    normalised (:mod:`rewardkit.verify.normalise`) first; units must agree. Of the options only
    ``precision`` bears on what is decided here (a decimal against a value,
    :func:`~rewardkit.verify.fastpath.fast_verdict`): the other verdicts here (equal texts up to layout,
    numbers, units, bases) are the same whether variables are matched by position or relations may equal
    sets."""
    if guards and len(check.prediction) > max_chars:  # before any other work on a long text
        return (False, "answer_too_long"), check, "guarded"
    if len(check.gold) > MAX_GOLD_CHARS:
        return (None, "gold_too_long"), check, None
    if not encodable(check.gold) or "\x00" in check.gold:  # broken text: no reference to judge by
        return (None, "invalid_gold"), check, None
    if not encodable(check.prediction):  # lone surrogates: a model emitted broken text, not an answer
        return (False, "invalid_unicode"), check, "guarded"
    prediction, gold = canonical(check.prediction), canonical(check.gold)
    if not normalise(gold.text):  # nothing but spacing and dollar signs
        return (None, "invalid_gold"), check, None
    if _used_as_variable(prediction, gold):
        prediction = Canonical(prepared(check.prediction))
    if _used_as_variable(gold, prediction):
        gold = Canonical(prepared(check.gold))
    if "\\ln" in gold.text and "\\log" in prediction.text and "\\log" not in gold.text:
        prediction = prediction._replace(text=natural_log(prediction.text))
    if not units_agree(prediction, gold):  # 12 cm is not 12 m; units are never converted
        return (False, None), check, "fast_path"
    decided = fast_verdict(prediction.text, gold.text, check.options.precision)
    if decided is None and _unparsed_against_number(prediction.text, gold.text):
        decided = False
    if decided is not None:
        return (decided, None), check, "fast_path"
    refused = guard(prediction.text, max_chars=max_chars) if guards else None
    if refused is not None:
        return (False, refused), check, "guarded"
    return None, Check(gold.text, prediction.text, check.options), None


# \\log with no base written: the natural log where the gold writes \\ln (as analysis and physics use it)
_BARE_LOG = re.compile(r"\\log(?![A-Za-z_])")


def natural_log(text: str) -> str:
    """``text`` with each ``\\log`` that names no base read as ``\\ln``: used where the gold writes ``\\ln``
    and no ``\\log``, so the answer's unmarked log is the gold's natural one (``\\log_2 x`` keeps its base).

    >>> natural_log("\\\\log 3 - i\\\\pi"), natural_log("\\\\log_{2} 8")
    ('\\\\ln 3 - i\\\\pi', '\\\\log_{2} 8')
    """
    return _BARE_LOG.sub(r"\\ln", text)


def compared(check: Check) -> str:
    """What a verdict's detail says was compared: both sides' canonical forms."""
    return f"{canonical(check.prediction)} vs {canonical(check.gold)}"


def _used_as_variable(one: Canonical, other: Canonical) -> bool:
    """``one``'s unit is a letter that ``other`` uses as a variable (``5 m`` against ``5m + 1``): then it
    is no unit, and ``one`` is compared as written."""
    unit = one.unit
    if unit is None or not unit.isalpha() or not unit.isascii():
        return False
    return re.search(rf"(?<![A-Za-z\\]){re.escape(unit)}(?![A-Za-z])", other.text) is not None


def _unparsed_against_number(prediction: str, gold: str) -> bool:
    """One side still holds symbols no normalisation read, the other is a plain number: not equal (a parser
    that drops the unknown symbol would otherwise compare what is left)."""
    for one, other in ((prediction, gold), (gold, prediction)):
        if has_unparsed(one) and plain_number(normalise(other)) is not None:
            return True
    return False


# ---------------------------------------------------------------- a row


def _choice(
    text: str, answer: str | None, gold: str, options: dict[str, str] | None, mode: str
) -> Explained | str:
    """A multiple-choice verdict when the gold names an option and the answer names one too; else the
    gold as text to compare with the answer (the option's text when the gold is its letter)."""
    want = choices.gold_letter(gold, options)
    if want is None:
        return gold  # a gold that is no option: compare as math
    got, why = choices.read_choice(text, options, mode=mode)
    if why is not None:
        return Explained(0.0, why, {"answer": answer, "gold": gold})
    if got is not None:
        detail = {
            "answer": answer if answer is not None else got,
            "gold": gold,
            "compared": f"{got} vs {want}",
        }
        return Explained(float(got == want), None, detail)
    if options is None:  # a lone letter gold and an answer that is no letter: the options it was asked
        printed = choices.printed_options(text)  # are read where the completion prints them with letters
        got = choices.answer_letter(answer, printed) if printed is not None and answer else None
        if got is not None:
            return Explained(
                float(got == want), None, {"answer": answer, "gold": gold, "compared": f"{got} vs {want}"}
            )
        return Explained(None, "no_options", {"answer": answer, "gold": gold})  # no verdict: nothing to map
    return options[want]


def read_row(
    gold: str,
    text: str | None,
    options_value: Any,
    *,
    mode: str,
    rel_tol: float,
    max_chars: int,
    options: Options = DEFAULT_OPTIONS,
) -> Verdict | Explained | Pending:
    """One row read: a verdict, or the pair the verifier judges (under ``options``). ``gold`` is the row's
    gold as :func:`~rewardkit.extract.gold_answer` read it; ``text`` is the completion's text (``None``: no
    text in it); ``options_value`` the row's multiple-choice options."""
    if text is None:
        return Explained(0.0, "invalid_completion", {"gold": gold})
    answer, reason = math_answer(text, mode=mode)
    offered = choices.read_choices(options_value)
    if offered is not None or choices.is_letter(gold):  # multiple choice: compare options, not texts
        decided = _choice(text, answer, gold, offered, mode)
        if isinstance(decided, Explained):
            return decided
        gold = decided  # the gold's option text, compared with an answer that names no option
    if answer is None:
        return Explained(0.0, reason, {"answer": None, "gold": gold})
    if not answer:
        return Explained(0.0, "empty_answer", {"answer": answer, "gold": gold})
    if (
        rel_tol
        and len(answer) <= max_chars  # longer ones are refused unread, below
        and len(gold) <= MAX_GOLD_CHARS
        and (close := within_tolerance(answer, gold, rel_tol)) is not None
    ):
        detail = {"answer": answer, "gold": gold, "compared": f"within rel_tol={rel_tol:g}"}
        return Explained(float(close), None, detail)
    check = Check(gold, answer, options)
    decided_pair, canonical_check, stat = decide(check, max_chars, True)
    said = None if decided_pair is not None and decided_pair[1] in UNREAD else compared(check)
    return Pending(check, digest(check), decided_pair, stat, canonical_check, said)


def read_rows(
    rows: Sequence[tuple[Any, str | None, Any]],
    mode: str,
    rel_tol: float,
    max_chars: int,
    options: Options = DEFAULT_OPTIONS,
    before_each: Callable[[], None] | None = None,
) -> list[Verdict | Explained | Pending]:
    """:func:`read_row` of each ``(solution, text, choices)``, calling ``before_each`` (a deadline check)
    before each; each distinct solution text's gold is read once; every pair is compared under
    ``options``."""
    golds: dict[str, str | None] = {}
    out: list[Verdict | Explained | Pending] = []
    for solution, text, options_value in rows:
        if before_each is not None:
            before_each()
        if type(solution) is not str:
            gold = gold_answer(solution)
        elif solution in golds:
            gold = golds[solution]
        else:
            gold = golds[solution] = gold_answer(solution)
        if gold is None:
            out.append(Verdict(None, "missing_solution"))
            continue
        out.append(
            read_row(
                gold, text, options_value, mode=mode, rel_tol=rel_tol, max_chars=max_chars, options=options
            )
        )
    return out
