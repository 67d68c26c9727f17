"""A reward paid only as far as a gate allows: ``reward x gate`` (instruction following paid only when the
answer addresses the prompt; any reward gated by any other).

Constraints met by an empty or off-topic answer must earn nothing: ``ifeval`` alone pays "no commas, under 50
words" to ``"Ok."``. ``gated`` scores the ``reward`` first and asks the ``gate`` (by default the LLM judge,
asked whether the response addresses the request) only about the items the reward pays, so a failed
constraint costs no judge call. The value is the reward's times the gate's (the judge's 0-10 grade over 10),
or, with ``threshold``, the reward's when the gate's value reaches it and 0.0 otherwise.

Reasons: the reward's for an item it does not pay (its ``None`` stays ``None``); ``gated`` for an item the
gate cuts to 0.0; ``gate_failed:<gate's reason>`` (``None``) when the gate could not judge. ``details``:
``{"reward", "reward_reason", "gate", "gate_reason"}``.

>>> import rewardkit
>>> paid = rewardkit.get("gated", reward="ifeval", gate="format")  # any reward can gate: here the tags
>>> paid(["<think>x</think><answer>Rain fell and the river rose.</answer>",  # both paid
...       "Rain fell and the river rose.",  # no tags: the gate pays nothing
...       "<think>x</think><answer>Rain, river.</answer>"],  # a comma: the gate is not asked
...      instruction_id_list=[["punctuation:no_comma"]] * 3)
[1.0, 0.0, 0.0]
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion, Explained, Reward, Scored, finite_number, number_error
from rewardkit.judging.templates import check_inline_template
from rewardkit.redact import redact_secrets
from rewardkit.registry import register
from rewardkit.rewards._composed import inner_name, inner_reward
from rewardkit.rewards.judge import LLMJudge
from rewardkit.spec import CallerParam

__all__ = ["ADDRESSES_TEMPLATE", "Gated"]

#: what an ``llm_judge`` gate is asked (its ``{question}`` is the row's prompt)
ADDRESSES_TEMPLATE = """Does the response below address the request: on its topic, with substance?
Judge only that. Do not judge how it is formatted or whether it follows formatting constraints (length,
case, punctuation, lists, keywords). An empty, off-topic, evasive or placeholder response does not address
the request.

Request: {question}

Response: {completion}

Write one short sentence, then the score from 0 (does not address the request) to 10 (fully addresses it)
as [[N]] on the last line."""


@register(
    "gated",
    columns=[],
    # the judge's endpoint, model and key stay the operator's: the nested specs go through the same policy
    caller_params={
        "reward": CallerParam(reward_spec=True),
        "gate": CallerParam(reward_spec=True),
        "template": CallerParam(check=check_inline_template, inline_file=True),
        "threshold": CallerParam(),
    },
    required_params=["reward"],
)
@dataclass(frozen=True)
class Gated(Reward):
    """``reward`` paid only as far as ``gate`` allows: their product (or, with ``threshold``, the reward when
    the gate reaches it), the gate asked only about items the reward pays.

    Args:
        reward: the reward paid (a name or ``{"name", "params", "columns"}``), e.g. ``"ifeval"``.
        gate: the reward that gates it, ``"llm_judge"`` by default (it must be configured).
        template: an ``llm_judge`` gate's prompt (``None``: :data:`ADDRESSES_TEMPLATE`).
        threshold: ``None`` (multiply by the gate's value) or a number in (0, 1]: the gate's value at or
            above it lets the reward through whole, below it pays 0.0.
    """

    reward: Any = None
    gate: Any = "llm_judge"
    template: str | None = None
    threshold: float | None = None

    def __post_init__(self) -> None:
        if self.reward is None:
            raise ValueError("gated: reward is required (the reward the gate lets through), e.g. 'ifeval'")
        t = self.threshold
        if t is not None and (not finite_number(t) or not 0.0 < t <= 1.0):
            raise number_error("gated", "threshold", "a number in (0, 1] or null", t)
        if self.template is not None and not isinstance(self.template, str):
            raise ValueError(f"gated: template must be a string, got {type(self.template).__name__}")
        paid = inner_reward(self.reward, "gated: reward")
        gate = inner_reward(self.gate, "gated: gate")
        if isinstance(gate, LLMJudge):  # the question asked is "does it address the request?"
            gate = dataclasses.replace(gate, template=self.template or ADDRESSES_TEMPLATE).configure(
                alias=gate._alias, columns=gate._column_map
            )
        object.__setattr__(self, "_paid", paid)
        object.__setattr__(self, "_gate", gate)

    @property
    def paid_reward(self) -> Reward:
        built: Reward = object.__getattribute__(self, "_paid")
        return built

    @property
    def gate_reward(self) -> Reward:
        built: Reward = object.__getattribute__(self, "_gate")
        return built

    # -- columns: the reward's and the gate's, under the caller's names
    @property
    def required_columns(self) -> tuple[str, ...]:
        names = (*self.paid_reward.caller_columns()[0], *self.gate_reward.caller_columns()[0])
        return tuple(dict.fromkeys(names))

    @property
    def optional(self) -> tuple[str, ...]:
        names = (*self.paid_reward.caller_columns()[1], *self.gate_reward.caller_columns()[1])
        return tuple(n for n in dict.fromkeys(names) if n not in self.required_columns)

    def params(self) -> dict[str, Any]:
        return {
            "reward": inner_name(self.reward),
            "gate": inner_name(self.gate),
            "template": self.template,
            "threshold": self.threshold,
        }

    def __repr__(self) -> str:  # a judge's base URL in a nested spec: its secrets masked
        return redact_secrets(super().__repr__())

    # -- lifecycle: both rewards'
    def ready(self, timeout_s: float) -> bool | None:
        answers = [r.ready(timeout_s) for r in (self.paid_reward, self.gate_reward)]
        known = [a for a in answers if a is not None]
        return all(known) if known else None

    def stats(self) -> dict[str, float]:
        return {**self.paid_reward.stats(), **self.gate_reward.stats()}

    def notes(self) -> dict[str, str]:
        return {**self.paid_reward.notes(), **self.gate_reward.notes()}

    def close(self) -> None:
        self.paid_reward.close()
        self.gate_reward.close()

    # -- the work: the reward, the items it pays, the gate on those, the product
    @staticmethod
    def _own(reward: Reward, columns: dict[str, list[Any]], rows: list[int] | None = None) -> dict[str, Any]:
        required, optional = reward.caller_columns()
        names = [c for c in (*required, *optional) if c in columns]
        if rows is None:
            return {c: columns[c] for c in names}
        return {c: [columns[c][i] for i in rows] for c in names}

    @staticmethod
    def _paid_rows(paid: Scored) -> list[int]:
        return [i for i, v in enumerate(paid.values) if v is not None and v > 0.0]

    def _combine(self, paid: Scored, rows: list[int], gated: Scored | None) -> list[Explained]:
        out = [Explained(v, r, d) for v, r, d in zip(paid.values, paid.reasons, paid.details, strict=True)]
        for j, i in enumerate(rows):
            if gated is None:
                break
            value, g, why = paid.values[i], gated.values[j], gated.reasons[j]
            detail = {"reward": value, "reward_reason": paid.reasons[i], "gate": g, "gate_reason": why}
            if g is None or value is None:
                out[i] = Explained(None, f"gate_failed:{why or 'none'}", detail)
                continue
            allowed = (1.0 if g >= self.threshold else 0.0) if self.threshold is not None else max(0.0, g)
            final = value * min(allowed, 1.0)
            out[i] = Explained(final, paid.reasons[i] if final > 0.0 else "gated", detail)
        return out

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        paid = self.paid_reward.score_detailed(
            completions, raise_on_error=raise_on_error, **self._own(self.paid_reward, columns)
        )
        rows = self._paid_rows(paid)
        gated = None
        if rows:
            sub = self._own(self.gate_reward, columns, rows)
            gated = self.gate_reward.score_detailed(
                [completions[i] for i in rows], raise_on_error=raise_on_error, **sub
            )
        return self._combine(paid, rows, gated)

    # -- async face: the reward on a thread, a judge gate awaited on the caller's loop
    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """Score on the caller's event loop: the paid reward in a thread (or awaited when it has an async
        face), then the gate on the items it pays, awaited when it has an async face."""
        bound = self.bind_columns(completions, columns)
        paid_reward, gate = self.paid_reward, self.gate_reward
        own = self._own(paid_reward, bound)
        face = getattr(paid_reward, "ascore_detailed", None)
        if face is not None:
            paid = await face(completions, **own)
        else:
            paid = await asyncio.to_thread(lambda: paid_reward.score_detailed(completions, **own))
        rows = self._paid_rows(paid)
        gated = None
        if rows:
            sub = self._own(gate, bound, rows)
            items = [completions[i] for i in rows]
            gate_face = getattr(gate, "ascore_detailed", None)
            if gate_face is not None:
                gated = await gate_face(items, **sub)
            else:
                gated = await asyncio.to_thread(lambda: gate.score_detailed(items, **sub))
        out = self._combine(paid, rows, gated)
        return Scored([e.value for e in out], [e.reason for e in out], [e.detail for e in out])

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values
