"""A row's JSON Schema, read within bounds and compiled once (the judging step of ``rewardkit.structured``).

Schemas come from data, so nothing in one may cost more than a bounded time or reach outside the process:

- **Size and depth.** A schema is an object or a boolean, or JSON text of one; text is read by
  :func:`rewardkit.jsontext.read_json` (at most ``max_chars`` characters, 100 levels of nesting), an object
  is measured without recursion (:func:`rewardkit.jsontext.check_depth`) and refused over ``max_chars``
  characters of canonical JSON. Compiling is superlinear in the number of ``$ref`` hops: a 10,000-hop chain
  (400 KB) compiles in about 0.2 s, a 100,000-hop one would take 30 s, hence the size cap
  (:data:`MAX_SCHEMA_CHARS`, 200,000; callers may raise it to 1,000,000: about 2 s at worst).
- **No fetching.** The validator is `jsonschema-rs <https://github.com/Stranger6667/jsonschema>`_ built
  with ``offline=True``: a ``$ref`` to anything but the schema itself or the drafts' own meta-schemas
  (bundled) is unresolvable, and the row is ``None`` (``unresolvable_ref``), never fetched.
- **Regular expressions.** ``pattern``, ``patternProperties`` (and so ``additionalProperties``) run on
  fancy-regex: the parts without look-around or back-references run on Rust's ``regex`` crate (linear time,
  no backtracking at all), the rest on a backtracking VM stopped after :data:`BACKTRACK_LIMIT` steps (about
  0.2 ms), and a stopped match counts as no match. A pattern whose compiled program is too large is an
  invalid schema.
- **Cache.** Compiled validators (and compile failures) are kept per distinct schema, draft and format
  setting in one LRU (:data:`CACHE_ITEMS` schemas, :data:`CACHE_CHARS` characters of schema text in all):
  a GRPO group, which shares one schema, compiles it once. Within a batch, the reward keeps what each
  distinct column value came to (:class:`rewardkit.once.OncePerBatch`), so a group's schema is not even
  measured and serialised again for each item.

Drafts: the one a schema's ``$schema`` names (2020-12, 2019-09, 7, 6, 4), else ``default_draft``; another
``$schema`` is ``None`` (``unsupported_draft``). ``format`` is what the draft says (an assertion in 4, 6
and 7, an annotation in 2019-09 and 2020-12) unless ``validate_formats`` says otherwise.

>>> check = compile_schema({"type": "object", "required": ["name"]})
>>> check.first_error({"name": "Ann"}) is None, check.first_error({})
(True, Violation(path='/', keyword='required', message='"name" is a required property'))
>>> compile_schema({"$ref": "https://example.com/s.json"}).reason
'unresolvable_ref'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

import jsonschema_rs

from rewardkit.jsontext import JSONTextError, check_depth, read_json
from rewardkit.lru import LRUCache

__all__ = [
    "BACKTRACK_LIMIT",
    "CACHE_CHARS",
    "CACHE_ITEMS",
    "DRAFTS",
    "MAX_SCHEMA_CHARS",
    "Compiled",
    "Violation",
    "compile_schema",
    "read_schema",
]

MAX_SCHEMA_CHARS = 200_000
#: Backtracking steps a look-around or back-reference pattern may take on one string (~0.2 ms).
BACKTRACK_LIMIT = 10_000
CACHE_ITEMS = 1024
CACHE_CHARS = 32_000_000
MAX_MESSAGE = 200
#: ``default_draft`` values and their validator classes
DRAFTS: dict[str, Any] = {
    "2020-12": jsonschema_rs.Draft202012Validator,
    "2019-09": jsonschema_rs.Draft201909Validator,
    "7": jsonschema_rs.Draft7Validator,
    "6": jsonschema_rs.Draft6Validator,
    "4": jsonschema_rs.Draft4Validator,
}
_PATTERNS = jsonschema_rs.FancyRegexOptions(backtrack_limit=BACKTRACK_LIMIT)


class Violation(NamedTuple):
    """The first place an instance breaks its schema: a JSON Pointer into the instance (``/`` for the
    whole), the keyword that failed, and the validator's message (cut)."""

    path: str
    keyword: str
    message: str


class Compiled(NamedTuple):
    """A compiled schema, or why there is none (``reason``: ``invalid_schema``, ``unresolvable_ref``,
    ``unsupported_draft``; ``detail`` the validator's message, cut)."""

    validator: Any = None
    reason: str | None = None
    detail: str | None = None
    size: int = 1  # characters of schema text, what the cache counts

    def first_error(self, instance: Any) -> Violation | None:
        """``None`` when ``instance`` is valid; else its first violation."""
        if self.validator.is_valid(instance):
            return None
        error = next(self.validator.iter_errors(instance), None)
        if error is None:  # is_valid and iter_errors disagree: never seen; not a pass
            return Violation("/", "unknown", "invalid")
        pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in error.instance_path)
        keyword = str(error.schema_path[-1]) if error.schema_path else "schema"
        return Violation(pointer or "/", keyword, error.message[:MAX_MESSAGE])


_cache: LRUCache[tuple[str, str, bool | None], Compiled] = LRUCache(
    CACHE_ITEMS, max_total=CACHE_CHARS, sizeof=lambda c: c.size
)


def read_schema(raw: Any, max_chars: int = MAX_SCHEMA_CHARS) -> tuple[str | None, str | None]:
    """A schema column's value as canonical JSON text, or ``(None, why)``: ``missing_schema`` (absent or
    empty), ``invalid_schema`` (not JSON, not an object or boolean, too deep) or ``schema_too_large``.

    >>> read_schema('{"type": "string"}'), read_schema({"b": 1, "a": 2})
    (('{"type": "string"}', None), ('{"a":2,"b":1}', None))
    >>> read_schema(None), read_schema("[1]"), read_schema("x" * 300_000)
    ((None, 'missing_schema'), (None, 'invalid_schema'), (None, 'schema_too_large'))
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, "missing_schema"
    if isinstance(raw, str):
        if len(raw) > max_chars:
            return None, "schema_too_large"
        try:
            value = read_json(raw, max_chars=max_chars)
        except JSONTextError:
            return None, "invalid_schema"
        return (raw, None) if isinstance(value, dict | bool) else (None, "invalid_schema")
    if isinstance(raw, bool):
        return json.dumps(raw), None
    if not isinstance(raw, Mapping):
        return None, "invalid_schema"
    try:
        check_depth(raw, what="the schema")
        text = json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (JSONTextError, TypeError, ValueError):  # too deep; keys or values that are no JSON
        return None, "invalid_schema"
    return (text, None) if len(text) <= max_chars else (None, "schema_too_large")


def _why(message: str) -> str:
    if "Unknown meta-schema" in message:
        return "unsupported_draft"
    if "Retrieval is disabled" in message or "does not exist" in message or "registry" in message:
        return "unresolvable_ref"
    return "invalid_schema"


def compile_schema(
    schema: Any, default_draft: str = "2020-12", validate_formats: bool | None = None
) -> Compiled:
    """``schema`` (canonical JSON text from :func:`read_schema`, or a parsed schema) compiled, from the
    cache when it was compiled before; never fetches anything."""
    text = schema if isinstance(schema, str) else json.dumps(schema, sort_keys=True, separators=(",", ":"))
    key = (text, default_draft, validate_formats)
    found = _cache.get(key)
    if found is not None:
        return found
    value = json.loads(text) if isinstance(schema, str) else schema
    # $schema picks the draft; without it, the default one
    names_draft = isinstance(value, dict) and "$schema" in value
    make = jsonschema_rs.validator_for if names_draft else DRAFTS[default_draft]
    try:
        validator = make(value, offline=True, pattern_options=_PATTERNS, validate_formats=validate_formats)
        compiled = Compiled(validator, size=len(text))
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        message = str(exc)
        compiled = Compiled(None, _why(message), message[:MAX_MESSAGE], len(text))
    _cache.put(key, compiled)
    return compiled
