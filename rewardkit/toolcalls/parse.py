"""Reading a model's tool calls (step 1 of :mod:`rewardkit.toolcalls`): a completion in, a list of calls out.

A call is ``(name, arguments)``: a function name and a dict of keyword arguments. The formats, tried in this
order (the first one a completion uses is the one read):

1. a chat completion whose last assistant message has OpenAI-style ``tool_calls``
   (``[{"type": "function", "function": {"name": ..., "arguments": "<JSON text>"}}]``: TRL, ms-swift, vLLM);
2. Hermes/Qwen ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks, one or several, with
   any text around them (a last block left unclosed at the end of the text is read too);
3. Mistral ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]``, or the newer
   ``[TOOL_CALLS]name[ARGS]{...}`` (one marker per call);
4. the whole final answer as JSON: Llama-3.1's ``{"name": ..., "parameters": {...}}`` (``<|python_tag|>``
   before it allowed), ``"arguments"`` in its place, or a list of such objects;
5. the whole final answer as BFCL's Python-call syntax, ``[get_weather(city="Paris"), f(x=1)]`` or a bare
   ``f(x=1)``: parsed with :mod:`ast`, never evaluated. Values are literals (numbers, strings, booleans,
   ``None``, lists, tuples, dicts, a sign before a number); a bare name is read as its text (BFCL reads a
   variable so); any other expression (``x**2``, ``lambda x: x``) as its source text, never its value.
   Keyword arguments only: a positional argument or ``**spread`` is an unparseable call.

4 and 5 may sit in one fenced block (```` ```json ````, ```` ```python ````, ```` ``` ````). Text is read
after the reasoning only (after the last ``</think>``; an unclosed ``<think>`` is no answer) and trailing
special tokens (``<|im_end|>``, ``<|eot_id|>``, ``</s>``, ...) are dropped.

The outcome is :class:`Parsed`: the calls, or an error: ``no_answer`` (unfinished reasoning) or
``unparseable_call`` (a tool-call marker, or an answer that starts like JSON or a call, that does not read
as calls). Prose with no call in it is zero calls, not an error. Every read is bounded: the answer's length
(``max_chars``), the number of calls (``max_calls``: more is ``unparseable_call``: too_many_calls),
nesting (100 levels, :mod:`rewardkit.jsontext`).

>>> read_calls('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>').calls
[('get_weather', {'city': 'Paris'})]
>>> read_calls('<think>hm</think>[get_weather(city="Paris"), math.hypot(x=3, y=-4)]').calls
[('get_weather', {'city': 'Paris'}), ('math.hypot', {'x': 3, 'y': -4})]
>>> read_calls('[TOOL_CALLS][{"name": "f", "arguments": {"x": 1}}]').calls
[('f', {'x': 1})]
>>> read_calls('{"name": "f", "parameters": {"x": 1}}').calls, read_calls("It is sunny.").calls
([('f', {'x': 1})], [])
>>> read_calls('<tool_call>{"name": "f", "arguments": {"x": </tool_call>').error
'unparseable_call'
>>> read_calls("[__import__('os').system('ls')]").error  # a call as a value is text; top level: no name
'unparseable_call'
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.chat import content_text, messages
from rewardkit.jsontext import MAX_DEPTH, JSONTextError, check_depth, read_json

__all__ = ["Call", "Parsed", "final_answer", "read_calls"]

#: One call: the function's name and its keyword arguments.
Call = tuple[str, dict[str, Any]]

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_SPECIAL_TAIL = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|return|>")
_HERMES_OPEN, _HERMES_CLOSE = "<tool_call>", "</tool_call>"
_MISTRAL = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"


@dataclass(frozen=True)
class Parsed:
    """What a completion holds: its calls (possibly none), or an error and what it was about."""

    calls: list[Call] = field(default_factory=list)
    error: str | None = None  # "no_answer" | "unparseable_call"
    detail: str | None = None
    format: str | None = None  # "openai", "hermes", "mistral", "json", "python"


class _Bad(ValueError):
    """A call that does not read; the message says why (it lands in the item's details)."""


def final_answer(text: str) -> str | None:
    """The text after the reasoning, without trailing special tokens; ``None`` when a ``<think>`` is unclosed.

    >>> final_answer("<think>a</think> b<|im_end|>"), final_answer("<think>a") is None
    (' b', True)
    """
    close = text.rfind(_THINK_CLOSE)
    if close >= 0:
        text = text[close + len(_THINK_CLOSE) :]
    elif _THINK_OPEN in text:
        return None
    while True:
        stripped = text.rstrip()
        for token in _SPECIAL_TAIL:
            if stripped.endswith(token):
                text = stripped[: -len(token)]
                break
        else:
            return text


def _unfence(text: str) -> str:
    """The body of ``text`` when it is one fenced block alone (any info string), else ``text``."""
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        newline = text.find("\n")
        if 0 <= newline < len(text) - 3 and "```" not in text[newline:-3]:
            return text[newline + 1 : -3].strip()
    return text


def _json(text: str, max_chars: int) -> Any:
    try:
        return read_json(text, max_chars=max_chars)
    except JSONTextError as exc:
        raise _Bad(str(exc)) from None


def _arguments(value: Any, max_chars: int) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # OpenAI's arguments are JSON text; some models double-encode them
        value = _json(value, max_chars) if value.strip() else {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _Bad("arguments that are not an object")
    return dict(value)


def _call_object(obj: Any, max_chars: int) -> Call:
    """``{"name", "arguments"|"parameters"}``, or OpenAI's ``{"type": "function", "function": {...}}``."""
    if isinstance(obj, Mapping) and isinstance(obj.get("function"), Mapping):
        obj = obj["function"]
    if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str) or not obj["name"].strip():
        raise _Bad("a call without a name")
    if "arguments" in obj and "parameters" in obj:
        raise _Bad("a call with both arguments and parameters")
    raw = obj.get("arguments", obj.get("parameters"))
    return obj["name"].strip(), _arguments(raw, max_chars)


def _call_objects(value: Any, max_chars: int) -> list[Call]:
    items = value if isinstance(value, list) else [value]
    return [_call_object(item, max_chars) for item in items]


def _hermes(text: str, max_chars: int) -> list[Call]:
    calls: list[Call] = []
    start = text.find(_HERMES_OPEN)
    while start >= 0:
        body_at = start + len(_HERMES_OPEN)
        end = text.find(_HERMES_CLOSE, body_at)
        body = text[body_at:] if end < 0 else text[body_at:end]
        calls.extend(_call_objects(_json(_unfence(body.strip()), max_chars), max_chars))
        if end < 0:
            break
        start = text.find(_HERMES_OPEN, end + len(_HERMES_CLOSE))
    return calls


def _mistral(text: str, max_chars: int) -> list[Call]:
    calls: list[Call] = []
    for part in text[text.find(_MISTRAL) + len(_MISTRAL) :].split(_MISTRAL):
        part = part.strip()
        if not part:
            continue
        if "[ARGS]" in part:  # v11+: name[ARGS]{...}, maybe name[CALL_ID]id[ARGS]{...}
            head, _, args = part.partition("[ARGS]")
            name = head.partition("[CALL_ID]")[0].strip()
            calls.append(_call_object({"name": name, "arguments": _json(args.strip(), max_chars)}, max_chars))
        else:
            calls.extend(_call_objects(_json(part, max_chars), max_chars))
    return calls


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise _Bad("a call whose function is not a (dotted) name")
    parts.append(node.id)
    return ".".join(reversed(parts))


def _value(node: ast.expr, depth: int) -> Any:
    """A literal's value; a name's or another expression's source text. Never evaluated."""
    if depth > MAX_DEPTH:
        raise _Bad(f"a value nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        number: Any = node.operand.value
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.List):
        return [_value(v, depth + 1) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(v, depth + 1) for v in node.elts)
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys):
        return {k.value: _value(v, depth + 1) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[union-attr]
    if isinstance(node, ast.Name):
        return node.id
    return ast.unparse(node)


def _python_call(node: ast.expr) -> Call:
    if not isinstance(node, ast.Call):
        raise _Bad("an element that is not a call")
    if node.args or any(k.arg is None for k in node.keywords):
        raise _Bad("positional or ** arguments (BFCL's calls take keyword arguments)")
    return _dotted(node.func), {k.arg: _value(k.value, 1) for k in node.keywords if k.arg is not None}


def _python(text: str) -> list[Call]:
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _Bad(f"not Python call syntax ({type(exc).__name__})") from None
    body = tree.body
    if isinstance(body, ast.List | ast.Tuple):
        return [_python_call(e) for e in body.elts]
    return [_python_call(body)]


def _looks_like_python_call(text: str) -> bool:
    head = text.partition("(")[0]
    return "(" in text and bool(head) and all(part.isidentifier() for part in head.split("."))


def _text_calls(text: str, max_chars: int) -> tuple[list[Call], str | None]:
    """The calls of a final answer's text and the format they were in (``None``: no call was attempted)."""
    if _HERMES_OPEN in text:
        return _hermes(text, max_chars), "hermes"
    if _MISTRAL in text:
        return _mistral(text, max_chars), "mistral"
    body = text.strip()
    if body.startswith(_PYTHON_TAG):
        body = body[len(_PYTHON_TAG) :].strip()
    body = _unfence(body)
    if body.startswith("{") or (body.startswith("[") and body[1:].lstrip().startswith("{")):
        return _call_objects(_json(body, max_chars), max_chars), "json"
    if body.startswith("[") or _looks_like_python_call(body):
        return _python(body), "python"
    return [], None


def _openai(tool_calls: Any, max_chars: int) -> list[Call]:
    if not isinstance(tool_calls, Sequence) or isinstance(tool_calls, str | bytes):
        raise _Bad("tool_calls that is not a list")
    check_depth(tool_calls, MAX_DEPTH, "tool_calls")
    return _call_objects(list(tool_calls), max_chars)


def read_calls(completion: Any, *, max_chars: int = 65_536, max_calls: int = 64) -> Parsed:
    """The tool calls of one completion (text, or chat messages): see the module's docstring.

    Args:
        completion: the completion's text, or its chat messages (the last assistant message is read:
            its ``tool_calls`` when it has some, else its text).
        max_chars: the longest final answer (and the longest JSON text in a message) read; a longer one
            is ``unparseable_call``.
        max_calls: the most calls read; more is ``unparseable_call``.
    """
    text: str | None
    form: str | None
    tool_calls: Any = None
    if isinstance(completion, str):
        text = completion
    else:
        chat = messages(completion)
        said = [m for m in chat or () if m.get("role") == "assistant"]
        if not said:
            return Parsed(error="unparseable_call", detail="not a completion")
        tool_calls = said[-1].get("tool_calls")
        text = content_text(said[-1].get("content"))
        if text is None:
            text = ""
    try:
        if tool_calls:
            calls, form = _openai(tool_calls, max_chars), "openai"
        else:
            answer = final_answer(text)
            if answer is None:
                return Parsed(error="no_answer", detail="the reasoning never ended (no </think>)")
            if len(answer) > max_chars:
                return Parsed(error="unparseable_call", detail=f"an answer over {max_chars} characters")
            calls, form = _text_calls(answer, max_chars)
    except (_Bad, JSONTextError) as exc:
        return Parsed(error="unparseable_call", detail=str(exc)[:200])
    if len(calls) > max_calls:
        return Parsed(error="unparseable_call", detail=f"more than {max_calls} calls", format=form)
    return Parsed(calls=calls, format=form)
