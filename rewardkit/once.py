"""A column value read once per batch: a GRPO group repeats its prompt's row over all its completions.

:class:`OncePerBatch` applies a reward's read (a gold's, a schema's) once per distinct value of a batch's
column: the item just before by identity first (a group's rows are often one object), then by
:func:`value_key`, which is equal for two values exactly when they read alike. Make one per batch and
never keep it: it holds what each value came to.

>>> calls = []
>>> once = OncePerBatch(lambda v: calls.append(v) or len(v))
>>> [once(v) for v in ("ab", "ab", [1], [1], [1.0])], len(calls)
([2, 2, 1, 1, 1], 3)
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["OncePerBatch", "value_key"]

T = TypeVar("T")
_NOTHING: Any = object()


def value_key(value: Any) -> Any:
    """A key equal for two column values exactly when they read alike: a text itself, else the value's
    pickle (type and content, exact: ``1``, ``1.0`` and ``True`` differ, as do a list and a tuple);
    ``None`` for a value that does not pickle (it is read on its own).

    >>> value_key("[]"), value_key([1]) == value_key([1]), value_key([1]) == value_key([1.0])
    ('[]', True, False)
    """
    if type(value) is str:
        return value
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - unpicklable, too deep, ...: not shared, read as it is
        return None


class OncePerBatch(Generic[T]):
    """``read`` applied once per distinct value within one batch.

    What ``read`` returns is kept, and so is an exception of a type in ``kept`` (a reader's own "this value
    is bad": raised anew, with its arguments, for each equal value); any other exception is not kept.

    >>> class Bad(ValueError): ...
    >>> def read(v):
    ...     if not v:
    ...         raise Bad("empty")
    ...     return v
    >>> once = OncePerBatch(read, kept=(Bad,))
    >>> for v in ("", ""):
    ...     try:
    ...         once(v)
    ...     except Bad as exc:
    ...         print(exc)
    empty
    empty
    """

    def __init__(self, read: Callable[[Any], T], kept: tuple[type[Exception], ...] = ()) -> None:
        self._read, self._kept = read, kept
        self._seen: dict[Any, Any] = {}
        self._last: Any = _NOTHING
        self._last_out: Any = None

    def __call__(self, value: Any) -> T:
        if value is self._last:
            out = self._last_out
        else:
            key = value_key(value)
            if key is None:
                out = self._outcome(value)
            else:
                out = self._seen.get(key, _NOTHING)
                if out is _NOTHING:
                    out = self._seen[key] = self._outcome(value)
            self._last, self._last_out = value, out
        if self._kept and isinstance(out, self._kept):
            raise type(out)(*out.args) from None
        return out  # type: ignore[no-any-return]

    def _outcome(self, value: Any) -> Any:
        if not self._kept:
            return self._read(value)
        try:
            return self._read(value)
        except self._kept as exc:
            return exc
