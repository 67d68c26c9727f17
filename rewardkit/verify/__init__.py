"""Math answer verification: cheap sound checks in the parent, Math-Verify in killable worker processes.

One module, one job: :mod:`~rewardkit.verify.normalise` (answer text to a canonical form),
:mod:`~rewardkit.verify.fastpath` (exact decisions without SymPy), :mod:`~rewardkit.verify.guards` (answers
refused before SymPy), :mod:`~rewardkit.verify.pool` (scheduling pairs on worker processes, verdict cache),
:mod:`~rewardkit.verify.launch` (how workers start), :mod:`~rewardkit.verify.worker` (what runs in them).
"""

from rewardkit.verify.pool import (
    Check,
    MathVerifier,
    close_verifier,
    default_workers,
    get_verifier,
    require_math,
    shutdown,
)

__all__ = [
    "Check",
    "MathVerifier",
    "close_verifier",
    "default_workers",
    "get_verifier",
    "require_math",
    "shutdown",
]
