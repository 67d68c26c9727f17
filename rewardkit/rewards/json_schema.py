"""Structured output (NeMo-Gym's ``structured_outputs``, JSON-mode tasks): the final answer's JSON against
the row's JSON Schema.

A thin reward over :mod:`rewardkit.structured`: the final answer is the text after the reasoning
(``</think>``; a think block never closed is no answer), its JSON the last ``json`` fence, else the last
unlabelled fence, else the whole answer; the row's ``schema`` (an object, a boolean or JSON text) is compiled
once per distinct schema, never fetching a remote ``$ref``, with patterns that cannot backtrack without
bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rewardkit.core import Completion, Explained, ItemReward, Verdict, finite_number
from rewardkit.extract.segment import final_text
from rewardkit.once import OncePerBatch
from rewardkit.registry import named, register
from rewardkit.spec import CallerParam
from rewardkit.structured import (
    DRAFTS,
    MAX_ANSWER_CHARS,
    MAX_SCHEMA_CHARS,
    Compiled,
    Judgement,
    judge_compiled,
    prepare_schema,
)

__all__ = ["JSONSchema", "json_schema"]

_VALID = Verdict(1.0)
_NO_ANSWER = Verdict(0.0, "no_json")


class _Cell(NamedTuple):
    """One item's schema and its batch's :class:`OncePerBatch` (what :meth:`JSONSchema._score` passes on)."""

    once: OncePerBatch[Compiled | Judgement]
    value: Any


@register(
    "json_schema",
    columns=["schema"],
    caller_params={
        "partial": CallerParam(),
        "default_draft": CallerParam(),
        "validate_formats": CallerParam(),
        "max_schema_chars": CallerParam(cap=1_000_000),
        "max_answer_chars": CallerParam(cap=1_000_000),
    },
)
@dataclass(frozen=True)
class JSONSchema(ItemReward):
    """The final answer is JSON valid against the row's schema: 1.0; ``partial`` for JSON that breaks it.

    Args:
        partial: what JSON that parses but breaks the schema is worth, in [0, 1] (0.0: the reward is
            binary). A set share for being parseable only, whatever the violation: an empty ``{}`` gets it
            too, so keep it small (0.1-0.2) where it is used to shape early training.
        default_draft: the draft of a schema without ``$schema``: ``"2020-12"``, ``"2019-09"``, ``"7"``,
            ``"6"`` or ``"4"``.
        validate_formats: ``None`` (each draft's rule: ``format`` asserted in drafts 4-7, an annotation in
            2019-09 and 2020-12), ``True`` (always asserted) or ``False`` (never).
        max_schema_chars: the longest schema, in characters of JSON (at most 1,000,000 from a caller).
        max_answer_chars: the longest JSON read from an answer (at most 1,000,000 from a caller).
    """

    partial: float = 0.0
    default_draft: str = "2020-12"
    validate_formats: bool | None = None
    max_schema_chars: int = MAX_SCHEMA_CHARS
    max_answer_chars: int = MAX_ANSWER_CHARS

    def __post_init__(self) -> None:
        if not finite_number(self.partial) or not 0.0 <= self.partial <= 1.0:
            raise ValueError(f"json_schema: partial must be a number in [0, 1], got {self.partial!r}")
        object.__setattr__(self, "partial", float(self.partial))
        if self.default_draft not in DRAFTS:
            raise ValueError(
                f"json_schema: default_draft must be one of {', '.join(DRAFTS)}, got {self.default_draft!r}"
            )
        if self.validate_formats not in (None, True, False):
            raise ValueError(
                f"json_schema: validate_formats must be true, false or null, got {self.validate_formats!r}"
            )
        for name in ("max_schema_chars", "max_answer_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"json_schema: {name} must be a positive integer, got {value!r}")

    def params(self) -> dict[str, Any]:
        return {
            "partial": self.partial,
            "default_draft": self.default_draft,
            "validate_formats": self.validate_formats,
            "max_schema_chars": self.max_schema_chars,
            "max_answer_chars": self.max_answer_chars,
        }

    def _prepare(self, schema: Any) -> Compiled | Judgement:
        return prepare_schema(
            schema,
            default_draft=self.default_draft,
            validate_formats=self.validate_formats,
            max_chars=self.max_schema_chars,
        )

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict | Explained]:
        # a GRPO group shares its schema: each distinct value is read and compiled once per batch, lazily
        # (an item's schema when that item is judged, within the per-item deadline and error handling)
        once = OncePerBatch(self._prepare)
        cells = [_Cell(once, schema) for schema in columns["schema"]]
        return super()._score(completions, {**columns, "schema": cells}, raise_on_error)

    def score_one(self, text: str, *values: Any) -> Verdict | Explained:
        schema = values[0]
        prepared = schema.once(schema.value) if type(schema) is _Cell else self._prepare(schema)
        answer = final_text(text)
        result = judge_compiled("" if answer is None else answer, prepared, self.max_answer_chars)
        if result.valid:
            return _VALID
        if result.valid is None:  # the batch's one Judgement of this schema: each item its own detail
            detail = dict(result.detail) if isinstance(result.detail, dict) else result.detail
            return Explained(None, result.reason, detail)
        if answer is None:
            return _NO_ANSWER  # the reasoning never ended: nothing after it to read
        if result.reason is not None and result.reason.startswith("schema_violation:"):
            return Explained(self.partial, result.reason, result.detail)
        return Explained(0.0, result.reason, result.detail)


@named("json_schema")
def json_schema(
    completions: Sequence[Completion],
    schema: Sequence[Any],
    *,
    partial: float = 0.0,
    **kwargs: Any,
) -> list[float | None]:
    """Whether each completion's final answer is JSON valid against its row's schema (the registry's
    ``json_schema``).

    Args:
        completions: strings or chat message lists.
        schema: one JSON Schema per completion: an object, a boolean, or JSON text of one.
        partial: what JSON that parses but breaks the schema is worth (0.0).

    Returns:
        1.0 valid; ``partial`` for JSON that breaks the schema (reason ``schema_violation:<pointer>``);
        0.0 without JSON (``no_json``, ``invalid_json``); ``None`` when the schema cannot be used
        (``missing_schema``, ``invalid_schema``, ``schema_too_large``, ``unresolvable_ref``,
        ``unsupported_draft``).

    >>> person = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
    >>> answers = ['<think>an object</think>```json\\n{"age": 31}\\n```', '{"age": "31"}', "thirty-one"]
    >>> json_schema(answers, schema=[person] * 3, partial=0.1)
    [1.0, 0.1, 0.0]
    """
    return JSONSchema(partial=partial)(completions, schema=schema, **kwargs)
