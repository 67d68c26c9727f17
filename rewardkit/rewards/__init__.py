"""The built-in rewards, one module each; importing this package registers them.

The functions live in their modules (``rewardkit.rewards.countdown.countdown``) and at the top level
(``rewardkit.countdown``); this package does not re-export them, so its submodule names stay modules.
"""

from rewardkit.rewards import (
    choice,
    code,
    cosine,
    countdown,
    fallback,
    format,
    gated,
    ifeval,
    json_schema,
    judge,
    length,
    math_equivalence,
    qa,
    r1v,
    reasoning_steps,
    repetition,
    route,
    soft_overlong,
    tag_count,
    think_format,
    tool_call,
)

__all__ = [
    "choice",
    "code",
    "cosine",
    "countdown",
    "fallback",
    "format",
    "gated",
    "ifeval",
    "judge",
    "json_schema",
    "length",
    "math_equivalence",
    "qa",
    "r1v",
    "reasoning_steps",
    "repetition",
    "route",
    "soft_overlong",
    "tag_count",
    "think_format",
    "tool_call",
]
