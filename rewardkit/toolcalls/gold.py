"""Reading a row's expected calls and tools (step 2 of :mod:`rewardkit.toolcalls`), within bounds.

**Expected calls** (the ``solution`` column; JSON text or the object), a list of calls in either form, mixed
freely, or one call alone:

- BFCL's possible answer: ``{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]}}``:
  each parameter a list of accepted values, ``""`` among them meaning it may be left out. A whole BFCL row
  (``{"id": ..., "ground_truth": [...]}``) is read too.
- plain expected calls: ``{"name": "get_weather", "arguments": {"city": "Paris"}}`` (``"parameters"`` in
  place of ``"arguments"``, or OpenAI's ``{"type": "function", "function": {...}}``, arguments as JSON text
  too): each value the one accepted value, every parameter given required, no other parameter accepted.

``[]`` is an irrelevance row: no call is expected.

**Tools** (the optional ``tools`` column): OpenAI function schemas (``{"type": "function", "function":
{"name", "parameters": {"type": "object", "properties", "required"}}}``) or BFCL's function list (``{"name",
"parameters": {"type": "dict", ...}}``). They give each function's required parameters, its parameters'
types (JSON Schema's and BFCL's names: ``string``, ``integer``, ``number``/``float``, ``boolean``,
``array``/``tuple`` with ``items``, ``object``/``dict``, ``any``; Java's and JavaScript's names as BFCL maps
them to Python's: ``String``, ``long``, ``double``, ``HashMap``, ``ArrayList``, ``Boolean``, ...; a list of
types is any of them) and the names of the functions that exist.

Bounds: JSON text of at most ``max_chars`` characters, 100 levels of nesting, at most :data:`MAX_CALLS`
expected calls and :data:`MAX_TOOLS` tools; anything else is :class:`GoldError` (the reward's ``None``).

A GRPO batch repeats each row over its group: the reward reads each distinct value of a column once per
batch (:class:`rewardkit.once.OncePerBatch`), every bound still applied to the first read.

>>> read_gold('[{"f": {"x": [1, 2], "y": ["", "a"]}}]')
[GoldCall(name='f', params={'x': [1, 2], 'y': ['', 'a']})]
>>> read_gold({"name": "f", "arguments": '{"x": 1, "d": {"k": "v"}}'})
[GoldCall(name='f', params={'x': [1], 'd': [{'k': ['v']}]})]
>>> tools = read_tools([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
...     "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}])
>>> tools["f"].required, tools["f"].types("x")
(('x',), ('integer',))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewardkit.jsontext import MAX_DEPTH, JSONTextError, check_depth, read_json

__all__ = [
    "GoldCall",
    "GoldError",
    "MAX_CALLS",
    "MAX_TOOLS",
    "Tool",
    "TYPES",
    "read_gold",
    "read_tools",
]

MAX_CALLS = 64  # expected calls a row may hold
MAX_TOOLS = 512  # functions a row may offer

#: a schema's type name -> the Python type BFCL's checker expects (``any`` is a string there)
TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "object": dict,
    "dict": dict,
    "any": str,
    # Java and JavaScript, as BFCL maps them to Python (rewardkit/toolcalls reads the values as JSON/Python)
    "String": str,
    "char": str,
    "Any": str,
    "byte": int,
    "short": int,
    "long": int,
    "Bigint": int,
    "double": float,
    "Boolean": bool,
    "bool": bool,
    "Array": list,
    "ArrayList": list,
    "Queue": list,
    "Stack": list,
    "list": list,
    "HashMap": dict,
    "Hashtable": dict,
}


class GoldError(ValueError):
    """A row's expected calls or tools that do not read (the message says why)."""


@dataclass(frozen=True)
class GoldCall:
    """One expected call: the function's name and, per parameter, the list of accepted values (``""``:
    the parameter may be left out)."""

    name: str
    params: dict[str, list[Any]]

    def optional(self, param: str) -> bool:
        return "" in self.params.get(param, ())


@dataclass(frozen=True)
class Tool:
    """One function a row offers: its parameters' schemas and the required ones."""

    name: str
    properties: dict[str, Any]
    required: tuple[str, ...]

    def types(self, param: str) -> tuple[str, ...]:
        """The type names the schema gives ``param`` (``()``: no type given)."""
        declared = self.properties.get(param, {}).get("type") if self.has(param) else None
        if isinstance(declared, str):
            return (declared,)
        if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
            return tuple(t for t in declared if t != "null") or ("null",)
        return ()

    def item_types(self, param: str) -> tuple[str, ...]:
        items = self.properties.get(param, {}).get("items") if self.has(param) else None
        declared = items.get("type") if isinstance(items, Mapping) else None
        return (declared,) if isinstance(declared, str) else ()

    def has(self, param: str) -> bool:
        return isinstance(self.properties.get(param), Mapping)


def _load(value: Any, what: str, max_chars: int) -> Any:
    if isinstance(value, str):
        try:
            return read_json(value, max_chars=max_chars)
        except JSONTextError as exc:
            raise GoldError(f"{what}: {exc}") from None
    try:
        check_depth(value, MAX_DEPTH, what)
    except JSONTextError as exc:
        raise GoldError(str(exc)) from None
    if hasattr(value, "tolist"):  # numpy arrays from parquet rows
        value = value.tolist()
    return value


def _plain(value: Any) -> list[Any]:
    """A plain expected value as BFCL's accepted values: a dict's values (and a list of dicts') wrapped too,
    as BFCL's possible answers hold them."""
    if isinstance(value, Mapping):
        return [{k: [v] for k, v in value.items()}]
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return [[{k: [v] for k, v in item.items()} for item in value]]
    return [value]


def _one(item: Any) -> GoldCall:
    if isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
        item = item["function"]
    if isinstance(item, Mapping) and "name" in item:
        name = item["name"]
        raw = item.get("arguments", item.get("parameters", {}))
        if isinstance(raw, str):
            raw = _load(raw, "the expected arguments", 1_000_000)
        if not isinstance(name, str) or not name or not isinstance(raw, Mapping):
            raise GoldError("an expected call needs a name and an object of arguments")
        return GoldCall(name, {str(k): _plain(v) for k, v in raw.items()})
    if isinstance(item, Mapping) and len(item) == 1:
        ((name, params),) = item.items()
        if isinstance(params, Mapping) and all(isinstance(v, list) for v in params.values()):
            return GoldCall(str(name), {str(k): list(v) for k, v in params.items()})
    raise GoldError(
        "an expected call is {name: {param: [accepted values]}} (BFCL) or {name, arguments}; got "
        f"{type(item).__name__}"
    )


def read_gold(value: Any, *, max_chars: int = 1_000_000) -> list[GoldCall]:
    """A row's expected calls (``[]``: none expected); :class:`GoldError` when they do not read."""
    value = _load(value, "the expected calls", max_chars)
    if isinstance(value, Mapping) and "ground_truth" in value:
        value = value["ground_truth"]
    items = value if isinstance(value, list | tuple) else [value]
    if len(items) > MAX_CALLS:
        raise GoldError(f"{len(items)} expected calls; the limit is {MAX_CALLS}")
    return [_one(item) for item in items]


def read_tools(value: Any, *, max_chars: int = 1_000_000) -> dict[str, Tool]:
    """A row's functions by name; :class:`GoldError` when they do not read."""
    value = _load(value, "the tools", max_chars)
    items = value if isinstance(value, list | tuple) else [value]
    if len(items) > MAX_TOOLS:
        raise GoldError(f"{len(items)} tools; the limit is {MAX_TOOLS}")
    tools: dict[str, Tool] = {}
    for item in items:
        if isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
            item = item["function"]
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise GoldError("a tool is {name, parameters} or {type: function, function: {...}}")
        params = item.get("parameters") or {}
        properties = params.get("properties", {}) if isinstance(params, Mapping) else None
        required = params.get("required", []) if isinstance(params, Mapping) else None
        if not isinstance(properties, Mapping) or not isinstance(required, list | tuple):
            raise GoldError(f"tool {item['name'][:80]!r}: parameters need properties and a required list")
        tools[item["name"]] = Tool(item["name"], dict(properties), tuple(str(r) for r in required))
    return tools
