"""Chat messages: which message of a conversation is the completion, the question and the prompt.

One rule for every reader (the rewards, the judge, the GRPO group keys, ``rewardkit diagnose``):

* a **chat** is a non-empty list (or other sequence) of messages, each a mapping with a ``role`` and a
  ``content``; anything else (a string, a list holding a non-mapping) is not a chat;
* a message's **text** is its content when that is a string, the text of its OpenAI-style parts joined when
  it is a list (``{"type": "text", "text": ...}`` parts, or plain strings), ``""`` when it is ``None``, and
  unreadable (``None``) otherwise;
* the **completion** is the last assistant message's text (trainers pass the reply, or the whole
  conversation ending with it);
* the **question** is the last user message's text (an earlier system message or assistant turn is not it);
* the **prompt** is the conversation without the assistant turns it ends with (ms-swift appends the
  completion to its ``messages``).

A string is its own completion, question and prompt.

>>> chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
...         {"role": "assistant", "content": [{"type": "text", "text": "4"}]}]
>>> completion_text(chat), question_text(chat), prompt_messages(chat)[-1]["role"]
('4', '2+2?', 'user')
>>> completion_text("<answer>3</answer>"), question_text("2+2?"), completion_text(42)
('<answer>3</answer>', '2+2?', None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["completion_text", "content_text", "messages", "prompt_messages", "question_text"]


def messages(value: object) -> list[Mapping[str, Any]] | None:
    """``value``'s messages when it is a chat (a non-empty sequence of mappings), else ``None``.

    >>> messages([{"role": "user", "content": "hi"}])
    [{'role': 'user', 'content': 'hi'}]
    >>> messages("hi"), messages([]), messages([{"role": "user"}, 3])
    (None, None, None)
    """
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Sequence):
        return None
    found = [m for m in value if isinstance(m, Mapping)]
    return found if found and len(found) == len(value) else None


def content_text(content: object) -> str | None:
    """A message content's text: a string as it is, the text parts of a list joined, ``""`` for ``None``;
    ``None`` for a content that holds no text (a number, a mapping).

    >>> content_text([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, "b"])
    'ab'
    >>> content_text(None), content_text(7)
    ('', None)
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return None


def _last_text(value: object, role: str) -> str | None:
    if isinstance(value, str):
        return value
    chat = messages(value)
    said = [m for m in chat or () if m.get("role") == role]
    return content_text(said[-1].get("content")) if said else None


def completion_text(completion: object) -> str | None:
    """The text a reward judges: the string itself, or the last assistant message's text; ``None`` for
    anything that is not a completion (no assistant message, not a chat), so the caller can give it a
    defined reward.

    >>> completion_text([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "4"}])
    '4'
    >>> completion_text([{"role": "user", "content": "hi"}]) is None
    True
    """
    return _last_text(completion, "assistant")


def question_text(value: object) -> str | None:
    """The question a row asks: the string itself, or a chat's last user message's text; ``None`` when there
    is none (no user message, not a chat).

    >>> question_text([{"role": "user", "content": "1+1?"}, {"role": "assistant", "content": "2"},
    ...                {"role": "user", "content": "and 2+2?"}])
    'and 2+2?'
    >>> question_text([{"role": "system", "content": "Be brief."}]) is None
    True
    """
    return _last_text(value, "user")


def prompt_messages(value: Any) -> Any:
    """The prompt of a conversation: the chat without the assistant turns it ends with, as a list; anything
    that is not a chat, as it is.

    >>> prompt_messages([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}])
    [{'role': 'user', 'content': '2+2?'}]
    >>> prompt_messages("2+2?")
    '2+2?'
    """
    chat = messages(value)
    if chat is None:
        return value
    end = len(chat)
    while end and chat[end - 1].get("role") == "assistant":
        end -= 1
    return chat[:end]
