"""The built-in rewards; importing this package registers them."""

from rewardkit.rewards.countdown import Countdown, countdown
from rewardkit.rewards.format import FormatTags, format_tags
from rewardkit.rewards.r1v import R1VAccuracy, r1v_accuracy

__all__ = ["Countdown", "FormatTags", "R1VAccuracy", "countdown", "format_tags", "r1v_accuracy"]
