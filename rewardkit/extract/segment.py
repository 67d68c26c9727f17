"""The final segment of a completion (step 1 of :mod:`rewardkit.extract`): the part after the reasoning,
cut before a new turn written after an answer."""

from __future__ import annotations

import re

from rewardkit.extract.containers import _last_box, last_tag_block, strip_special_tail
from rewardkit.extract.markers import _marked_answer

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_THOUGHT_OPEN, _THOUGHT_CLOSE = "<|begin_of_thought|>", "<|end_of_thought|>"
_SOLUTION_OPEN, _SOLUTION_CLOSE = "<|begin_of_solution|>", "<|end_of_solution|>"
#: a new turn that a base model (or a model trained on few-shot prompts) writes after its answer: the
#: stop sequences of the harnesses (lm-evaluation-harness, Qwen2.5-Math, MMLU-Pro, OpenCompass) as lines,
#: and chat templates' user-turn tokens
_NEXT_TURN = re.compile(
    r"^[ \t]*+(?:#{1,4}[ \t]*+)?(?:\*\*)?(?:Question|Problem|Q|Human|User|Exercise|Instruction)\b"
    r"[ \t]*+(?:\d++[ \t]*+)?(?:\*\*[ \t]*+)?[:：]"
    r"|^[ \t]*+#{1,4}[ \t]*+Problem\b",
    re.MULTILINE,
)
_TEMPLATE_TURN = re.compile(
    r"(?:<\|im_start\|>|<\|start_header_id\|>|<start_of_turn>)(?![ \t]*(?:assistant|model)\b)"
    r"|<\|user\|>|\[INST\]|<\|eot_id\|>|<\|im_end\|>|<end_of_turn>"
)
MAX_TURNS = 8  # next-turn markers tried before giving up on cutting


def final_text(completion: str) -> str | None:
    """The part of a completion that holds its answer, or ``None`` when its reasoning never ended.

    After the last ``</think>``; inside the last ``<|begin_of_solution|>`` (Sky-T1, STILL), else after
    ``<|end_of_thought|>``; the whole text when it has no reasoning markers. A ``<think>`` or
    ``<|begin_of_thought|>`` that is never closed is truncated reasoning: it has no answer, whatever it
    boxed along the way. Trailing special tokens are dropped.

    >>> final_text("<think>maybe \\\\boxed{5}</think> I am not sure.")
    ' I am not sure.'
    >>> final_text("<think>still thinking \\\\boxed{5}") is None
    True
    >>> final_text("<|begin_of_thought|>hm<|end_of_thought|><|begin_of_solution|>3<|end_of_solution|>")
    '3'
    """
    text = strip_special_tail(completion)
    close = text.rfind(_THINK_CLOSE)
    if close >= 0:
        return text[close + len(_THINK_CLOSE) :]
    if _THINK_OPEN in text:
        return None
    solution = text.rfind(_SOLUTION_OPEN)
    if solution >= 0:
        body = text[solution + len(_SOLUTION_OPEN) :]
        end = body.find(_SOLUTION_CLOSE)
        return body if end < 0 else body[:end]
    close = text.rfind(_THOUGHT_CLOSE)
    if close >= 0:
        return text[close + len(_THOUGHT_CLOSE) :]
    return None if _THOUGHT_OPEN in text else text


def before_next_turn(text: str) -> str:
    """``text`` up to the first new turn (``Question:``, ``Problem:``, ``Q:``, ``<|im_start|>user``, ...)
    that follows an answer: what a harness's stop sequences would have cut. A marker with no answer before
    it (a restated problem) is kept.

    >>> before_next_turn("The answer is 4.\\n\\nQuestion: what is 3+3?\\nThe answer is 6.")
    'The answer is 4.\\n\\n'
    >>> before_next_turn("Problem: find x.\\nSo x = 2, the answer is 2.")
    'Problem: find x.\\nSo x = 2, the answer is 2.'
    """
    template = _TEMPLATE_TURN.search(text)
    if template is not None:  # a chat template's user turn: never part of an answer
        text = text[: template.start()]
    for tried, match in enumerate(_NEXT_TURN.finditer(text)):
        if tried >= MAX_TURNS:
            break
        if match.start() > 0 and _has_answer(text[: match.start()]):
            return text[: match.start()]
    return text


def _has_answer(text: str) -> bool:
    return (
        last_tag_block(text, "answer") is not None
        or _last_box(text, len(text)) is not None
        or _marked_answer(text) is not None
    )
