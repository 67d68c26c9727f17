"""Format: the completion is exactly the tag blocks in order (``<think>...</think> <answer>...</answer>``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, ItemReward, Verdict, binary_values
from rewardkit.extract import strip_special_tail
from rewardkit.registry import named, register

__all__ = ["FormatTags", "check_format", "format_tags"]

_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")


def check_format(
    text: str, tags: Sequence[str] = ("think", "answer"), think_prefilled: bool = False
) -> str | None:
    """Why ``text`` breaks the tag format, or ``None`` when it follows it.

    Leading and trailing whitespace, and special tokens at the end (``<|im_end|>``, ``</s>``, ...), are
    ignored; the blocks must follow each other separated only by
    whitespace, no block may contain an opening or closing tag of the listed names, and the last block must
    not be empty. With ``think_prefilled`` the prompt already opened the first tag.

    >>> check_format("<think>hmm</think>\\n<answer>4</answer>") is None
    True
    >>> check_format("<think>hmm</think><answer> </answer>")
    'empty:answer'
    >>> check_format("hmm</think><answer>4</answer>", think_prefilled=True) is None
    True
    >>> check_format("<think>hmm</think><answer>4</answer><|im_end|>") is None
    True
    """
    text = strip_special_tail(text.strip())
    pos, last = 0, len(tags) - 1
    markers = [(f"<{t}>", f"</{t}>") for t in tags]
    for i, tag in enumerate(tags):
        opening, closing = markers[i]
        if i == 0 and think_prefilled:
            start = 0
        elif text.startswith(opening, pos):
            start = pos + len(opening)
        else:
            return f"missing:{tag}"
        end = text.find(closing, start)
        if end < 0:
            return f"unclosed:{tag}"
        content = text[start:end]
        if "<" in content and any(o in content or c in content for o, c in markers):
            return f"nested:{tag}"
        if i == last and not content.strip():
            return f"empty:{tag}"
        pos = end + len(closing)
        if i < last:
            while pos < len(text) and text[pos].isspace():
                pos += 1
    return None if pos == len(text) else "trailing_text"


def validate_tags(tags: object) -> tuple[str, ...]:
    """``tags`` as a tuple of distinct tag names, or ``ValueError``."""
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise ValueError(f"format: tags must be a list of tag names, got {tags!r}")
    names = tuple(tags)
    if not names or not all(isinstance(t, str) and _TAG_NAME.fullmatch(t) for t in names):
        raise ValueError(f"format: tags must be a non-empty list of tag names like 'think', got {tags!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"format: tags must be distinct, got {list(names)!r}")
    return names


@register("format", caller_params=["tags", "think_prefilled", "correct", "wrong"])
@dataclass(frozen=True)
class FormatTags(ItemReward):
    """Format: 1.0 when the completion is exactly the tag blocks in order, the last one non-empty.

    Args:
        tags: the block names, in order (default ``["think", "answer"]``).
        think_prefilled: the prompt already opened the first tag, so the completion starts inside it.
        correct, wrong: what a well-formed and a malformed completion are worth (1.0 and 0.0).
    """

    tags: tuple[str, ...] = ("think", "answer")
    think_prefilled: bool = False
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.think_prefilled, bool):
            raise ValueError(f"format: think_prefilled must be true or false, got {self.think_prefilled!r}")
        object.__setattr__(self, "tags", validate_tags(self.tags))
        binary_values("format", self.correct, self.wrong)

    def params(self) -> dict[str, Any]:
        return {
            "tags": list(self.tags),
            "think_prefilled": self.think_prefilled,
            "correct": self.correct,
            "wrong": self.wrong,
        }

    def score_one(self, text: str, *values: Any) -> Verdict:
        reason = check_format(text, self.tags, self.think_prefilled)
        return Verdict(self.correct) if reason is None else Verdict(self.wrong, reason)


@named("format")
def format_tags(
    completions: Sequence[Completion],
    *,
    tags: Sequence[str] = ("think", "answer"),
    think_prefilled: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """Tag-format reward of each completion (the registry's ``format``).

    Args:
        completions: strings or chat message lists.
        tags: the block names, in order.
        think_prefilled: the prompt already opened the first tag.

    Returns:
        1.0 when the completion (whitespace-stripped) is exactly the blocks in order, separated only by
        whitespace, with no listed tag nested inside a block and a non-empty last block; else 0.0.

    >>> format_tags(["<think>2+2</think> <answer>4</answer>", "<think>2+2</think><answer></answer>"])
    [1.0, 0.0]
    """
    return FormatTags(tags=validate_tags(tags), think_prefilled=think_prefilled)(completions, **kwargs)
