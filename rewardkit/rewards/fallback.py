r"""Math, then a judge where the rule cannot decide (``math_or_judge``): NeMo-Gym's rule-then-judge
verification, for TinyV's finding (arXiv 2505.14625) that rule verifiers miss many correct answers.

The rule verifier (``rule``, by default ``math``) scores every item. An item it cannot decide goes to the
judge (``judge``, by default ``llm_judge``), which is asked one question, with this reward's ``template``:
is the response's final answer equivalent to the reference? It answers ``[[10]]`` (yes) or ``[[0]]`` (no),
and a judge score of ``threshold`` (0.5) or more is right. Undecided (:data:`UNDECIDED`, by the rule's
reason; a ``verify_error:<type>`` counts as ``verify_error``):

- ``no_answer``, ``unparseable_answer``: no final answer the rule can read, in a completion with text;
- ``gold_unparseable``, ``gold_too_long``: a gold the rule cannot read;
- ``timeout``, ``worker_crashed``, ``memory_limit``, ``verify_error``: the comparison never finished;
- ``text_gold``: a gold in words (``Yes``, ``decrease``, ``Evelyn``; :func:`text_gold`) that the rule did
  not find equal: its "wrong" is no verdict on prose;
- ``text_answer``: an answer the rule read as words it cannot compare with a gold in math (``three point
  five``, ``two thirds``, ``a baker's dozen``; a whole number in words, ``twelve``, ``twenty-one``, is read
  as the number by the rule itself, :mod:`rewardkit.extract.words`) and found unequal.

Decided, and never sent to the judge: every verdict with no reason, and the reasons a judge should not
overrule: ``unclosed_think`` (reasoning that never ended: paying it would pay truncation), the guards
(``answer_too_long``, ``huge_power``, ...: answers built to stall a verifier), ``empty_answer``,
``several_choices`` (listing the options is no answer), ``not_a_choice``, ``missing_solution``,
``invalid_gold`` (broken text or nothing but spacing: no reference to judge by).

Per item, the reason says which path decided: the rule's own reason (``None`` for a normal verdict), or
``judged:<the rule's reason>`` (``judged:no_answer``, ``judged:text_gold``); where the judge gave no score for
an item (a failed call, no ``[[N]]``), the rule's value stands with ``judge_failed:<the rule's reason>``.
A judged item's ``details`` hold the rule's value and details and the judge's score, reason and reply. A
judge that no call reaches raises, as the judge does (:class:`~rewardkit.rewards.judge.JudgeUnavailableError`,
a 503 in the service). Only the undecided items are sent, each as the last ``max_judge_chars`` characters
of its text (where final answers are), with the gold answer the rule read as the reference; how many items
took which path, in this process, is in ``stats()`` (``fallback_items``, ``fallback_undecided``,
``fallback_judged``, ``fallback_judge_failed``).

The judge is required: without its settings (``REWARDKIT_JUDGE_BASE_URL``, ``REWARDKIT_JUDGE_MODEL``, the
key's variable) construction fails with the judge's own error, naming the missing setting, and a service
lists this reward as unavailable. The rule's values are read as right at 1.0 or more (as ``cosine`` reads
its accuracy reward), and this reward scores ``correct`` / ``wrong``: set DAPO-style values here, not on the
rule. ``template`` replaces the prompt of an ``llm_judge`` judge (a template in the judge's spec is not
used); another judge reward is called as it is, with the same columns.

With a judge configured, ``rewardkit.get("math_or_judge").score_detailed(["so \\boxed{4}", "It is
four."], solution=["4", "4"])`` calls the judge once, for the second item: reasons
``[None, "judged:no_answer"]``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import (
    Completion,
    Explained,
    Reward,
    Scored,
    binary_values,
    check_deadline,
    completion_text,
    finite_number,
    number_error,
    revalue,
)
from rewardkit.extract import gold_answer
from rewardkit.extract.words import number_value
from rewardkit.judging.templates import check_inline_template
from rewardkit.redact import redact_secrets, shown
from rewardkit.registry import register
from rewardkit.rewards._composed import inner_name, inner_reward
from rewardkit.rewards.judge import QUESTION_COLUMNS, LLMJudge
from rewardkit.spec import CallerParam

__all__ = ["UNDECIDED", "VERIFY_TEMPLATE", "MathOrJudge", "text_gold", "undecided_reason"]

#: the rule's reasons that leave an item to the judge (see the module docstring)
UNDECIDED = (
    "no_answer",
    "unparseable_answer",
    "gold_unparseable",
    "gold_too_long",
    "timeout",
    "worker_crashed",
    "memory_limit",
    "verify_error",
    "text_gold",
    "text_answer",
)

VERIFY_TEMPLATE = """Does the response below reach the same final answer as the reference answer?

Find the final answer the response states and compare it with the reference: equivalent means the same
value, expression, set, interval, choice or statement, however it is written (1/2, 0.5 and \\frac{{1}}{{2}}
are the same; a set's order does not matter; a unit may be left out when the value is the same). Judge the
final answer only, not the reasoning. No final answer, or several different ones, is not equivalent.

Question: {question}

Reference answer: {solution}

Response: {completion}

Write one short sentence, then the score: 10 if the final answer is equivalent, 0 if it is not, as [[10]]
or [[0]] on the last line."""

MISSING_QUESTION = "(not given)"  # what the judge's prompt shows when the batch has no question column
MAX_REASONS = 32  # entries of ``undecided``
_REASON = re.compile(r"[a-z][a-z_]{0,63}")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{([^{}]*)\}")
_WORDS = re.compile(r"[A-Za-z][A-Za-z ,.'\-]*")
_COUNTS = {"items": 0, "undecided": 0, "judged": 0, "judge_failed": 0}  # this process's, every instance
_counts_lock = threading.Lock()


def text_gold(gold: str) -> bool:
    r"""Whether a gold is words rather than math: letters, spaces and ``, . ' -`` only (inside ``$`` or a
    ``\text{}`` too), with a word of two letters or more. A lone letter is a choice, not words.

    >>> [text_gold(g) for g in ("Yes", "\\text{decrease}", "sample A", "Evelyn", "QuadrantI")]
    [True, True, True, True, True]
    >>> [text_gold(g) for g in ("C", "x+1", "\\pi", "12 cm", "n", "(2, 3)", "k + p + s")]
    [False, False, False, False, False, False, False]
    """
    text = _WRAPPER.sub(r"\1", gold).strip().strip("$").strip().rstrip(".")
    return bool(_WORDS.fullmatch(text)) and re.search(r"[A-Za-z]{2}", text) is not None


def undecided_reason(
    reason: str | None,
    value: float | None,
    gold: str | None,
    text: str | None,
    undecided: Sequence[str] = UNDECIDED,
    answer: object = None,
) -> str | None:
    """Why the judge decides an item the rule scored ``value`` with ``reason``: the rule's reason when its
    name (before a ``:``) is ``undecided``, ``"text_gold"`` for a normal "wrong" on a gold in words,
    ``"text_answer"`` for one on an ``answer`` (what the rule read) in words that are no whole number;
    ``None`` when the rule decided, or the completion has no text.

    >>> undecided_reason("no_answer", 0.0, "4", "It is four."), undecided_reason("no_answer", 0.0, "4", " ")
    ('no_answer', None)
    >>> [undecided_reason(r, 0.0, "4", "so 4") for r in ("verify_error:TypeError", "unclosed_think")]
    ['verify_error:TypeError', None]
    >>> undecided_reason(None, 0.0, "No", "The answer is yes."), undecided_reason(None, 1.0, "No", "No.")
    ('text_gold', None)
    >>> [undecided_reason(None, 0.0, "12", "...", answer=a) for a in ("two thirds", "eleven", "11")]
    ['text_answer', None, None]
    """
    if text is None or not text.strip():
        return None
    if reason is not None:
        return reason if reason.split(":", 1)[0] in undecided else None
    right = value is not None and value >= 1.0
    if right or gold is None:
        return None
    if text_gold(gold):
        return "text_gold" if "text_gold" in undecided else None
    words = isinstance(answer, str) and text_gold(answer) and number_value(answer) is None
    return "text_answer" if words and "text_answer" in undecided else None


def _caller(reward: Reward, column: str) -> str:
    """``reward``'s column ``column`` under the caller's name (after its ``columns=`` map)."""
    rename = reward._column_map or {}
    return rename.get(column, column)


def _count(**grown: int) -> None:
    with _counts_lock:
        for stat, n in grown.items():
            _COUNTS[stat] += n


def _check_reasons(value: object) -> None:
    """What ``undecided`` may be: a list of at most 32 reason names (lower case and underscores)."""
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or len(value) > MAX_REASONS
        or not all(isinstance(r, str) and _REASON.fullmatch(r) for r in value)
    ):
        raise ValueError(
            f"must be a list of at most {MAX_REASONS} reason names such as 'no_answer' (lower case and "
            f"underscores), got {shown(value)}"
        )


@register(
    "math_or_judge",
    columns=["solution"],
    optional_columns=[*QUESTION_COLUMNS, "choices"],
    # The judge's endpoint, model and key stay the operator's: the nested specs go through the same policy.
    caller_params={
        "rule": CallerParam(reward_spec=True),
        "judge": CallerParam(reward_spec=True),
        "template": CallerParam(check=check_inline_template, inline_file=True),
        "undecided": CallerParam(check=_check_reasons),
        "threshold": CallerParam(),
        "max_judge_chars": CallerParam(cap=100_000),
        "correct": CallerParam(),
        "wrong": CallerParam(),
    },
)
@dataclass(frozen=True)
class MathOrJudge(Reward):
    """The rule verifier (math) first; where it cannot decide, an LLM judge asked "is the final answer
    equivalent to the reference?".

    Args:
        rule: the rule verifier (a name or ``{"name", "params", "columns"}``), ``"math"``.
        judge: the judge (the same), ``"llm_judge"``: it must be configured (``REWARDKIT_JUDGE_*``), else
            construction fails with its error.
        template: the verification prompt an ``llm_judge`` judge is given (``None``: :data:`VERIFY_TEMPLATE`).
        undecided: the rule's reasons that send an item to the judge (:data:`UNDECIDED`).
        threshold: a judge score at or above it is right (0.5).
        max_judge_chars: the judge reads the last this many characters of a completion (8,000).
        correct, wrong: what a right and a wrong answer are worth (1.0 and 0.0).
    """

    rule: Any = "math"
    judge: Any = "llm_judge"
    template: str | None = None
    undecided: Sequence[str] = UNDECIDED
    threshold: float = 0.5
    max_judge_chars: int = 8000
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        try:
            _check_reasons(self.undecided)
        except ValueError as exc:
            raise ValueError(f"math_or_judge: undecided {exc}") from None
        object.__setattr__(self, "undecided", tuple(self.undecided))
        if not finite_number(self.threshold) or not 0.0 < self.threshold <= 1.0:
            raise number_error("math_or_judge", "threshold", "a number in (0, 1]", self.threshold)
        c = self.max_judge_chars
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ValueError(f"math_or_judge: max_judge_chars must be a positive integer, got {shown(c)}")
        binary_values("math_or_judge", self.correct, self.wrong)
        if self.template is not None and not isinstance(self.template, str):
            raise ValueError(f"math_or_judge: template must be a string, got {type(self.template).__name__}")
        rule = inner_reward(self.rule, "math_or_judge: rule")
        judge = inner_reward(self.judge, "math_or_judge: judge")  # no judge settings: the judge's error
        if isinstance(judge, LLMJudge):  # the verification question, not the judge's grading prompt
            judge = dataclasses.replace(judge, template=self.template or VERIFY_TEMPLATE).configure(
                alias=judge._alias, columns=judge._column_map
            )
        object.__setattr__(self, "_rule", rule)
        object.__setattr__(self, "_judge", judge)

    @property
    def rule_reward(self) -> Reward:
        """The rule verifier, built."""
        built: Reward = object.__getattribute__(self, "_rule")
        return built

    @property
    def judge_reward(self) -> Reward:
        """The judge, built (an ``llm_judge`` with this reward's ``template``)."""
        built: Reward = object.__getattribute__(self, "_judge")
        return built

    # -- columns: the rule's and the judge's, under the caller's names
    @property
    def required_columns(self) -> tuple[str, ...]:
        names = (*self.rule_reward.caller_columns()[0], *self.judge_reward.caller_columns()[0])
        return tuple(dict.fromkeys(names))

    @property
    def optional(self) -> tuple[str, ...]:
        names = (*self.rule_reward.caller_columns()[1], *self.judge_reward.caller_columns()[1])
        return tuple(n for n in dict.fromkeys(names) if n not in self.required_columns)

    def params(self) -> dict[str, Any]:
        return {
            "rule": inner_name(self.rule),
            "judge": inner_name(self.judge),
            "template": self.template,
            "undecided": list(self.undecided),
            "threshold": self.threshold,
            "max_judge_chars": self.max_judge_chars,
            "correct": self.correct,
            "wrong": self.wrong,
        }

    def __repr__(self) -> str:  # a judge's base URL in a nested spec: its secrets masked
        return redact_secrets(super().__repr__())

    # -- lifecycle: the rule's and the judge's, and how many items took which path (this process)
    def ready(self, timeout_s: float) -> bool | None:
        answers = [r.ready(timeout_s) for r in (self.rule_reward, self.judge_reward)]
        known = [a for a in answers if a is not None]
        return all(known) if known else None

    def stats(self) -> dict[str, float]:
        with _counts_lock:
            own = {f"fallback_{k}": float(v) for k, v in _COUNTS.items()}
        return {**self.rule_reward.stats(), **self.judge_reward.stats(), **own}

    def notes(self) -> dict[str, str]:
        return {**self.rule_reward.notes(), **self.judge_reward.notes()}

    def close(self) -> None:
        self.rule_reward.close()
        self.judge_reward.close()

    # -- the work: the rule, the plan, the judge on what is left, the verdicts
    def _plan(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], ruled: Scored
    ) -> tuple[list[int], list[str], list[str], dict[str, Any]]:
        """The items the judge decides: their indices, the rule's reasons for them, the texts the judge
        reads (the last ``max_judge_chars`` characters) and the judge's columns for them (the gold answer as
        the reference; a placeholder question when the batch has none)."""
        n = len(completions)
        solutions = columns.get(_caller(self.rule_reward, "solution"), [None] * n)
        texts: list[str | None] = []
        golds: list[str | None] = []
        rows, why, shown = [], [], []
        for i, (value, reason) in enumerate(zip(ruled.values, ruled.reasons, strict=True)):
            check_deadline("math_or_judge: choosing the items the judge decides")  # golds can be long
            texts.append(completion_text(completions[i]))
            golds.append(gold_answer(solutions[i]))
            detail = ruled.details[i]
            answer = detail.get("answer") if isinstance(detail, dict) else None
            undecided = undecided_reason(reason, value, golds[i], texts[i], self.undecided, answer)
            if undecided is not None:
                text = texts[i] or ""
                rows.append(i)
                why.append(undecided)
                shown.append(text if len(text) <= self.max_judge_chars else text[-self.max_judge_chars :])
        _count(items=n, undecided=len(rows))
        judge = self.judge_reward
        required, optional = judge.caller_columns()
        sub: dict[str, Any] = {
            c: [columns[c][i] for i in rows] for c in (*required, *optional) if c in columns
        }
        reference = _caller(judge, "solution")
        if reference in sub:
            sub[reference] = [
                g if golds[i] is None else golds[i] for g, i in zip(sub[reference], rows, strict=True)
            ]
        asked = [c for c in (_caller(judge, q) for q in QUESTION_COLUMNS) if c in optional]
        if asked and not any(c in sub for c in asked):
            sub[asked[0]] = [MISSING_QUESTION] * len(rows)
        return rows, why, shown, sub

    def _rule_columns(self, columns: dict[str, list[Any]]) -> dict[str, Any]:
        required, optional = self.rule_reward.caller_columns()
        return {c: columns[c] for c in (*required, *optional) if c in columns}

    def _verdicts(self, ruled: Scored, rows: list[int], why: list[str], judged: Scored | None) -> Scored:
        """The rule's verdicts, with the judge's where it decided; the values ``correct`` / ``wrong``."""
        out = [
            Explained(None if v is None else (1.0 if v >= 1.0 else 0.0), r, d)
            for v, r, d in zip(ruled.values, ruled.reasons, ruled.details, strict=True)
        ]
        failed = 0
        for j, i in enumerate(rows):
            if judged is None:
                break
            score, judge_reason, reply = judged.values[j], judged.reasons[j], judged.details[j]
            detail = {
                "rule": ruled.details[i],
                "rule_value": ruled.values[i],
                "judge_score": score,
                "judge_reason": judge_reason,
                "reply": reply,
            }
            if score is None:
                failed += 1
                out[i] = Explained(out[i].value, f"judge_failed:{why[j]}", detail)
            else:
                out[i] = Explained(1.0 if score >= self.threshold else 0.0, f"judged:{why[j]}", detail)
        _count(judged=len(rows) - failed, judge_failed=failed)
        final = revalue(out, self.correct, self.wrong)
        return Scored([v.value for v in final], [v.reason for v in final], [v.detail for v in final])

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        ruled = self.rule_reward.score_detailed(
            completions, raise_on_error=raise_on_error, **self._rule_columns(columns)
        )
        rows, why, shown, sub = self._plan(completions, columns, ruled)
        judge = self.judge_reward
        judged = judge.score_detailed(shown, raise_on_error=raise_on_error, **sub) if rows else None
        scored = self._verdicts(ruled, rows, why, judged)
        return [Explained(*item) for item in zip(scored.values, scored.reasons, scored.details, strict=True)]

    # -- async face: the rule on a thread (its workers block), the judge awaited on the caller's loop
    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """Score on the caller's event loop: the rule verifier runs in a thread, the judge's calls (only for
        the undecided items) are awaited on the loop when the judge has an async face."""
        bound = self.bind_columns(completions, columns)
        rule = self.rule_reward
        ruled = await asyncio.to_thread(lambda: rule.score_detailed(completions, **self._rule_columns(bound)))
        rows, why, shown, sub = await asyncio.to_thread(self._plan, completions, bound, ruled)  # CPU work
        judged = None
        if rows:
            judge = self.judge_reward
            face = getattr(judge, "ascore_detailed", None)
            if face is not None:
                judged = await face(shown, **sub)
            else:
                judged = await asyncio.to_thread(lambda: judge.score_detailed(shown, **sub))
        return self._verdicts(ruled, rows, why, judged)

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values
