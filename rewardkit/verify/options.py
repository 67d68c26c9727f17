"""How the math verifier compares two answers: Math-Verify's ``verify`` options, under the math reward's
names. A pair is judged under its options, and they are part of its identity wherever a verdict is kept
(:func:`rewardkit.verify.rows.digest`, the verifier's dedup, :class:`rewardkit.verify.plan.Plan`).

>>> Options().key(), Options(precision=2).key()
((), ('options:2,1,0',))
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DEFAULT_OPTIONS", "Options", "Pair"]


class Options(NamedTuple):
    """How two answers are compared: Math-Verify's ``verify`` options, under the math reward's names.

    ``precision``: decimal places to which a decimal is compared with an exact value (Math-Verify's
    ``float_rounding``); ``strict``: variable names matter (``strict=False``: variables are matched by
    position, ``f(y)`` is ``f(x)``); ``set_relations``: a relation may equal a set
    (``-2 \\le x \\le 7`` is ``x \\in [-2, 7]``, Math-Verify's ``allow_set_relation_comp``). A verdict is
    a verdict under its options: every cache of verdicts keys on them (:meth:`key`).
    """

    precision: int = 6
    strict: bool = True
    set_relations: bool = False

    def key(self) -> tuple[str, ...]:
        """What a verdict's digest adds for these options: nothing for the defaults (their verdicts keep
        the keys they always had), one text otherwise."""
        if self == DEFAULT_OPTIONS:
            return ()
        return (f"options:{self.precision},{self.strict:d},{self.set_relations:d}",)


DEFAULT_OPTIONS = Options()
#: (gold, prediction), both canonical, compared under the default options; or (gold, prediction, options)
Pair = tuple[str, str] | tuple[str, str, Options]
