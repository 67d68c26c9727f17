"""Which program a completion holds, and in which language: the code reward's reading, apart from its running.

The rules are the code reward's (:mod:`rewardkit.rewards.code`'s docstring): the last fenced block after the
reasoning in a language of the sandbox's table (:mod:`rewardkit.sandbox.languages`), of the row's language
only when the row names one; else Python's rules (Python-tagged blocks, then untagged ones, then an
unfenced answer that is Python code), with a HumanEval prompt read before the answer.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence

from rewardkit.extract.segment import final_text
from rewardkit.sandbox.languages import PYTHON, Language, pick_block
from rewardkit.sandbox.tally import TYPE_NAME as _TYPE

__all__ = ["code_blocks", "extract_program", "is_code", "read_program", "read_source"]

_PYTHON_TAGS = ("python", "py", "python3", "py3")
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)")
MAX_PARSED = 200_000  # characters of an unfenced answer or a prompt read as Python (longer: not read)
_DEFINES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """The closed fenced code blocks of ``text`` as (language tag, lower case; code), in order. One pass
    over the lines; a block left open at the end (a truncated completion) is not a block.

    >>> code_blocks("Here:\\n```Python\\nprint(1)\\n```\\nand\\n~~~\\nx = 2\\n~~~\\n```cpp\\nint")
    [('python', 'print(1)'), ('', 'x = 2')]
    """
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    language, body = "", list[str]()
    for line in text.split("\n"):
        if fence is None:
            match = _FENCE.match(line)
            if match:
                fence, language, body = match.group(1), match.group(2).lower(), []
        elif line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            blocks.append((language, "\n".join(body)))
            fence = None
        else:
            body.append(line)
    return blocks


def _parse(text: str) -> list[ast.stmt] | None:
    """The statements of ``text`` (parsed, never run), or ``None`` when it is not Python or too long."""
    if len(text) > MAX_PARSED:
        return None
    try:
        return ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _does_something(statements: Sequence[ast.stmt]) -> bool:
    """A statement other than a bare expression, or a bare expression that calls (``main()``)."""
    return any(
        not isinstance(s, ast.Expr) or any(isinstance(n, ast.Call) for n in ast.walk(s)) for s in statements
    )


def is_code(text: str) -> bool:
    """Whether an answer without a fence is a program: it parses as Python and holds a statement that is
    not a bare expression (an assignment, a ``def``, an ``import``, a loop, a call...). Prose does not
    parse; a number, a name, a string or an expression alone (``5``, ``YES``, ``a + b``) is an answer, not
    a program; nor is an empty text.

    >>> [is_code(t) for t in ("print(int(input()) * 2)", "def f(x):\\n    return 2 * x", "x = 1")]
    [True, True, True]
    >>> [is_code(t) for t in ("The answer is 5.", "5", "YES", "a + b", "", "'print(1)'", "\\n  ")]
    [False, False, False, False, False, False, False]
    """
    statements = _parse(text)
    return statements is not None and _does_something(statements)


@functools.lru_cache(maxsize=256)
def _prompt_code(prompt: str, entry_point: str | None) -> str | None:
    """The prompt, ending in a newline, when it is in HumanEval's form: Python of imports, assignments,
    classes and functions (one of them ``entry_point``, when known) and docstrings, nothing that runs."""
    statements = _parse(prompt)
    if not statements or not all(
        isinstance(s, _DEFINES) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in statements
    ):
        return None
    names = {s.name for s in statements if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    if not names or (entry_point is not None and entry_point not in names):
        return None
    return prompt if prompt.endswith("\n") else prompt + "\n"


def _with_prompt(code: str, prompt: str) -> tuple[str, str] | None:
    """``code`` read with a HumanEval prompt: (program, how), or ``None`` when it is no program."""
    body = code.lstrip("\n")
    if body[:1] in (" ", "\t"):  # an indented body: it continues the prompt's function
        joined = _parse(prompt + body)
        lines = prompt.count("\n")
        added = [s for s in ast.walk(ast.Module(joined or [], [])) if isinstance(s, ast.stmt)]
        if joined is None or not _does_something([s for s in added if s.lineno > lines]):
            return None
        return prompt + body, "the prompt's function continued"
    statements = _parse(code)
    if statements is None or not _does_something(statements):
        return None
    if any(isinstance(s, ast.ImportFrom) and s.module == "__future__" for s in statements):
        return code, "as written (its __future__ import must come first)"
    return prompt + "\n" + code, "after the prompt's code"


def read_program(completion: str, prompt: str | None = None) -> tuple[str | None, str]:
    """(program, how it was read) or (``None``, reason): see the module's docstring. ``prompt``: the
    row's prompt in HumanEval's form, ending in a newline, or ``None``."""
    final = final_text(completion)
    blocks = code_blocks(final) if final is not None else []
    python = [text for language, text in blocks if language in _PYTHON_TAGS and text.strip()]
    fenced = python or [text for language, text in blocks if language == "" and text.strip()]
    if not fenced:
        others = [_TYPE.match(language) for language, text in blocks if text.strip()]
        if others:
            tag = others[-1]
            return None, f"unsupported_language:{tag.group(0) if tag else 'unknown'}"
    code = fenced[-1] if fenced else final or ""
    if prompt is not None:
        read = _with_prompt(code, prompt)
        if read is not None:
            return read
    if fenced:
        return code, "fenced"
    return (code, "unfenced") if is_code(code) else (None, "no_code")


def extract_program(completion: str, prompt: str | None = None) -> tuple[str | None, str | None]:
    """(program, None), or (None, reason): ``no_code`` or ``unsupported_language:<tag>``.

    >>> extract_program("<think>```python\\nprint(0)\\n```</think>\\n```python\\nprint(1)\\n```")
    ('print(1)', None)
    >>> extract_program("```rust\\nfn main() {}\\n```"), extract_program("<think>```python\\nx\\n```")
    ((None, 'unsupported_language:rust'), (None, 'no_code'))
    >>> extract_program("<think>hm</think>n = int(input())\\nprint(n * 2)"), extract_program("It is 5.")
    (('n = int(input())\\nprint(n * 2)', None), (None, 'no_code'))
    >>> extract_program("    return x * 2", prompt="def double(x):\\n    'Twice x.'\\n")
    ("def double(x):\\n    'Twice x.'\\n    return x * 2", None)
    """
    program, how = read_program(completion, prompt)
    return (program, None) if program is not None else (None, how)


def read_source(
    completion: str, prompt: str | None = None, language: Language | None = None
) -> tuple[str | None, str, Language]:
    """(program, how, its language) or (``None``, reason, language): the last fenced block in a language of
    the table (:func:`rewardkit.sandbox.languages.pick_block`: the row's ``language`` only, when it names
    one, its untagged blocks read in it), else :func:`read_program`'s Python rules.

    >>> program, how, language = read_source("```c++\\nint main() {}\\n```")
    >>> program, how, language.name
    ('int main() {}', 'fenced', 'cpp')
    >>> read_source("```cpp\\nint main() {}\\n```", None, PYTHON)[1], read_source("5", None, PYTHON)[1]
    ('wrong_language:cpp', 'no_code')
    """
    final = final_text(completion)
    picked = pick_block(code_blocks(final) if final is not None else [], language)
    if isinstance(picked, str):
        return None, picked, language or PYTHON
    if picked is not None and picked[0].compiled:
        return picked[1], "fenced", picked[0]
    if language is not None and language.compiled:
        return None, "no_code", language  # an answer without a fence is read as Python only
    return (*read_program(completion, prompt), PYTHON)
