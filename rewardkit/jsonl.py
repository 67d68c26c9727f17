"""JSON lines as users hand them over: a file, a gzipped file, or ``-`` for standard input.

The one reader of ``rewardkit score`` and ``rewardkit agreement`` (and of
:func:`rewardkit.agreement.read_labelled`). Each line that is not blank is one row, a JSON object; a line
that is not says which file and line, in the words of someone who wrote the file. Gzip is recognised by its
first two bytes, whatever the file is called (``rows.jsonl.gz``, or ``zcat``'s output piped in as ``-``).
Bytes that are not UTF-8 are read as replacement characters, never refused (model output holds them).

>>> import gzip, pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl.gz"
>>> _ = path.write_bytes(gzip.compress(b'{"completion": "a"}\\n\\n{"completion": "b"}\\n'))
>>> with JsonlReader(path) as rows:
...     [(line, row["completion"]) for line, row in rows]
[(1, 'a'), (3, 'b')]
>>> _ = path.write_bytes(b'{"completion": "a"}\\n["b"]\\n')
>>> read_jsonl(path)
Traceback (most recent call last):
...
rewardkit.jsonl.JsonlError: ...rows.jsonl.gz:2: each line must be a JSON object ({...}), this one is an array
"""

from __future__ import annotations

import io
import json
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, cast

from rewardkit.core import RewardError
from rewardkit.redact import clip

__all__ = ["STDIN", "JsonlError", "JsonlReader", "json_type", "read_jsonl"]

STDIN = "-"  #: the path that means standard input
GZIP_MAGIC = b"\x1f\x8b"


class JsonlError(RewardError):
    """A line of a JSON lines file is not a row: names the file and the line."""

    def __init__(self, name: str, line: int, problem: str) -> None:
        super().__init__(f"{name}:{line}: {problem}")
        self.name, self.line = name, line


def json_type(value: object) -> str:
    """What JSON calls a parsed value's type: ``object``, ``array``, ``string``, ``number``, ``true``...

    >>> json_type([1]), json_type("a"), json_type(1.5), json_type(None), json_type(False)
    ('array', 'string', 'number', 'null', 'false')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else type(value).__name__


class JsonlReader:
    """The rows of ``path`` (``-``: standard input), with their line numbers; opened at once, so a file that
    cannot be read raises :class:`OSError` here, before anything else is done.

    Args:
        path: the file, gzipped or not, or ``-``.
        require: fields every row must have (``("completion",)``); a row without one is a
            :class:`JsonlError` naming the fields it has.

    Attributes:
        name: how messages call the input: the path as given, or ``stdin``.
        size: the bytes of a plain file (for a progress bar); ``None`` for gzip and standard input.
        consumed: the bytes of text read so far.
    """

    def __init__(self, path: str | Path, *, require: Sequence[str] = ()) -> None:
        self.require = tuple(require)
        self.consumed = 0
        self.size: int | None = None
        binary: IO[bytes]
        if str(path) == STDIN:
            self.name = "stdin"
            binary = sys.stdin.buffer
            self._owned = False
            peek = getattr(binary, "peek", None)
            head = peek(2)[:2] if peek is not None else b""
        else:
            self.name = str(path)
            binary = open(path, "rb")  # noqa: SIM115 - closed by close()
            self._owned = True
            head = binary.read(2)
            binary.seek(0)
            if head != GZIP_MAGIC:
                self.size = Path(path).stat().st_size
        self._binary = binary
        stream: IO[bytes] = binary
        if head == GZIP_MAGIC:
            import gzip

            stream = cast(IO[bytes], gzip.GzipFile(fileobj=binary, mode="rb"))
        # utf-8-sig: a byte-order mark (Windows editors write one) is not part of the first row
        self._text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace")

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        number = 0
        try:
            for number, line in enumerate(self._text, start=1):
                self.consumed += len(line.encode("utf-8", "replace"))
                if line.strip():
                    yield number, self._row(number, line)
        except (EOFError, zlib.error) as exc:  # a gzip stream cut short or damaged: the rows read stand
            why = "ends early (a truncated file?)" if isinstance(exc, EOFError) else "is damaged"
            raise JsonlError(self.name, number + 1, f"the gzip stream {why}") from None

    def _row(self, number: int, line: str) -> dict[str, Any]:
        text = line.rstrip("\r\n")
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            at = "at the end of the line" if exc.pos >= len(text.rstrip()) else f"at column {exc.colno}"
            raise JsonlError(self.name, number, f"not JSON ({exc.msg} {at})") from None
        except ValueError as exc:  # a number too long to read
            raise JsonlError(self.name, number, f"not JSON ({clip(str(exc))})") from None
        except RecursionError:
            raise JsonlError(self.name, number, "JSON nested too deep to read") from None
        if not isinstance(row, dict):
            raise JsonlError(
                self.name, number, f"each line must be a JSON object ({{...}}), this one is {_a(row)}"
            )
        missing = [field for field in self.require if field not in row]
        if missing:
            has = clip(", ".join(sorted(row))) or "no field"
            raise JsonlError(
                self.name,
                number,
                f"each line must be a JSON object with a {missing[0]!r} field; this one has: {has}",
            )
        return row

    def close(self) -> None:
        if self._owned:
            self._text.close()
            self._binary.close()  # a GzipFile leaves the file it reads open
        else:
            self._text.detach()  # leave standard input open

    def __enter__(self) -> JsonlReader:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _a(value: object) -> str:
    kind = json_type(value)
    return kind if kind in ("true", "false", "null") else ("an " if kind[0] in "aeiou" else "a ") + kind


def read_jsonl(path: str | Path, *, require: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every row of ``path`` (see :class:`JsonlReader`); :class:`JsonlError` names a bad line."""
    with JsonlReader(path, require=require) as rows:
        return [row for _, row in rows]
