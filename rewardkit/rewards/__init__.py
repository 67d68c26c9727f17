"""The built-in rewards, one module each; importing this package registers them.

The functions live in their modules (``rewardkit.rewards.countdown.countdown``) and at the top level
(``rewardkit.countdown``); this package does not re-export them, so its submodule names stay modules.
"""

from rewardkit.rewards import countdown, format, judge, math_equivalence, r1v

__all__ = ["countdown", "format", "judge", "math_equivalence", "r1v"]
