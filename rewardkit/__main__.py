"""``python -m rewardkit``: the ``rewardkit`` command (:mod:`rewardkit.cli`), for an environment whose scripts
are not on the ``PATH``."""

from rewardkit.cli import main

main()
