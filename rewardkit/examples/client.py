"""The scoring service from Python: a batch scored with ``RewardClient``, and ``remote_reward``, a reward a
trainer calls like any other while the work runs on the service.

Needs, in the venv that runs it::

    pip install '/path/to/rewardkit[client]'           # the client: httpx, nothing of the server
    pip install '/path/to/rewardkit[service]'          # only to let this example start a service itself

Run::

    python -m rewardkit.examples.client                             # starts `rewardkit serve` on a free
                                                                    # loopback port, stops it at the end
    python -m rewardkit.examples.client --url http://cpu-box:8000   # or REWARDKIT_URL; a token in
                                                                    # REWARDKIT_API_TOKEN
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import rewardkit
from rewardkit.client import PolicyError, RewardClient, remote_reward
from rewardkit.examples._service import running_service

# Countdown: reach the target with the given numbers, the expression in <answer> tags.
COMPLETIONS = [
    "<think>6 - 2 = 4, 4 * 6 = 24</think><answer>(6 - 2) * 6</answer>",  # right, and well formed
    "<think>close enough</think><answer>6 + 6 + 2</answer>",  # well formed, but 14
    "24",  # no <answer>: nothing to check
]
COLUMNS = {"target": [24, 24, 24], "nums": [[2, 6, 6]] * 3}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit.examples.client",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the text as written here
    )
    parser.add_argument("--url", default=os.environ.get("REWARDKIT_URL"), help="a running service")
    args = parser.parse_args(argv)

    with running_service(args.url) as url:
        # 1. A batch, several rewards at once: one POST /score (split if the server's limits ask for it).
        #    The token comes from REWARDKIT_API_TOKEN (or token=...).
        with RewardClient(url) as client:
            result = client.score(["countdown", "format"], COMPLETIONS, **COLUMNS)
        print("countdown + format:", result.rewards)  # the weighted sum, one value a completion
        print("countdown:", result.scores["countdown"])
        print("format:", result.scores["format"])

        # 2. One reward as a trainer's reward function: the reward contract, scored on the service.
        #    The same values as the reward in this process.
        countdown = remote_reward("countdown", url, format_score=0.1)
        try:
            remote = countdown(COMPLETIONS, **COLUMNS)
        finally:
            countdown.close()
        local = rewardkit.get("countdown", format_score=0.1)(COMPLETIONS, **COLUMNS)
        print("remote_reward('countdown', format_score=0.1):", remote, "in process:", local)

        # 3. A setting that is the server's, not the caller's, fails here, before any batch is sent:
        #    a run that is misconfigured stops at start-up, not at step 100.
        try:
            remote_reward("math", url, workers=64)
        except PolicyError as refused:
            print("refused before sending:", refused)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
