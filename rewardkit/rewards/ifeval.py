"""Instruction following (IFEval, IFBench, open-instruct's IF-RLVR): the share of a row's verifiable
instructions ("answer in under 100 words", "no commas", "wrap it in JSON") the final answer follows.

Columns (:mod:`rewardkit.instructions.rows`): IFEval/IFBench's ``instruction_id_list`` + ``kwargs``;
open-instruct's ``ground_truth`` (``func_name`` dicts, or ``[{"instruction_id": [...], "kwargs": [...]}]``);
veRL's ``reward_model`` (its ``ground_truth``). The row's prompt (``prompt``; TRL's ``prompts``, ms-swift's
``messages``: the last user turn) is read for the checks that need it (``combination:repeat_prompt`` without
``prompt_to_repeat``, IFBench's copy and ratio checks).

The text checked is the final answer: after the last ``</think>`` (a ``<think>`` never closed is no answer:
0.0, ``unclosed_think``), without an ``<answer>`` wrapper around all of it.

Scores: ``mode="all"`` 1.0 when every instruction is followed, else 0.0 with ``failed:<first id>``;
``mode="fraction"`` the share followed. ``loose=True``: IFEval's loose variants (drop the first line, the
last line, both; remove ``*``) may pass an instruction, never a variant left empty. ``rules="robust"`` (the
default) closes the known hacks, ``rules="reference"`` reproduces the reference checkers' verdicts (the table
of every id with both rules: ``rewardkit/rewards/README.md``). ``details``: the per-instruction verdicts.
``None`` (not judged): ``no_instructions``, ``invalid_instructions``, ``too_many_instructions``,
``unknown_instruction:<id>``, ``bad_kwargs:<id>``. An answer over ``max_answer_chars`` is 0.0
(``answer_too_long``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.chat import question_text
from rewardkit.core import Completion, Explained, ItemReward, Verdict
from rewardkit.extract import final_text
from rewardkit.instructions.base import Rules
from rewardkit.instructions.rows import RowError, follow, read_instructions
from rewardkit.registry import named, register
from rewardkit.spec import CallerParam

__all__ = ["IFEval", "ifeval"]

MODES = ("all", "fraction")
RULES = ("robust", "reference")
#: where the prompt is read from, first found first
PROMPT_COLUMNS = ("prompt", "prompts", "messages")
MAX_PROMPT_CHARS = 200_000


def _prompt(*values: Any) -> str | None:
    for value in values:
        if value is None:
            continue
        text = question_text(value)
        if text is not None:
            return text[:MAX_PROMPT_CHARS]
    return None


def _answer(completion: str) -> str | None:
    text = final_text(completion)
    if text is None:
        return None
    if text == completion.rstrip():  # no reasoning, no special tokens: checked as written (IFBench's CSV
        text = completion  # checks count a trailing blank line as a row)
    stripped = text.strip()
    if stripped.startswith("<answer>") and stripped.endswith("</answer>") and stripped.count("<answer>") == 1:
        return stripped[len("<answer>") : -len("</answer>")]
    return text


@register(
    "ifeval",
    columns=[],
    optional_columns=["instruction_id_list", "kwargs", "ground_truth", "reward_model", *PROMPT_COLUMNS],
    caller_params={
        "mode": CallerParam(),
        "loose": CallerParam(),
        "rules": CallerParam(),
        "max_answer_chars": CallerParam(cap=1_000_000),
    },
)
@dataclass(frozen=True)
class IFEval(ItemReward):
    """Verifiable instruction following (IFEval, IFBench, IF-RLVR): 1.0 when the answer follows every
    instruction of its row.

    Args:
        mode: ``"all"`` (1.0 or 0.0) or ``"fraction"`` (the share of instructions followed).
        loose: IFEval's loose evaluation (first/last line dropped, ``*`` removed; any variant may pass).
        rules: ``"robust"`` (hacks closed; for training) or ``"reference"`` (the references' verdicts).
        max_answer_chars: the longest final answer judged (longer: 0.0, ``answer_too_long``).

    >>> import rewardkit
    >>> reward = rewardkit.get("ifeval")
    >>> reward(["Lists are fine; commas are not", "Sure, here it is"],
    ...        instruction_id_list=[["punctuation:no_comma"]] * 2, kwargs=[[{}]] * 2)
    [1.0, 0.0]
    """

    mode: str = "all"
    loose: bool = False
    rules: str = "robust"
    max_answer_chars: int = 100_000

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"ifeval: mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.rules not in RULES:
            raise ValueError(f"ifeval: rules must be one of {', '.join(RULES)}, got {self.rules!r}")
        if not isinstance(self.loose, bool):
            raise ValueError(f"ifeval: loose must be true or false, got {self.loose!r}")
        chars = self.max_answer_chars
        if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
            raise ValueError(f"ifeval: max_answer_chars must be a positive integer, got {chars!r}")

    def params(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "loose": self.loose,
            "rules": self.rules,
            "max_answer_chars": self.max_answer_chars,
        }

    def score_one(
        self,
        text: str,
        ids: Any = None,
        kwargs: Any = None,
        ground_truth: Any = None,
        reward_model: Any = None,
        *prompts: Any,
    ) -> Verdict | Explained:
        try:
            pairs = read_instructions(ids, kwargs, ground_truth if ground_truth is not None else reward_model)
        except RowError as exc:
            return Explained(None, exc.reason, {"error": str(exc)[:200]})
        answer = _answer(text)
        if answer is None:
            return Verdict(0.0, "unclosed_think")
        if len(answer) > self.max_answer_chars:
            return Verdict(0.0, "answer_too_long")
        rules: Rules = "robust" if self.rules == "robust" else "reference"
        outcomes, refused = follow(answer, pairs, prompt=_prompt(*prompts), rules=rules, loose=self.loose)
        if refused is not None:
            return Verdict(None, refused)
        detail = [{"id": iid, "followed": ok} for iid, ok in outcomes]
        failed = next((iid for iid, ok in outcomes if not ok), None)
        reason = None if failed is None else f"failed:{failed}"
        if self.mode == "fraction":
            return Explained(sum(ok for _, ok in outcomes) / len(outcomes), reason, detail)
        return Explained(0.0 if failed else 1.0, reason, detail)


@named("ifeval")
def ifeval(
    completions: Sequence[Completion],
    *,
    mode: str = "all",
    loose: bool = False,
    rules: str = "robust",
    **columns: Any,
) -> list[float | None]:
    """Instruction following of each completion (the registry's ``ifeval``).

    Args:
        completions: strings or chat message lists.
        mode, loose, rules: as :class:`IFEval`.
        columns: ``instruction_id_list`` + ``kwargs``, or ``ground_truth``, or ``reward_model``; optionally
            ``prompt`` / ``prompts`` / ``messages``.

    >>> ifeval(['{"answer": "yes"}', "yes"], ground_truth=['{"func_name": "validate_json_format"}'] * 2,
    ...        rules="reference")
    [1.0, 0.0]
    """
    return IFEval(mode=mode, loose=loose, rules=rules)(completions, **columns)
