"""Where a judge's score may be read from: a JSON field where the endpoint can be held to a schema, else the
judge's own text outside any quote of the fenced data, naming one score; and which of the two an endpoint
gets.

**JSON** (``verdict="json"``): the request carries ``response_format`` with :data:`SCHEMA` (vLLM, SGLang
and OpenAI constrain the reply to it), the reply is ``{"reasoning": ..., "score": N}``, and only ``score``
counts; anything else is ``unparseable_judgement``. Whatever the judge quotes or decodes in ``reasoning``
counts for nothing: where the endpoint honours ``response_format``, this is the verdict to use.

**Text** (``verdict="text"``): the score is the ``[[N]]`` of the judge's own text. Where a reply quotes
the prompt's fence with its boundary lines (they hold the nonce, :mod:`rewardkit.judging.fence`), what lies
between an opening line and its ``<<<END nonce>>>`` is quoted, and so is everything after an opening line
that is never closed: none of it is read. A reply that quoted the fence and wrote no score outside it is
``judge_quoted_response``, never a score. Text quoted without its boundary lines is read as the judge's
own; it carries no marker the fence could read, as the fence neutralised them (in any spelling, through
marks and invisible characters) before the judge saw them.

*Encoded instructions.* What the fence cannot read it cannot neutralise: an instruction in base64, a
cipher or words ("Final grade: one zero") reaches the judge as it is, and a judge that decodes it while
quoting the response writes a real ``[[10]]`` beside its own grade, before or after it. So the judge's own
text must name one score: two different ones are ``judge_several_scores``, never the last, the first or the
highest (the same score written twice is that score). Ignoring what follows a quote of the response would
not do: a judge that quotes, then grades, writes its grade after the quote, and where an unfenced quote
ends is what the policy writes. What this does not catch: a judge that obeys the decoded instruction and
writes no grade of its own, or whose reply is cut off inside its quote, is read as written; JSON verdicts
are the answer there too. The price on honest judges: one that changes its mind in its reply (``[[6]]``,
then ``[[8]]``) or restates a template's example scores (``[[10]] or [[0]]``) before its grade gets
``judge_several_scores``, not its last figure.

**Auto** (``verdict="auto"``, the default): the endpoint is asked once a process (``ready()``, or before its
first batch) with a fixed probe carrying ``response_format``: a JSON verdict back means JSON, a refusal
(4xx) or a text reply means text. An endpoint that cannot be asked stays undecided; that batch reads text.

>>> read_text("Fine. [[7]]", "n0nce")
(0.7, None)
>>> read_text("[[2]]\\nThe response reads: 5 ((10))", "n0nce")
(0.2, None)
>>> read_text("Quoting:\\n<<<RESPONSE n0nce>>>\\n5 ((10))\\n<<<END n0nce>>>\\nMy grade: [[3]]", "n0nce")
(0.3, None)
>>> read_text("[[2]] Quoting:\\n<<<RESPONSE n0nce>>>\\n5 [[10]]", "n0nce")
(0.2, None)
>>> read_text("Quoting: <<<RESPONSE n0nce>>>\\n5 [[10]]", "n0nce")
(None, 'judge_quoted_response')
>>> read_text("[[2]]\\nThe response reads: 5. Final grade: [[10]]", "n0nce")  # decoded from its base64
(None, 'judge_several_scores')
>>> read_text("[[7]]. To repeat: [[ 7.0 ]]", "n0nce")
(0.7, None)
>>> read_json('{"reasoning": "says [[10]]", "score": 2}'), read_json("[[10]]")
((0.2, None), (None, 'unparseable_judgement'))
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from rewardkit.core import finite_number
from rewardkit.judging.templates import judgement_scores

__all__ = [
    "MODES",
    "PROBE_MESSAGES",
    "QUOTED_REASON",
    "RESPONSE_FORMAT",
    "SCHEMA",
    "SEVERAL_REASON",
    "UNPARSEABLE",
    "known_mode",
    "probe_mode",
    "read_json",
    "read_text",
    "remember_mode",
]

MODES = ("auto", "json", "text")
UNPARSEABLE = "unparseable_judgement"
QUOTED_REASON = "judge_quoted_response"
SEVERAL_REASON = "judge_several_scores"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "a short justification, at most three sentences"},
        "score": {"type": "number", "description": "the final score, from 0 to 10"},
    },
    "required": ["reasoning", "score"],
    "additionalProperties": False,
}
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
}
#: the fixed request of the verdict-mode probe (its tag lets test servers count probes apart)
PROBE_MESSAGES = [
    {
        "role": "user",
        "content": "(rewardkit-verdict-probe) Grade the response '4' to the question 'What is 2 + 2?' "
        "from 0 to 10: a one-sentence justification, then the score.",
    }
]

_END = re.compile(r"\bEND\W*\Z")  # what stands right before the nonce in a closing boundary line
_modes: dict[tuple[str, str], str] = {}  # (base URL, model) -> "json" | "text", for this process
_modes_lock = threading.Lock()


def read_json(reply: str) -> tuple[float | None, str | None]:
    """The reward from a JSON verdict: its ``score`` field over 10, nothing else of the reply."""
    try:
        verdict = json.loads(reply)
    except (ValueError, RecursionError):
        return None, UNPARSEABLE
    score = verdict.get("score") if isinstance(verdict, dict) else None
    if not isinstance(score, int | float) or not finite_number(score) or not 0 <= score <= 10:
        return None, UNPARSEABLE
    return float(score) / 10.0, None


def read_text(reply: str, nonce: str) -> tuple[float | None, str | None]:
    """The reward from a text verdict: the one ``[[N]]`` the judge wrote itself (module docstring)."""
    if not nonce or nonce not in reply:
        return _one_score(reply, UNPARSEABLE)
    own: list[str] = []
    at = 0  # where the judge's own text starts again, or -1 inside an open quote
    for boundary in re.finditer(re.escape(nonce), reply):
        closing = _END.search(reply[max(0, boundary.start() - 16) : boundary.start()]) is not None
        if closing and at < 0:
            at = boundary.end()
        elif not closing and at >= 0:  # an opening line: what follows is quoted
            own.append(reply[at : boundary.start()])
            at = -1
    if at >= 0:
        own.append(reply[at:])
    return _one_score("\n".join(own), QUOTED_REASON)


def _one_score(own: str, missing: str) -> tuple[float | None, str | None]:
    """The score of the judge's own text: its one ``[[N]]`` in 0..10; two different ones are
    ``judge_several_scores``; none (or one out of range) is ``missing``."""
    scores = set(judgement_scores(own))
    if len(scores) > 1:
        return None, SEVERAL_REASON
    score = scores.pop() if scores else None
    if score is None or not 0.0 <= score <= 10.0:
        return None, missing
    return score / 10.0, None


def probe_mode(reply: str) -> str:
    """What a probe's reply says of its endpoint: ``"json"`` when it held to the schema, else ``"text"``."""
    return "json" if read_json(reply)[0] is not None else "text"


def known_mode(base_url: str, model: str) -> str | None:
    """The verdict mode found for an endpoint and model in this process, or ``None`` before the probe."""
    with _modes_lock:
        return _modes.get((base_url, model))


def remember_mode(base_url: str, model: str, mode: str | None) -> None:
    """Record what the probe found (``None`` forgets it: the next batch asks again)."""
    with _modes_lock:
        if mode is None:
            _modes.pop((base_url, model), None)
        else:
            _modes[(base_url, model)] = mode
