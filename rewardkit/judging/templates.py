"""Judge prompts: the default template, what a template may hold, and reading a ``[[N]]`` score.

The values of a template's placeholders go into the prompt fenced (:mod:`rewardkit.judging.fence`); where in
a reply the score may be read from is :mod:`rewardkit.judging.verdict`'s rule.
"""

from __future__ import annotations

import re
import string

from rewardkit.redact import shown

__all__ = [
    "DEFAULT_TEMPLATE",
    "MAX_CALLER_TEMPLATE_CHARS",
    "check_inline_template",
    "judgement_scores",
    "parse_judgement",
    "template_fields",
]

DEFAULT_TEMPLATE = """You are grading a response to a question.
Judge correctness first, then completeness and clarity.

[Question]
{question}

[Reference answer]
{solution}

[Response]
{completion}

Write a short justification (at most three sentences),
then give the final score from 0 to 10 in the form [[N]] on the last line."""

# ASCII digits and spaces only: a fullwidth or Arabic-Indic "[[10]]" is not the judge's own verdict
_SCORE = re.compile(r"\[\[[ \t]*(-?[0-9]+(?:\.[0-9]+)?)[ \t]*\]\]")
MAX_CALLER_TEMPLATE_CHARS = 20_000


def template_fields(template: str) -> frozenset[str]:
    """The placeholders of a template; each must be a plain ``{name}`` (no attribute or index access, no
    format spec or conversion) and appear once (a prompt holds each value once), else ``ValueError``.

    >>> sorted(template_fields("Q: {question} A: {completion} ({{literal}})"))
    ['completion', 'question']
    >>> template_fields("{completion:>20000000}")
    Traceback (most recent call last):
    ...
    ValueError: template placeholders must be plain {name}; got '{completion:>20000000}'
    >>> template_fields("{completion} {completion}")
    Traceback (most recent call last):
    ...
    ValueError: template placeholder '{completion}' appears more than once; each may appear once
    """
    fields = set()
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            field = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(f"template placeholders must be plain {{name}}; got {shown('{' + field + '}')}")
        if name in fields:
            raise ValueError(
                f"template placeholder {shown('{' + name + '}')} appears more than once; each may appear once"
            )
        fields.add(name)
    return frozenset(fields)


def check_inline_template(template: object) -> None:
    """What a remote caller's template must be: an inline string (never a file name) of at most
    ``MAX_CALLER_TEMPLATE_CHARS`` with plain placeholders, each once, including ``{completion}``."""
    if not isinstance(template, str):
        raise ValueError("must be a string holding the template itself")
    if len(template) > MAX_CALLER_TEMPLATE_CHARS:
        raise ValueError(f"is {len(template)} characters; at most {MAX_CALLER_TEMPLATE_CHARS}")
    if "completion" not in template_fields(template):
        raise ValueError(
            "must be the template text itself, containing {completion} (file names are not read)"
        )


def judgement_scores(reply: str) -> list[float]:
    """Every ``[[N]]`` of a text (ASCII digits), in order, as written (0..10 or not).

    >>> judgement_scores("[[4]] at first; then [[ 8.5 ]], [[11]] and [[١٠]]")
    [4.0, 8.5, 11.0]
    """
    return [float(match) for match in _SCORE.findall(reply or "")]


def parse_judgement(reply: str) -> float | None:
    """The reward in [0, 1] from the last ``[[N]]`` of a text (ASCII digits), or ``None`` when there is
    none in 0..10. Which part of a judge's reply may be read, and what several scores there mean, is
    :func:`rewardkit.judging.verdict.read_text`.

    >>> parse_judgement("Good, but [[4]] was my first thought. Final: [[8.5]]")
    0.85
    >>> parse_judgement("no score here") is None, parse_judgement("[[11]]") is None
    (True, True)
    """
    scores = judgement_scores(reply)
    if not scores:
        return None
    return scores[-1] / 10.0 if 0.0 <= scores[-1] <= 10.0 else None
