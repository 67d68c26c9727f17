"""Structured output: a final answer's JSON checked against a row's JSON Schema (the ``json_schema`` reward).

Two steps, each in its own module: :mod:`rewardkit.structured.answer` reads the JSON an answer holds (the
last ``json`` fence, else the last unlabelled fence, else the whole answer; strict JSON within bounds), and
:mod:`rewardkit.structured.schema` reads the row's schema within bounds and compiles it once (jsonschema-rs:
Draft 2020-12, 2019-09, 7, 6 and 4; no remote ``$ref`` ever fetched; patterns without catastrophic
backtracking). :func:`judge` puts them together for one answer.

>>> judge('```json\\n{"name": "Ann", "age": 31}\\n```', '{"required": ["name", "age"]}')
Judgement(valid=True, reason=None, detail=None)
>>> judge('{"name": "Ann"}', {"required": ["name", "age"]})  # doctest: +NORMALIZE_WHITESPACE
Judgement(valid=False, reason='schema_violation:/',
          detail={'keyword': 'required', 'message': '"age" is a required property'})
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rewardkit.structured.answer import MAX_ANSWER_CHARS, Found, fenced_blocks, read_answer
from rewardkit.structured.schema import (
    DRAFTS,
    MAX_SCHEMA_CHARS,
    Compiled,
    Violation,
    compile_schema,
    read_schema,
)

__all__ = [
    "DRAFTS",
    "MAX_ANSWER_CHARS",
    "MAX_SCHEMA_CHARS",
    "Compiled",
    "Found",
    "Judgement",
    "Violation",
    "compile_schema",
    "fenced_blocks",
    "judge",
    "judge_compiled",
    "prepare_schema",
    "read_answer",
    "read_schema",
]

#: a violation's path in a reason is cut to this many characters (reasons are short codes)
MAX_PATH = 100


class Judgement(NamedTuple):
    """``valid``: ``True`` (valid), ``False`` (JSON that breaks the schema, or no JSON: ``reason`` says
    which) or ``None`` (the schema could not be used: the reward does not know)."""

    valid: bool | None
    reason: str | None = None
    detail: Any = None


def judge(
    answer: str,
    schema: Any,
    *,
    default_draft: str = "2020-12",
    validate_formats: bool | None = None,
    max_schema_chars: int = MAX_SCHEMA_CHARS,
    max_answer_chars: int = MAX_ANSWER_CHARS,
) -> Judgement:
    """Judge one final answer against one schema (an object, a boolean or JSON text of one).

    Reasons: ``missing_schema``, ``invalid_schema``, ``schema_too_large``, ``unresolvable_ref``,
    ``unsupported_draft`` (``valid`` is ``None``); ``no_json``, ``invalid_json``,
    ``schema_violation:<JSON Pointer into the answer>`` (``valid`` is ``False``).
    """
    return judge_compiled(
        answer,
        prepare_schema(
            schema, default_draft=default_draft, validate_formats=validate_formats, max_chars=max_schema_chars
        ),
        max_answer_chars,
    )


def prepare_schema(
    schema: Any,
    *,
    default_draft: str = "2020-12",
    validate_formats: bool | None = None,
    max_chars: int = MAX_SCHEMA_CHARS,
) -> Compiled | Judgement:
    """A schema column's value read and compiled (:class:`Compiled`), or the :class:`Judgement` of every
    answer against it when it cannot be used (``valid`` is ``None``). :func:`judge` is
    ``judge_compiled(answer, prepare_schema(schema))``; a batch prepares each distinct schema once
    (:class:`rewardkit.once.OncePerBatch`)."""
    text, why = read_schema(schema, max_chars)
    if text is None:
        return Judgement(None, why)
    compiled = compile_schema(text, default_draft, validate_formats)
    if compiled.validator is None:
        return Judgement(None, compiled.reason, {"message": compiled.detail})
    return compiled


def judge_compiled(
    answer: str, schema: Compiled | Judgement, max_answer_chars: int = MAX_ANSWER_CHARS
) -> Judgement:
    """Judge one final answer against a schema from :func:`prepare_schema`."""
    if type(schema) is Judgement:
        return schema
    compiled: Compiled = schema  # type: ignore[assignment]
    found = read_answer(answer, max_answer_chars)
    if found.reason is not None:
        return Judgement(False, found.reason, {"source": found.source, "message": found.detail})
    violation = compiled.first_error(found.value)
    if violation is None:
        return Judgement(True)
    return Judgement(
        False,
        f"schema_violation:{violation.path[:MAX_PATH]}",
        {"keyword": violation.keyword, "message": violation.message},
    )
