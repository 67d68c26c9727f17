"""The file veRL loads by path (``reward.custom_reward_function.path=$(rewardkit plugin-path verl)``).

veRL executes it as a fresh module that is not in ``sys.modules``; it takes the functions from the imported
:mod:`rewardkit.adapters.verl`, so the data-source table (and what :func:`register_data_source` adds to it)
and the batching of concurrent calls are the same ones the rest of the process sees.
"""

from rewardkit.adapters.verl import (
    compute_score,
    compute_score_async,
    compute_score_batch,
    compute_score_detailed,
    register_data_source,
)

__all__ = [
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "compute_score_detailed",
    "register_data_source",
]
