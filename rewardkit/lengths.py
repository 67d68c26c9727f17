"""Lengths and groups for the shaping rewards: token counts from what trainers pass, and GRPO groups.

Token counts come from ``completion_ids`` (TRL) or ``response_token_ids`` (ms-swift: a list of ids, or a list
of lists for multi-turn rollouts, whose lengths add up). Without either, the rewards that need tokens raise a
:class:`~rewardkit.core.ColumnError` saying what to pass: a character count would silently change the scale.

>>> columns = {"completion_ids": [[1, 2, 3], [], None], "response_token_ids": [None, None, [4]]}
>>> token_counts(columns, 3, "cosine")
[3, 0, 1]
>>> token_counts({"response_token_ids": [[[1, 2], [3]]]}, 1, "cosine")
[3]
>>> group_keys({"prompt": ["a", "b", "a"]}, 3, "length")
[0, 1, 0]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit.chat import prompt_messages
from rewardkit.core import ColumnError, check_deadline

__all__ = ["TOKEN_COLUMNS", "group_keys", "group_text", "token_counts"]

TOKEN_COLUMNS = ("completion_ids", "response_token_ids")
#: where a completion's GRPO group is read, first found first: an explicit ``group``, the dataset's
#: ``prompt``, TRL's ``prompts``, ms-swift's ``messages`` (its prompt: the conversation up to the completion)
GROUP_COLUMNS = ("group", "prompt", "prompts", "messages")


def _count(ids: Any) -> int | None:
    """The number of ids (the turns of a multi-turn list added up); ``None`` for anything that is not a list
    of ids (a caller's bad column is that item's problem, not the batch's)."""
    items = ids.tolist() if hasattr(ids, "tolist") else ids
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        return None
    if items and isinstance(items[0], Sequence) and not isinstance(items[0], str):
        turns = [len(turn) if isinstance(turn, Sequence) else None for turn in items]
        return None if None in turns else sum(t for t in turns if t is not None)
    return len(items)


def token_counts(columns: Mapping[str, Sequence[Any]], n: int, reward: str) -> list[int | None]:
    """The token count of each completion, from the first token column that has its ids (``None`` for a
    completion that has none)."""
    given = [columns[name] for name in TOKEN_COLUMNS if name in columns]
    if given:
        counts: list[int | None] = []
        for i in range(n):
            check_deadline(f"reward {reward!r}: token counts, item {i}")
            ids = next((column[i] for column in given if column[i] is not None), None)
            counts.append(None if ids is None else _count(ids))  # None: the reward gives None
        return counts
    raise ColumnError(
        f"reward {reward!r} counts tokens: pass 'completion_ids' (TRL passes it) or 'response_token_ids' "
        f"(ms-swift passes it), one list of token ids per completion ({n} completions)"
    )


def group_text(value: Any) -> str:
    """A group value as text: itself when it is text, else canonical JSON (equal values, equal text)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def group_keys(columns: Mapping[str, Sequence[Any]], n: int, reward: str) -> list[int]:
    """A group number per completion: completions sharing a ``group`` value (else the same ``prompt``) are
    one GRPO group, whatever batch they arrived in."""
    for name in GROUP_COLUMNS:
        if name in columns:
            seen: dict[str, int] = {}
            keys = []
            for i, value in enumerate(columns[name]):
                check_deadline(f"reward {reward!r}: groups, item {i}")  # a prompt may be long
                text = group_text(prompt_messages(value) if name == "messages" else value)
                keys.append(seen.setdefault(text, len(seen)))
            return keys
    raise ColumnError(
        f"reward {reward!r} compares completions within their group: pass a 'group' column, or the "
        f"'prompt', 'prompts' (TRL) or 'messages' (ms-swift) column trainers pass ({n} completions)"
    )
