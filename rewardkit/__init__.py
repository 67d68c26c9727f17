"""rewardkit: pure, batched reward functions for RL fine-tuning of LLMs.

Every reward follows one contract, ``reward(completions, **columns) -> list[float | None]``, and lives in
one registry that the CLI, the scoring service and the ms-swift plugin all read.

>>> import rewardkit
>>> rewardkit.countdown(["<answer>(6 - 2) * 6</answer>", "no answer"], target=[24, 24], nums=[[2, 6, 6]] * 2)
[1.0, 0.0]
>>> sorted(info.name for info in rewardkit.list_rewards())  # doctest: +NORMALIZE_WHITESPACE
['choice', 'cosine', 'countdown', 'format', 'length', 'llm_judge', 'math', 'r1v_acc', 'reasoning_steps',
 'repetition', 'route', 'soft_overlong', 'tag_count', 'think_format']
"""

from importlib.metadata import PackageNotFoundError, version

from rewardkit import registry
from rewardkit.core import ColumnError, Explained, ItemReward, Reward, RewardError, Scored, Verdict
from rewardkit.engine import BatchResult, FuncSpec, score_batch
from rewardkit.registry import RewardInfo, UnknownRewardError, get, list_rewards, register
from rewardkit.rewards.choice import choice_accuracy
from rewardkit.rewards.countdown import countdown
from rewardkit.rewards.format import format_tags
from rewardkit.rewards.judge import llm_judge
from rewardkit.rewards.math_equivalence import math_equivalence
from rewardkit.rewards.r1v import r1v_accuracy
from rewardkit.spec import RewardSpec

try:
    __version__ = version("rewardkit")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = [
    "BatchResult",
    "ColumnError",
    "Explained",
    "FuncSpec",
    "ItemReward",
    "Reward",
    "RewardError",
    "RewardInfo",
    "RewardSpec",
    "Scored",
    "UnknownRewardError",
    "Verdict",
    "__version__",
    "choice_accuracy",
    "countdown",
    "format_tags",
    "get",
    "list_rewards",
    "llm_judge",
    "math_equivalence",
    "r1v_accuracy",
    "register",
    "registry",
    "score_batch",
]
