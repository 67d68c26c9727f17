r"""The short answer a completion gives, as search-augmented RL models write it.

Search-R1 and its successors (ZeroSearch, ReSearch, R1-Searcher, DeepResearcher, Search-o1) write their
reasoning in ``<think>`` blocks, their queries in ``<search>`` (or ``<|begin_of_query|>``, ``<tool_call>``),
get retrieved text back in ``<information>`` (``<result>``, ``<|begin_of_documents|>``, ``<tool_response>``),
and end with ``<answer>...</answer>``; ReSearch boxes the answer inside it (``<answer>The final answer is
\boxed{Paris}</answer>``); chain-of-thought prompts for HotpotQA end with ``So the answer is: Paris.``;
instruction models with ``Answer: Paris`` or a last line. In order (:func:`read_answer`):

1. **After the reasoning only**: the text after the last ``</think>`` (:func:`rewardkit.extract.final_text`);
   a ``<think>`` never closed is truncated reasoning, no answer (``unclosed_think``). Trailing special
   tokens are dropped.
2. **The model's own words**: query and retrieval blocks are removed (:data:`ENVIRONMENT_TAGS`): retrieved
   text is the environment's, and a query is not an answer (a query naming the gold would otherwise be
   paid by the fallbacks). An opened block never closed hides the rest; a closing tag without its opening
   hides what came before it.
3. **The last ``<answer>`` block** (Search-R1's format): its last ``\boxed{}`` when it has one, else its
   text. A ``<answer>`` opened and never closed is a truncated answer: none (``unclosed_answer``).
4. Else **the last ``\boxed{}``** (Search-o1, R1-Searcher).
5. Else **the last answer marker**: a line ``Answer: x`` / ``Final answer: x`` / ``**Answer:** x``, or
   ``the answer is x`` / ``So the answer is: x``; the value runs to the end of its line.
6. Else **the final line** of the model's text.

The value is cut of markdown emphasis, quotes, ``\text{}`` and a final full stop. Empty is none
(``no_answer``; ``empty_answer`` for an empty ``<answer></answer>``). Linear in the text's length: every
search is a ``find``/``rfind`` or a regular expression bounded to one line.

>>> read_answer("<think>Who?</think><search>capital of France</search><information>Doc 1: Paris is ..."
...             "</information><think>Paris.</think><answer> Paris </answer>")
('Paris', None)
>>> read_answer("<answer>The final answer is \\boxed{\\text{Paris}}</answer>")
('Paris', None)
>>> read_answer("Paris is on the Seine.\nSo the answer is: Paris."), read_answer("I think\n**Answer:** Paris")
(('Paris', None), ('Paris', None))
>>> read_answer("<think>it is Paris"), read_answer("<answer>Par")
((None, 'unclosed_think'), (None, 'unclosed_answer'))
"""

from __future__ import annotations

import re

from rewardkit.extract import final_text, last_boxed, last_tag_block

__all__ = ["ENVIRONMENT_TAGS", "MAX_ANSWER_CHARS", "read_answer"]

#: the longest answer read (characters, as written); a longer one is ``answer_too_long``
MAX_ANSWER_CHARS = 2000
#: (opening, closing) of the blocks that are queries or retrieved text, not an answer
ENVIRONMENT_TAGS = (
    ("<information>", "</information>"),
    ("<search>", "</search>"),
    ("<result>", "</result>"),
    ("<documents>", "</documents>"),
    ("<tool_call>", "</tool_call>"),
    ("<tool_response>", "</tool_response>"),
    ("<|begin_of_query|>", "<|end_of_query|>"),
    ("<|begin_of_documents|>", "<|end_of_documents|>"),
)
_MARKER = re.compile(
    r"(?:^[ \t>#*_-]*+(?:final[ \t]++)?answer[ \t*_]*+[:：]"
    r"|\bthe[ \t]++(?:final[ \t]++|correct[ \t]++)?answer[ \t]++is\b[ \t*_]*+:?)"
    r"[ \t]*+([^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
_TEXT = re.compile(r"^\\(?:text|textbf|mathrm)\{(.*)\}$", re.DOTALL)
_EDGES = " \t\r\n*_`\"'“”‘’"


def read_answer(completion: str) -> tuple[str | None, str | None]:
    """``(answer, None)``, or ``(None, reason)`` when the completion states none (see the module); an
    answer over :data:`MAX_ANSWER_CHARS` characters is none either (``answer_too_long``)."""
    answer, reason = _read(completion)
    if answer is not None and len(answer) > MAX_ANSWER_CHARS:
        return None, "answer_too_long"
    return answer, reason


def _read(completion: str) -> tuple[str | None, str | None]:
    final = final_text(completion)
    if final is None:
        return None, "unclosed_think"
    text = model_text(final)
    block = last_tag_block(text, "answer")
    if block is not None:
        boxed = last_boxed(block) if "\\" in block else None
        answer = _clean(boxed if boxed is not None else block)
        return (answer, None) if answer else (None, "empty_answer")
    if "<answer>" in text:
        return None, "unclosed_answer"
    boxed = last_boxed(text) if "\\" in text else None
    if boxed is not None:
        answer = _clean(boxed)
        return (answer, None) if answer else (None, "empty_answer")
    marked = None
    for marked in _MARKER.finditer(text):  # noqa: B007 - the last one is wanted
        continue
    if marked is not None:
        answer = _clean(marked.group(1))
        return (answer, None) if answer else (None, "empty_answer")
    for line in reversed(text.splitlines()):
        answer = _clean(line)
        if answer:
            return answer, None
    return None, "no_answer"


def model_text(text: str) -> str:
    """``text`` without its query and retrieval blocks (:data:`ENVIRONMENT_TAGS`).

    >>> model_text("a <search>q</search> b <information>doc</information> c <search>unfinished")
    'a  b  c '
    >>> model_text("retrieved tail</information> my answer")
    ' my answer'
    """
    for opening, closing in ENVIRONMENT_TAGS:
        if opening not in text and closing not in text:
            continue
        first_open = text.find(opening)
        stray = text.rfind(closing, 0, first_open if first_open >= 0 else len(text))
        if stray >= 0:  # a closing tag before any opening: the block began before the final segment
            text = text[stray + len(closing) :]
        parts, at = [], 0
        while True:
            start = text.find(opening, at)
            if start < 0:
                parts.append(text[at:])
                break
            parts.append(text[at:start])
            end = text.find(closing, start + len(opening))
            if end < 0:  # opened and never closed: everything after it is inside
                break
            at = end + len(closing)
        text = "".join(parts)
    return text


def _clean(value: str) -> str:
    value = value.strip(_EDGES)
    inner = _TEXT.match(value)
    if inner is not None:
        value = inner.group(1).strip(_EDGES)
    if value.endswith(".") and not value.endswith(".."):
        value = value[:-1].rstrip(_EDGES)
    return value
