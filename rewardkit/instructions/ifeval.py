"""IFEval's 25 instructions (Google's ``instruction_following_eval``, as ported to IFBench's
``ifbench/classic_instructions.py``), registered in the instruction table with ``source="ifeval"``.

``rules="reference"`` reproduces the reference checkers' verdicts, with three documented exceptions that
cannot be reproduced or must not be: where the reference draws a random value for a missing or out-of-range
argument, the instruction is ``bad_kwargs``; a keyword, marker or splitter the reference reads as a regular
expression is read as one only when it holds no quantifier or group (a hostile pattern could hang the
process), else literally; and ``langdetect`` is seeded (the reference's verdicts on short texts change run to
run).

``rules="robust"`` deviates where each spec's ``robust`` line says: words and letters are read on
:func:`~rewardkit.instructions.text.normalise`'s view, keywords are whole words, empty or repeated pieces
(bullets, sections, paragraphs, highlights, placeholders) do not count, and a response that is only the
constraint's skeleton fails.

>>> from rewardkit.instructions.base import Context
>>> len(IDS)
25
>>> spec = TABLE["keywords:existence"]
>>> args = spec.read({"keywords": ["cat"]})
>>> [spec.check("A catalogue of dogs.", args, Context(rules=r)) for r in ("reference", "robust")]
[True, False]
"""

from __future__ import annotations

from rewardkit.instructions import ifeval_format, ifeval_words  # noqa: F401  (registers the checks)
from rewardkit.instructions.base import TABLE
from rewardkit.instructions.ifeval_common import CONSTRAINED_OPTIONS, LANGUAGES, SRC

__all__ = ["CONSTRAINED_OPTIONS", "IDS", "LANGUAGES"]

#: IFEval's 25 instruction ids
IDS = tuple(sorted(spec.id for spec in TABLE.values() if spec.source == SRC))
