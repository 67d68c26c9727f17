"""A short answer against a row's golds: exact match, Search-R1's substring match, SQuAD's token F1.

Each is the best over the golds (SQuAD's ``metric_max_over_ground_truths``), after
:func:`rewardkit.qa.normalise.normalise`. What the golds are: :mod:`rewardkit.qa.golds`. The verdicts are
``(value, reason, gold)``: the value, ``None`` or why it was not judged on its merits, and the gold that
gave it (``None`` when none did).

**Listing candidates** (the hack of substring rewards: ``Paris, London, Berlin, Rome`` holds the gold):
in substring mode an answer of more normalised words than ``max_ratio`` times the longest gold's
(``answer_too_long``), or with more ``or`` words than the gold it holds (``hedged_answer``: ``London or
Paris``), scores 0. Exact match needs no defence (a list is not the gold). Token F1 keeps SQuAD's values:
its precision already charges every extra word (``k`` one-word candidates holding the gold score
``2 / (k + 1)``, the gold's words repeated score less than the gold alone).

>>> exact_match("Paris", ("Lyon", "paris"))
(1.0, None, 'paris')
>>> exact_match("in Paris, France", ("Paris",), substring=True)
(1.0, None, 'Paris')
>>> exact_match("Paris, London, Berlin, Rome", ("Paris",), substring=True)
(0.0, 'answer_too_long', None)
>>> best_f1("the Eiffel Tower", ("Eiffel Tower, Paris", "tower"))
(0.8, None, 'Eiffel Tower, Paris')
"""

from __future__ import annotations

from rewardkit.qa.normalise import normalise, normalise_gold, token_f1

__all__ = ["DEFAULT_MAX_RATIO", "Judged", "best_f1", "exact_match", "usable_golds"]

#: in substring mode, an answer may have this many times the longest gold's words
DEFAULT_MAX_RATIO = 3.0

Judged = tuple[float | None, str | None, str | None]


def usable_golds(golds: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(gold, normal form)`` of the golds whose normal form is not empty (``The`` is no answer)."""
    out = []
    for gold in golds:
        normal = normalise_gold(gold)
        if normal:
            out.append((gold, normal))
    return out


def exact_match(
    answer: str, golds: tuple[str, ...], *, substring: bool = False, max_ratio: float = DEFAULT_MAX_RATIO
) -> Judged:
    """1.0 when the normalised answer equals a normalised gold (``substring``: holds one), else 0.0.

    ``(None, "empty_gold", None)`` when no gold has a non-empty normal form; an answer that normalises to
    nothing (``"."``, ``"the"``) is ``(0.0, "empty_answer", None)``.
    """
    usable = usable_golds(golds)
    if not usable:
        return None, "empty_gold", None
    normal = normalise(answer)
    if not normal:
        return 0.0, "empty_answer", None
    for gold, gold_normal in usable:
        if normal == gold_normal:
            return 1.0, None, gold
    if not substring:
        return 0.0, None, None
    held = [(gold, gold_normal) for gold, gold_normal in usable if gold_normal in normal]
    if not held:
        return 0.0, None, None
    words = normal.split()
    longest = max(len(gold_normal.split()) for _, gold_normal in usable)
    if len(words) > max_ratio * longest:
        return 0.0, "answer_too_long", None
    ors = words.count("or")
    for gold, gold_normal in held:
        if ors <= gold_normal.split().count("or"):
            return 1.0, None, gold
    return 0.0, "hedged_answer", None


def best_f1(answer: str, golds: tuple[str, ...]) -> Judged:
    """The best token F1 of the answer against the golds; ``None`` (``empty_gold``) without a usable gold,
    0.0 (``empty_answer``) for an answer that normalises to nothing."""
    usable = usable_golds(golds)
    if not usable:
        return None, "empty_gold", None
    words = normalise(answer).split()
    if not words:
        return 0.0, "empty_answer", None
    best, best_gold = 0.0, None
    for gold, gold_normal in usable:
        value = token_f1(words, gold_normal.split())
        if value > best:
            best, best_gold = value, gold
            if value == 1.0:
                break
    return best, None, best_gold
