"""A row's gold answers read within bounds: one text, a list of them, a JSON text of a list, or the
mappings the public QA datasets keep them in.

Accepted (what :func:`read_golds` turns into a tuple of texts):

- a text: one gold (``"Paris"``); a text that is a JSON list or object (``'["Paris", "Paris, France"]'``,
  as parquet and JSONL exports keep lists) is read as one, by :func:`rewardkit.jsontext.read_json`;
- a list or tuple (or a numpy array: veRL's parquet rows) of texts; whole numbers and finite decimals are
  read as their text (``1995``);
- a mapping: Search-R1's and veRL's ``{"target": [...]}``, SQuAD's ``{"text": [...], "answer_start": ...}``,
  TriviaQA's ``{"value": ..., "aliases": [...]}``, or ``{"answers": [...]}``.

Bounds: at most :data:`MAX_GOLDS` golds of at most :data:`MAX_GOLD_CHARS` characters each, JSON text of at
most :data:`MAX_JSON_CHARS` characters nested at most two levels. Beyond them, or anything else (a bool, a
nested list, a mapping with none of those keys), the row has no readable gold: ``GoldError`` names why.

>>> read_golds('["Paris", "Paris, France"]'), read_golds({"target": ["Paris"]}), read_golds(1995)
(('Paris', 'Paris, France'), ('Paris',), ('1995',))
>>> read_golds("[citation needed]")  # not JSON: a text
('[citation needed]',)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit.jsontext import JSONTextError, read_json

__all__ = ["MAX_GOLDS", "MAX_GOLD_CHARS", "MAX_JSON_CHARS", "GoldError", "read_golds"]

#: golds a row may have (TriviaQA's alias lists run to a few dozen; a few hundred at most)
MAX_GOLDS = 1000
#: characters a gold may have (short answers: a name, a date, a phrase)
MAX_GOLD_CHARS = 1000
#: characters of a JSON text of golds
MAX_JSON_CHARS = 200_000
_KEYS = ("target", "text", "answers", "aliases")


class GoldError(ValueError):
    """A row's golds cannot be read (the message says why: too many, too long, not text)."""


def read_golds(value: Any) -> tuple[str, ...]:
    """The row's golds as texts, in order; ``()`` when it has none (``None``, an empty text or list).

    Raises:
        GoldError: the value is none of the accepted forms, or over a bound.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{") and len(value) <= MAX_JSON_CHARS:
            try:
                value = read_json(value, max_chars=MAX_JSON_CHARS, max_depth=2)
            except JSONTextError as exc:
                if "nested" in str(exc):  # JSON of lists in lists: no shape golds come in
                    raise GoldError(f"a gold must be text, got {exc}") from None
                return _texts([value])  # not JSON: the text is the gold
            if isinstance(value, str):
                return _texts([value])
        else:
            return _texts([value])
    if isinstance(value, Mapping):
        return _texts(_from_mapping(value))
    if hasattr(value, "tolist") and not isinstance(value, list | tuple):
        value = value.tolist()  # numpy arrays (veRL's parquet rows), numpy scalars
    if isinstance(value, list | tuple):
        return _texts(value)
    return _texts([value])


def _from_mapping(value: Mapping[Any, Any]) -> list[Any]:
    for key in _KEYS:
        if key in value:
            found = value[key]
            if hasattr(found, "tolist") and not isinstance(found, list | tuple):
                found = found.tolist()
            items = list(found) if isinstance(found, list | tuple) else [found]
            if key == "aliases" and "value" in value:  # TriviaQA: the answer's value, then its aliases
                items.insert(0, value["value"])
            return items
    if "value" in value:
        return [value["value"]]
    raise GoldError(f"a gold mapping needs one of the keys {', '.join(_KEYS)} or value")


def _texts(items: Sequence[Any]) -> tuple[str, ...]:
    if len(items) > MAX_GOLDS:
        raise GoldError(f"{len(items)} golds; the limit is {MAX_GOLDS}")
    out = []
    for item in items:
        if isinstance(item, bool) or item is None:
            raise GoldError(f"a gold must be text, got {type(item).__name__}")
        if isinstance(item, int):
            if item.bit_length() > 3000:  # over the interpreter's 4,300 digits of int-to-text
                raise GoldError("a gold must be text, got a number too long to be an answer")
            item = str(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise GoldError("a gold must be text, got a non-finite number")
            item = str(int(item)) if item.is_integer() else repr(item)
        elif not isinstance(item, str):
            raise GoldError(f"a gold must be text, got {type(item).__name__}")
        if len(item) > MAX_GOLD_CHARS:
            raise GoldError(f"a gold of {len(item)} characters; the limit is {MAX_GOLD_CHARS}")
        out.append(item)
    return tuple(out)
