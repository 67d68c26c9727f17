r"""Finding the answer in a completion: extraction only, no judging (that is each reward's compare step).

The verdict rules of the ``math`` and ``choice`` rewards start here: what is read as the final answer, and
how a gold is read. They were written from how models write and how the harnesses users trust read them
(Math-Verify's extraction configs, lm-evaluation-harness's GSM8K and Minerva filters, Qwen2.5-Math's
``extract_answer``, MMLU-Pro's and OpenCompass's option readers, simple-evals), then measured on labelled
outputs of 30+ models (``rewardkit agreement``). How the two sides are then normalised and compared is
:mod:`rewardkit.verify`'s part. In order (:func:`math_answer`):

1. **The final segment** (:mod:`~rewardkit.extract.segment`). After the last ``</think>``; inside the last
   ``<|begin_of_solution|>`` (Sky-T1, STILL), else after ``<|end_of_thought|>``. Reasoning that never ended
   (``<think>`` or ``<|begin_of_thought|>`` without its end) has no answer (``unclosed_think``), whatever it
   boxed. The segment ends where a new turn starts after an answer was given, as the harnesses' stop
   sequences would have cut it: a line ``Question:``, ``Problem:``, ``Q:``, ``Human:``, ``User:``,
   ``### Problem``, and any chat template's user turn (``<|im_start|>user``, ...). Trailing special tokens
   (``<|im_end|>``, ``</s>``, ``<EOS_TOKEN>``) are dropped.

   >>> math_answer("<think>maybe \\boxed{5}</think> So the answer is 6.").answer
   '6'
   >>> math_answer("<think>still thinking \\boxed{5}")
   Extracted(answer=None, reason='unclosed_think')
   >>> math_answer("The answer is 4.\n\nQuestion: what is 3+3?\nThe answer is 6.").answer
   '4'

2. **Answer containers** (:mod:`~rewardkit.extract.containers`). The last ``<answer>`` block (its final boxes,
   a box before "the final answer is x" being a step there as outside, else its answer marker, else the one
   math span of a sentence around it, else its text, or the value its last sentence states when the text is
   in words, as a finished reply's is read); else the final boxes: the last ``\boxed{}``/ ``\fbox{}`` and
   the boxes before it joined only by commas, "and"/"or", ``\quad``, inline-math delimiters or a short label
   ending in "and" (``\boxed{(3,3)} \text{ for part (a) and } \boxed{(1,1)}``) form one answer set, and so do
   labelled boxes (``y_1 = \boxed{a}`` and ``y_2 = \boxed{b}``); a box earlier in the reasoning is an
   intermediate result, and so is a box followed by "Final Answer: The final answer is x" (Minerva's format).
   A last box that never closes (``... \boxed{42`` at the end) is no answer (``unclosed_box``): the output
   stopped inside it.

   >>> sets = ["so \\boxed{(3,3)} \\text{ for part (a) and } \\boxed{(1,1)}",
   ...         "first \\boxed{18}, which gives \\boxed{210}"]
   >>> [math_answer(text).answer for text in sets]
   ['(3,3), (1,1)', '210']
   >>> math_answer("\\boxed{4}. Final Answer: The final answer is 5. I hope it is correct.").answer
   '5'

3. **Answer markers** (:mod:`~rewardkit.extract.markers`) in the last 800 characters, the last one
   wins: ``#### x`` at either end of a line (``... every day. #### 18``); ``Answer: x``, ``**Final
   Answer:** x`` (and in the languages models answer in: ``Réponse :``, ``Ответ:``, ``پاسخ:``,
   ``答案：``, ...); "the (final) answer is x" with what models put between "answer" and "is": a short
   parenthetical (``the answer (arabic numerals) is 26``), a complement (``the answer to this problem
   is``), a hedge (``should be``), or "answer" followed by math (``Answer $9$``); "the correct option
   is (C)"; ``答案是 x``; a bold value on the final lines (``**194**``, ``*n* = **5**``), or a short
   bold phrase with one number on the last line (``So **4 cubes remain**``). The value runs to the
   end of the sentence (or is the display that opens there), after its last top-level ``=``; a marker
   followed by prose gives the prose's last value (``Final Answer: Jane started 3 hours ago.`` is 3).
   A value is read up to the words after it (``The answer is 12, which is more than 10.`` is 12),
   values that run on are the list they are (``The answer is 12 or 13 or 14.``, ``3 apples, 4 pears and
   5 figs``: never the first alone), and a sentence that negates or bounds its value states no answer
   (``The answer is not 7.``, ``at least 7``). A qualifier bounds the first value after it and those
   joined to it by "or", "and" or commas (``not 10 which is 12`` states 12). Minerva's signed-off
   answer (``final answer is x. I hope it is correct.``) counts wherever it stands. Quotes around an
   answer are dropped.

   >>> marked = ["so she makes $18 every day. #### 18", "Therefore, the answer (arabic numerals) is 26.",
   ...           "Final Answer: Jane started 3 hours ago."]
   >>> [math_answer(text).answer for text in marked]
   ['18', '26', '3']
   >>> math_answer("The answer is 12, which is more than 10.").answer, math_answer("It is at least 7.").answer
   ('12', None)

4. **The whole segment when it is only a value** (:func:`bare_answer`): one math span (``$[0,1)$``,
   ``$$f(y) = y$$``) or a short value (``-\frac{10}{9}``, ``x \in [-2, 7]``).

   >>> math_answer("$[0,1)$").answer, math_answer("-\\frac{10}{9}").answer
   ('[0,1)', '-\\frac{10}{9}')

   **An answer stated first** (:func:`~rewardkit.extract.markers.opening_answer`), when nothing near the
   end states one: an answer phrase or a bold value in the opening sentence (``The answer is (A), yes.``
   then an explanation; ``The maximum rating is **70**.`` then a description naming other values), as chat
   models answer a question about a chart; the explanation may be cut off.

   >>> math_answer("The peak was in **2012**, at 80%. It fell in 2013 and was flat until 2016.").answer
   '2012'

5. **The last value of a finished final sentence** (none in a reply that declines: ``I can't view
   pictures ... the three towers``), else a labelled final line (``Marbles remaining after the trade: 5``;
   never a step, a note or working cut off) (:func:`sentence_answer`; ``extract="standard"``, the
   default): a ``$...$``, ``\(...\)``, ``\[...\]`` or a number in the last sentence (else a whole number
   in words, below), when the text ends like a sentence (truncated text has no answer,
   however short: a stop string or a small token limit cuts short replies too); closing remarks after it
   are passed over (``So f(-2) is 18. I hope it is correct.``). ``extract="strict"`` stops at step 4
   (accuracy coupled to format); ``extract="lenient"`` also takes the last value of unfinished text
   (:func:`lenient_answer`).

   >>> text = "So f(-2) is 18. I hope it is correct."
   >>> math_answer(text, mode="strict").reason, math_answer(text).answer
   ('no_answer', '18')
   >>> unfinished = "So f(-2) is 18"
   >>> math_answer(unfinished).reason, math_answer(unfinished, mode="lenient").answer
   ('no_answer', '18')

Whether step 5 is the default was decided with figures (``bench/verdicts.py``; ``bench/README.md``): on
the held-out half it lifts agreement on long chain-of-thought outputs from 94.0% to 95.3% and on MathVista
from 88.0% to 89.9%, and Math-Verify's own cases from 236 to 252 of 270; it also adds false positives there
(long chain-of-thought 2.4% → 3.4% of the wrong ones, MathVista 1.4% → 1.8%). The ones read on the dev half
were correct answers the sources' graders missed (a correct ``3/4`` in prose, labelled 0). If your labels
require a marked answer, use ``extract="strict"``.

**Numbers in words** (:mod:`~rewardkit.extract.words`), one rule wherever an answer is read: a whole number
in words (``twelve``, ``twenty-one``, ``one hundred and five``, ``a dozen``, ``negative five``) is that
number, in a box, an answer block, after an answer phrase (read as digits there, so ``twelve or thirteen``
is a list as ``12 or 13`` is), as the whole completion, as the final sentence's value, and on the gold's
side (the comparison reads both, :func:`rewardkit.verify.normalise.prepared`). Ordinals, fractions and
decimals in words (``third``, ``two thirds``, ``three point five``) stay text; so does a lone ``one`` in a
sentence (``the one on the left``). An unfinished sentence states no answer in words as in digits (``The
result is twelve`` and ``The result is 12``: ``no_answer``).

>>> [math_answer(t).answer for t in ("The answer is twelve.", "The result is twenty-one.", "\\boxed{twelve}")]
['12', '21', 'twelve']
>>> math_answer("The result is twelve").reason
'no_answer'

**Golds** are read by the same code, in :func:`gold_answer` (the one gold reader of every reward): the last
``<answer>``, the final boxes, a ``#### x`` / ``A: x`` line of a full reference solution, else the whole
``solution``.

>>> gold_answer("She sold 48 clips in April.\n#### 72"), gold_answer("<answer> 3 </answer>"), gold_answer(5)
('72', '3', '5')

**Multiple choice** (:mod:`rewardkit.choices`). Rows may carry a ``choices`` column: the option texts
in letter order, or ``{letter: text}``. The answer then names an option by letter (``B``, ``(B)``,
``\boxed{B}``, ``\text{B}``, ``Option B``), by letter and text (``(B) No``; a letter whose text is
another option's is no choice), or by the option's text (``No``, or the same number: ``3,628,800``);
the gold is a letter or an option text. Both sides become letters, so ``(B) No`` matches the gold
``No``. A letter stated after a boxed value is the choice (``\boxed{0.8}. The answer is (F).``).
Without a stated answer, a Yes/No option the text opens with comes first (``Yes, the bus is ...``, as
MME reads yes/no answers; a letter later is a bar or a point of the figure: ``No, Y is not the
largest. The largest is B.``), then an option the final sentence names (``the greatest angle is
(D).``, ``so the count is C.``, ``对应选项是D``), the option whose text ends it (``... is a bowl of
soup.``) and a labelled option on the last line whose text agrees (``B) Does ...?``), then the Yes or
No a short statement implies (``Based on the image, Teal is not the largest.`` is No). Stating more
than two different options as the answer is no answer (``several_choices``): a policy must not be
paid for listing them. Three or more lines that are nothing but "The answer is (X)." at the end are a
loop after the answer (base models write the few-shot examples' answers next): the first counts, so
listing pays no more than answering once. Without ``choices``, a letter gold compares as a letter.
The ``choice`` reward does only this (MMLU-Pro, GPQA); ``math`` does it for the rows that carry
``choices`` or a letter gold, and compares everything else as math.

>>> import rewardkit
>>> choice = rewardkit.get("choice")
>>> scored = choice.score_detailed(
...     ["(B) No", "\\boxed{0.8}. The answer is (F).", "Answer: (A). Answer: (B). Answer: (C)."],
...     solution=["No", "F", "A"],
...     choices=[["Yes", "No"], None, None],
... )
>>> scored.values, scored.reasons
([1.0, 1.0, 0.0], [None, None, 'several_choices'])

``score_detailed(...).details`` says what was read for every item (``{"answer": "40.0", "gold": "40°",
"compared": "40.0 vs 40 [°]"}``), and ``rewardkit check`` prints it next to a failing golden case.
``tests/golden/verdicts.jsonl`` and ``tests/golden/generalise.jsonl`` pin every rule with its source.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from rewardkit.extract.containers import (
    _last_box,
    final_boxes,
    last_boxed,
    last_tag_block,
    strip_special_tail,
    unclosed_box,
)
from rewardkit.extract.markers import (
    _ANSWER_LINE,
    _HASHES,
    _marked_answer,
    answer_phrase,
    first_answer,
    opening_answer,
    phrase_value,
    stated_answers,
)
from rewardkit.extract.segment import before_next_turn, final_text
from rewardkit.extract.values import (
    BARE_CHARS,
    QUALIFIED,
    _tidy,
    bare_answer,
    labelled_line,
    lenient_answer,
    sentence_answer,
    value_like,
)

__all__ = [
    "BARE_CHARS",
    "EXTRACT_MODES",
    "QUALIFIED",
    "Extracted",
    "answer_in",
    "answer_phrase",
    "bare_answer",
    "before_next_turn",
    "final_boxes",
    "final_segment",
    "final_text",
    "gold_answer",
    "last_boxed",
    "last_tag_block",
    "lenient_answer",
    "math_answer",
    "sentence_answer",
    "stated_answers",
    "strip_special_tail",
    "unclosed_box",
    "value_like",
]


class Extracted(NamedTuple):
    """What was read as the final answer (``None`` when nothing was), and why not."""

    answer: str | None
    reason: str | None = None


EXTRACT_MODES = ("strict", "standard", "lenient")


def math_answer(completion: str, *, mode: str = "standard") -> Extracted:
    """The final answer of a math completion, read in the order this module's docstring gives (steps 1-5;
    ``mode="strict"`` stops at step 4, ``mode="lenient"`` adds the last value of unfinished text).

    >>> math_answer("<think>...</think><answer>The answer is \\\\boxed{7}.</answer>")
    Extracted(answer='7', reason=None)
    >>> math_answer("so \\\\boxed{18} ... finally \\\\boxed{210}").answer
    '210'
    >>> math_answer("<answer>1/2</answer>").answer, math_answer("<think>no end").reason
    ('1/2', 'unclosed_think')
    """
    text = final_segment(completion)
    if text is None:
        return Extracted(None, "unclosed_think")
    return answer_in(text, mode=mode)


def final_segment(completion: str) -> str | None:
    """The text whose answer counts: :func:`final_text`, cut by :func:`before_next_turn`; ``None`` when
    the reasoning never ended."""
    text = final_text(completion)
    return None if text is None else before_next_turn(text)


def answer_in(text: str, *, mode: str = "standard") -> Extracted:
    """Steps 2-6 of :func:`math_answer` on a final segment that is already cut."""
    if unclosed_box(text):
        return Extracted(None, "unclosed_box")
    block = last_tag_block(text, "answer")
    if block is not None:
        boxes = final_boxes(block)
        if boxes is not None:  # read as outside a block: a box before "the final answer is x" was a step
            later = _final_answer_after_box(block)
            return Extracted(later if later is not None else ", ".join(boxes).strip())
        return Extracted(answer_phrase(block) or _one_span(block) or _block_value(block))
    boxes = final_boxes(text)
    if boxes is not None:
        later = _final_answer_after_box(text)
        return Extracted(later if later is not None else ", ".join(boxes).strip())
    readers = _READERS.get(mode)
    if readers is None:
        raise ValueError(f"extract must be one of {', '.join(EXTRACT_MODES)}, got {mode!r}")
    for reader in readers:
        found = reader(text)
        if found is not None:
            return Extracted(found)
    return Extracted(None, "no_answer")


_SPAN = re.compile(r"\$\$(.+?)\$\$|\$([^$]+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)


def _one_span(block: str) -> str | None:
    """The math span of an answer block that holds one sentence around one span, with no other digit
    (``Thus $y \\ne 4$ is our answer.``, ``The identity matrix is $ \\begin{pmatrix}...\\end{pmatrix} $.``).

    >>> _one_span("Thus $y \\\\ne 4$ is our answer."), _one_span("$x$ is 3 or $y$") is None
    ('y \\\\ne 4', True)
    """
    spans = list(_SPAN.finditer(block))
    if len(spans) != 1:
        return None
    span = spans[0]
    outside = block[: span.start()] + " " + block[span.end() :]
    if any(c.isdigit() for c in outside) or "\n\n" in block.strip():
        return None
    return next(g for g in span.groups() if g is not None).strip() or None


# what is not prose in an answer block: math spans, LaTeX commands with their first argument
_MARKUP = re.compile(r"\$[^$]*\$|\\[A-Za-z]+\s*(?:\{[^{}]*\})?")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")
MIN_PROSE_WORDS = 3


def _block_value(block: str) -> str:
    """An answer block's value: the block itself when it reads as a value, else the value its last sentence
    states, read as an answer phrase's is (``the number is not 10 which is 1,000.99€`` -> ``1,000.99€``;
    ``We get 5 cats.`` -> ``5``), else as a finished reply's last sentence is (:func:`sentence_answer`:
    ``not 10, it's 1,000.99m²`` -> ``1,000.99``); the block stripped when those read none. A block of
    fewer than three words is a value as written when it is LaTeX (``5 \\text{ square units}``) or has no
    words; one in plain words is a sentence (``Total : 2,74 $ net.`` -> ``2,74``).

    >>> _block_value("3/4"), _block_value("the number is not 10 which is 12"), _block_value("We get 5 cats.")
    ('3/4', '12', '5')
    >>> _block_value("Total : 3,15 € net."), _block_value("no, it's not 12, it's 2,500.75 km²")
    ('3,15', '2,500.75')
    >>> _block_value("\\\\begin{pmatrix} -2 \\\\\\\\ -7 \\\\end{pmatrix}")
    '\\\\begin{pmatrix} -2 \\\\\\\\ -7 \\\\end{pmatrix}'

    """
    tidied = _tidy(block)
    if not tidied or value_like(tidied) or "\n" in tidied.strip():
        return tidied
    words = len(_PROSE_WORD.findall(_MARKUP.sub(" ", tidied)))
    if words < MIN_PROSE_WORDS:
        if not words or _MARKUP.search(tidied):
            return tidied  # "\\begin{pmatrix}...\\end{pmatrix}", "5 \\text{ square units}": a value in LaTeX
        return sentence_answer(block.strip()) or tidied
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", tidied) if s.strip()]
    found = phrase_value(sentences[-1], 0) if sentences else None
    return found or sentence_answer(block.strip()) or tidied


_FINAL_ANSWER = re.compile(r"\bfinal answer\b", re.IGNORECASE)


def _final_answer_after_box(text: str) -> str | None:
    """A "final answer is x" stated after the last box, which was then an intermediate result (Minerva's
    ``Final Answer: The final answer is x. I hope it is correct.`` after a boxed step)."""
    found = _last_box(text, len(text))
    if found is None or not _FINAL_ANSWER.search(text, found[1]):
        return None
    marked = _marked_answer(text[found[1] :])
    return marked[1] if marked is not None else None


_READERS = {
    "strict": (answer_phrase, bare_answer),
    "standard": (answer_phrase, bare_answer, first_answer, sentence_answer, labelled_line, opening_answer),
    "lenient": (
        answer_phrase,
        bare_answer,
        first_answer,
        sentence_answer,
        labelled_line,
        opening_answer,
        lenient_answer,
    ),
}


def gold_answer(solution: object) -> str | None:
    """The gold answer of a reference, the one reader for every reward: its last ``<answer>`` block, else
    its final boxes (an answer set, like a prediction's), else a ``#### x`` or final ``A: x`` /
    ``Answer: x`` line (GSM8K), else the whole reference, stripped. ``None`` for a missing reference.

    >>> gold_answer("so the area is $\\\\boxed{12}$."), gold_answer("<answer> 3/4 </answer>"), gold_answer(5)
    ('12', '3/4', '5')
    >>> gold_answer("She has 5 long-answer questions.\\nSo 72 in all.\\n#### 72"), gold_answer(None)
    ('72', None)
    """
    if solution is None or isinstance(solution, bool):
        return None
    if isinstance(solution, float):
        if not math.isfinite(solution):
            return None
        solution = repr(solution)
    try:
        text = solution if isinstance(solution, str) else str(solution)
    except ValueError:  # an integer with more digits than Python converts
        return None
    block = last_tag_block(text, "answer")
    if block is not None:
        return block.strip() or None
    boxes = final_boxes(text)
    if boxes is not None:
        return ", ".join(boxes).strip() or None
    lines = [
        match.group(1)
        for p in (_HASHES, _ANSWER_LINE)
        for match in p.finditer(text)
        if match.group(1).strip()
    ]
    if lines and "\n" in text.strip():
        return _tidy(lines[-1]) or None
    return text.strip() or None
