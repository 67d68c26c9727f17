"""A batch's judge requests built, off the event loop: each item's fenced prompt (and images) within the
prompt's byte cap, identical requests grouped, and the items decided without a call set apart. A batch's
images share one :class:`~rewardkit.judging.images.ByteBudget` (``MAX_BATCH_IMAGE_BYTES``).

:func:`prepare` is CPU work (fencing, image encoding, hashing) that the judge runs in a worker thread; it
checks the request deadline before each item, so a batch of large items stops at its deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit import chat
from rewardkit.core import Completion, DeadlineExceeded, check_deadline, completion_text
from rewardkit.judging.cache import request_key
from rewardkit.judging.fence import render
from rewardkit.judging.images import MAX_BATCH_IMAGE_BYTES, ByteBudget, ImageRefused, encode_image

__all__ = ["PROMPT_TOO_LARGE", "QUESTION_COLUMNS", "Batch", "Prompter", "question_text"]

#: where the question is read from, first found first: TRL passes ``prompts``, ms-swift ``messages``
QUESTION_COLUMNS = ("question", "prompt", "prompts", "messages")
PROMPT_TOO_LARGE = "prompt_too_large"


def question_text(value: Any) -> str:
    """The question of one row, for the judge's prompt: a string as it is; of a chat (a ``prompts`` or
    ``messages`` row), the last user message's text (:func:`rewardkit.chat.question_text`); ``""`` for a
    chat without one or ``None``; any other value as text.

    >>> question_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
    ...                {"role": "assistant", "content": "4"}])
    '2+2?'
    """
    text = chat.question_text(value)
    if text is not None:
        return text
    return "" if value is None or isinstance(value, list | tuple) else str(value)


@dataclass
class Batch:
    """A batch's requests: ``requests[digest]`` the items that send the same request, ``payloads[digest]``
    its messages and fence nonce, ``decided[i]`` the (value, reason) of an item that needs no call, and
    ``marked`` the items whose completion held a marker the fence neutralised."""

    requests: dict[str, list[int]] = field(default_factory=dict)
    payloads: dict[str, tuple[list[dict[str, Any]], str]] = field(default_factory=dict)
    decided: dict[int, tuple[float | None, str]] = field(default_factory=dict)
    marked: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Prompter:
    """How one judge builds its prompts: its template and placeholders, the byte cap, image settings."""

    template: str
    fields: frozenset[str]
    max_prompt_bytes: int
    max_image_side: int
    local_files: bool
    image_urls: bool
    max_image_pixels: int

    def prepare(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], key: Sequence[Any]
    ) -> Batch:
        """Every item's request (``key`` prefixes what is hashed: endpoint, model, temperature)."""
        batch = Batch()
        budget = ByteBudget(MAX_BATCH_IMAGE_BYTES)
        for i, completion in enumerate(completions):
            check_deadline("llm_judge: building prompts")
            try:
                messages, nonce, marked = self.messages(completion, columns, i, budget)
            except ValueError as exc:
                reason = str(exc)
                batch.decided[i] = (0.0, reason) if reason == "invalid_completion" else (None, reason)
                continue
            digest = request_key([*key, messages])
            batch.requests.setdefault(digest, []).append(i)
            batch.payloads[digest] = (messages, nonce)
            if marked:
                batch.marked.add(i)
        return batch

    def values(self, completion: Completion, columns: dict[str, list[Any]], i: int) -> dict[str, str]:
        """The text of each placeholder for item ``i`` (``ValueError("invalid_completion")``)."""
        text = completion_text(completion)
        if text is None:
            raise ValueError("invalid_completion")
        source = next((name for name in QUESTION_COLUMNS if name in columns), None)
        solution = columns["solution"][i] if "solution" in columns else None
        given = {
            "question": "" if source is None else question_text(columns[source][i]),
            "solution": "(none)" if solution is None else solution,
            "completion": text,
        }
        given.update({name: columns[name][i] for name in self.fields if name not in given})
        return {name: value if isinstance(value, str) else str(value) for name, value in given.items()}

    def messages(
        self, completion: Completion, columns: dict[str, list[Any]], i: int, budget: ByteBudget | None = None
    ) -> tuple[list[dict[str, Any]], str, bool]:
        """Item ``i``'s chat messages, its fence nonce, and whether its completion held a marker; a
        ``ValueError`` carries the reason of an item refused without a call. ``budget``: what the batch's
        images may still take."""
        values = {
            name: value for name, value in self.values(completion, columns, i).items() if name in self.fields
        }
        # characters are at most bytes: an item far over the cap is refused before anything is built
        if len(self.template) + sum(len(value) for value in values.values()) > self.max_prompt_bytes:
            raise ValueError(PROMPT_TOO_LARGE)
        rendered = render(self.template, values)
        if len(rendered.prompt.encode("utf-8", "surrogatepass")) > self.max_prompt_bytes:
            raise ValueError(PROMPT_TOO_LARGE)
        images = columns["images"][i] if "images" in columns else None
        if not images:
            return [{"role": "user", "content": rendered.prompt}], rendered.nonce, rendered.marked
        parts: list[dict[str, Any]] = [{"type": "text", "text": rendered.prompt}]
        for k, image in enumerate(images if isinstance(images, list | tuple) else [images]):
            try:
                url = encode_image(
                    image,
                    self.max_image_side,
                    local_files=self.local_files,
                    image_urls=self.image_urls,
                    max_pixels=self.max_image_pixels,
                    budget=budget,
                )
            except DeadlineExceeded:
                raise
            except ImageRefused as exc:
                raise ValueError(f"bad_image:{k}:{exc}") from None
            except Exception as exc:
                raise ValueError(f"bad_image:{k}:{type(exc).__name__}") from None
            parts.append({"type": "image_url", "image_url": {"url": url}})
        return [{"role": "user", "content": parts}], rendered.nonce, rendered.marked
