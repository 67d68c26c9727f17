"""Tool calling (BFCL-style function calls): the model's calls against the row's expected calls.

Columns: ``solution`` (the expected calls: BFCL's possible answers or plain calls, ``[]`` when no call is
expected) and optionally ``tools`` (the functions offered: OpenAI function schemas or BFCL's list), each as
JSON text or as objects. How calls are read and compared: :mod:`rewardkit.toolcalls`.

``mode="exact"`` (the default): 1.0 when the calls are the expected ones, else 0.0 with the first reason:
``no_call`` (calls were expected, none made), ``unparseable_call``, ``no_answer`` (the reasoning never
ended), ``wrong_count``, ``wrong_function:<name>``, ``missing_param:<p>``, ``unexpected_param:<p>``,
``wrong_type:<p>``, ``wrong_value:<p>``. ``mode="partial"``: the same reasons, the value the dense score of
:mod:`rewardkit.toolcalls.check` (0 unless the calls parse and name functions the row offers; per call the
share of its parameters right; an extra or a missing call costs its share). ``None`` (not judged) when the
expected calls or tools do not read (``missing_solution``, ``invalid_gold``, ``invalid_tools``) or a schema
names a type the checker does not know (``unsupported_type:<t>``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.chat import messages
from rewardkit.core import (
    Completion,
    DeadlineExceeded,
    Explained,
    Reward,
    Verdict,
    binary_values,
    check_deadline,
    revalue,
)
from rewardkit.deadlines import deadline_at
from rewardkit.once import OncePerBatch
from rewardkit.registry import register
from rewardkit.spec import CallerParam
from rewardkit.toolcalls import (
    GoldCall,
    GoldError,
    Tool,
    UnsupportedType,
    check_calls,
    partial_score,
    read_calls,
    read_gold,
    read_tools,
)

__all__ = ["ToolCall"]

logger = logging.getLogger("rewardkit")

MODES = ("exact", "partial")
ORDERS = ("any", "given")


@register(
    "tool_call",
    columns=["solution"],
    optional_columns=["tools"],
    caller_params={
        "mode": CallerParam(),
        "order": CallerParam(),
        "max_answer_chars": CallerParam(cap=1_000_000),
        "max_calls": CallerParam(cap=64),
        "max_gold_chars": CallerParam(cap=4_000_000),
        "correct": CallerParam(),
        "wrong": CallerParam(),
    },
)
@dataclass(frozen=True)
class ToolCall(Reward):
    """Tool calls checked as BFCL's AST checker checks them: 1.0 when they are the expected ones.

    Args:
        mode: ``"exact"`` (1/0) or ``"partial"`` (the documented dense score).
        order: ``"any"`` (parallel calls in any order, BFCL's parallel categories) or ``"given"`` (the
            expected calls in their order).
        max_answer_chars: the longest final answer read (longer: ``unparseable_call``).
        max_calls: the most calls read from a completion (more: ``unparseable_call``).
        max_gold_chars: the longest JSON text of ``solution`` and ``tools`` read (longer: ``None``).
        correct, wrong: what a pass and a fail are worth in ``exact`` mode (1.0 and 0.0).

    >>> import rewardkit
    >>> reward = rewardkit.get("tool_call")
    >>> gold = [{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]}}]
    >>> reward(['<tool_call>{"name": "get_weather", "arguments": {"city": "paris"}}</tool_call>',
    ...         '[get_weather(city="Rome")]'], solution=[gold, gold])
    [1.0, 0.0]
    """

    mode: str = "exact"
    order: str = "any"
    max_answer_chars: int = 65_536
    max_calls: int = 64
    max_gold_chars: int = 1_000_000
    correct: float = 1.0
    wrong: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"tool_call: mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.order not in ORDERS:
            raise ValueError(f"tool_call: order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        for name in ("max_answer_chars", "max_calls", "max_gold_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"tool_call: {name} must be a positive integer, got {value!r}")
        binary_values("tool_call", self.correct, self.wrong)
        if self.mode == "partial" and (self.correct, self.wrong) != (1.0, 0.0):
            raise ValueError("tool_call: correct and wrong apply to mode='exact' only")

    def params(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "order": self.order,
            "max_answer_chars": self.max_answer_chars,
            "max_calls": self.max_calls,
            "max_gold_chars": self.max_gold_chars,
            "correct": self.correct,
            "wrong": self.wrong,
        }

    def score_one(self, completion: Completion, solution: Any, tools: Any) -> Verdict | Explained:
        """Judge one completion (text or chat messages) against its row's expected calls and tools."""
        return self._judge(completion, solution, tools, self._read_gold, self._read_tools)

    def _read_gold(self, value: Any) -> list[GoldCall]:
        return read_gold(value, max_chars=self.max_gold_chars)

    def _read_tools(self, value: Any) -> dict[str, Tool]:
        return read_tools(value, max_chars=self.max_gold_chars)

    def _judge(
        self,
        completion: Completion,
        solution: Any,
        tools: Any,
        gold_of: Callable[[Any], list[GoldCall]],
        tools_of: Callable[[Any], dict[str, Tool]],
    ) -> Verdict | Explained:
        if not isinstance(completion, str) and messages(completion) is None:
            return Verdict(0.0, "invalid_completion")
        if solution is None:
            return Verdict(None, "missing_solution")
        try:
            golds = gold_of(solution)
        except GoldError as exc:
            return Explained(None, "invalid_gold", {"error": str(exc)[:200]})
        try:
            offered = tools_of(tools) if tools is not None else {}
        except GoldError as exc:
            return Explained(None, "invalid_tools", {"error": str(exc)[:200]})
        parsed = read_calls(completion, max_chars=self.max_answer_chars, max_calls=self.max_calls)
        if parsed.error is not None:
            return Explained(0.0, parsed.error, {"error": parsed.detail})
        calls = parsed.calls
        detail = {"format": parsed.format, "calls": len(calls)}
        if not calls and golds:
            return Explained(0.0, "no_call", detail)
        try:
            reason = check_calls(calls, golds, offered, self.order)
            if self.mode == "exact":
                return Explained(float(reason is None), reason, detail)
            return Explained(partial_score(calls, golds, offered, self.order), reason, detail)
        except UnsupportedType as exc:
            return Explained(None, f"unsupported_type:{exc}", detail)

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Verdict | Explained]:
        n = len(completions)
        tools = columns.get("tools") or [None] * n
        stop = deadline_at()
        # a GRPO group shares its row: each distinct solution and tools value is read once per batch
        gold_of = OncePerBatch(self._read_gold, kept=(GoldError,))
        tools_of = OncePerBatch(self._read_tools, kept=(GoldError,))
        out: list[Verdict | Explained] = []
        logged = False
        for i, (completion, solution, offered) in enumerate(
            zip(completions, columns["solution"], tools, strict=True)
        ):
            if stop is not None and time.monotonic() >= stop:
                check_deadline(f"reward {self.reward_name!r}, item {i}")
            try:
                out.append(self._judge(completion, solution, offered, gold_of, tools_of))
            except DeadlineExceeded:
                raise
            except Exception as exc:
                if raise_on_error:
                    raise
                if not logged:
                    logger.warning("reward %s failed on item %d", self.reward_name, i, exc_info=True)
                    logged = True
                out.append(Verdict(0.0, f"internal_error:{type(exc).__name__}"))
        if self.mode == "exact":
            return revalue(out, self.correct, self.wrong)
        return out
