"""The languages the sandbox runs: one row each. **Add a language here**: one :class:`Language` in
:data:`LANGUAGES` (its fence tags, source file name, compile command, run command); nothing else changes.

A compiled language's program is compiled once per distinct source of a batch, inside a sandbox of its own
with the compiler's limits (:mod:`rewardkit.sandbox.compile`), and its binary runs against the tests in the
test sandbox; Python runs in the harness's own interpreter (no compile command: the harness compiles it to
bytecode and reports a ``SyntaxError`` as ``compile_error``). In a command, ``{source}`` is the source
file's path inside the sandbox and ``{binary}`` the compiled program's; the first word is looked up on the
host's ``PATH`` and must live under ``/usr`` (the only host tree a sandbox sees).

The C++ flags are open-r1's (its Piston fork compiles Codeforces and IOI solutions with
``g++ -std=c++17 -O2 -DONLINE_JUDGE``); C gets the same with ``-std=c11`` and the math library.

>>> by_tag("C++").name, by_tag("cc").name, by_tag("py").name, by_tag("rust")
('cpp', 'cpp', 'python', None)
>>> CPP.compile_argv("/tmp/main.cpp", "/tmp/prog")[:4]
('g++', '-std=c++17', '-O2', '-DONLINE_JUDGE')

Which fenced block of an answer is the program (:func:`pick_block`): the last one in a language of the
table, of the row's language only when the row names one (its untagged blocks are read in it); blocks only
in other languages of the table are ``wrong_language:<name>``, only in languages it lacks
``unsupported_language:<tag>``.

>>> blocks = [("python", "print(1)"), ("cpp", "int main() {}"), ("", "x = 1")]
>>> pick_block(blocks, None)[0].name, pick_block(blocks[:2], C), pick_block(blocks, C)[1]
('cpp', 'wrong_language:cpp', 'x = 1')
>>> pick_block([("rust", "fn main() {}")], CPP), pick_block(blocks[:1], None)[0].name
('unsupported_language:rust', 'python')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["C", "CPP", "LANGUAGES", "PYTHON", "Language", "by_name", "by_tag", "pick_block"]

_TAG = re.compile(r"[A-Za-z_+#][A-Za-z0-9_.+#-]{0,39}")


@dataclass(frozen=True)
class Language:
    """One row of the table.

    Args:
        name: the name reasons and the ``language`` column use (``cpp``).
        tags: the fence tags that name it, lower case (```` ```c++ ````); the name is one of them.
        source: the source file's name in the sandbox's work directory.
        compile: the compile command (``{source}``, ``{binary}`` filled in); ``None``: the harness runs it.
        run: the run command of a compiled program (``{binary}`` filled in).
        pch: whether a precompiled ``bits/stdc++.h`` applies (:mod:`rewardkit.sandbox.pch`).
    """

    name: str
    tags: tuple[str, ...]
    source: str
    compile: tuple[str, ...] | None = None
    run: tuple[str, ...] = ("{binary}",)
    pch: bool = False

    @property
    def compiled(self) -> bool:
        """Whether programs in it are compiled to a binary before they run."""
        return self.compile is not None

    def compile_argv(self, source: str, binary: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The compile command for ``source`` into ``binary``, ``extra`` flags (an include directory) after
        the first word."""
        if self.compile is None:
            raise ValueError(f"{self.name} is not compiled")
        filled = tuple(word.format(source=source, binary=binary) for word in self.compile)
        return (filled[0], *extra, *filled[1:])

    def run_argv(self, binary: str) -> tuple[str, ...]:
        """The run command of the compiled program ``binary``."""
        return tuple(word.format(binary=binary) for word in self.run)

    def flags(self) -> tuple[str, ...]:
        """The compile command's options (what a precompiled header must be built with)."""
        return tuple(w for w in self.compile or () if w.startswith("-") and w not in ("-o", "-lm"))


PYTHON = Language("python", ("python", "py", "python3", "py3"), "main.py")
CPP = Language(
    "cpp",
    ("cpp", "c++", "cc", "cxx", "cpp17", "c++17"),
    "main.cpp",
    ("g++", "-std=c++17", "-O2", "-DONLINE_JUDGE", "{source}", "-o", "{binary}"),
    pch=True,
)
C = Language(
    "c", ("c",), "main.c", ("gcc", "-std=c11", "-O2", "-DONLINE_JUDGE", "{source}", "-o", "{binary}", "-lm")
)

#: every language, by name
LANGUAGES: dict[str, Language] = {language.name: language for language in (PYTHON, CPP, C)}
_TAGS = {tag: language for language in LANGUAGES.values() for tag in language.tags}


def by_tag(tag: str) -> Language | None:
    """The language a fence tag (or a ``language`` column's value) names, any case; ``None``: none."""
    return _TAGS.get(tag.strip().lower())


def by_name(name: str) -> Language:
    """The language called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return LANGUAGES[name]
    except KeyError:
        raise KeyError(f"no language {name!r} (known: {', '.join(LANGUAGES)})") from None


def pick_block(
    blocks: Sequence[tuple[str, str]], wanted: Language | None
) -> tuple[Language, str] | str | None:
    """The program among an answer's fenced blocks ``(tag, code)`` as (language, code), a reason
    (``wrong_language:<name>``, ``unsupported_language:<tag>``), or ``None``: no block to read (only
    untagged ones without a row language, or none; the caller's rules for those apply)."""
    filled = [(tag, code) for tag, code in blocks if code.strip()]
    known = [(language, code) for tag, code in filled if (language := by_tag(tag)) is not None]
    if wanted is not None:
        known = [(language, code) for language, code in known if language == wanted] or known
        untagged = [code for tag, code in filled if not tag]
        if not (known and known[-1][0] == wanted) and untagged:
            return wanted, untagged[-1]
    if known:
        language, code = known[-1]
        return (language, code) if wanted in (None, language) else f"wrong_language:{language.name}"
    others = [tag for tag, _ in filled if tag]
    if others:
        match = _TAG.match(others[-1])
        return f"unsupported_language:{match.group(0) if match else 'unknown'}"
    return None
