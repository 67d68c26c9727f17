"""OpenRLHF's remote reward model, served by rewardkit: ``POST /get_reward`` called the way OpenRLHF calls it.

OpenRLHF sends each sample in a request of its own, with no headers: ``{"query": [prompt + response],
"prompts": [prompt], "labels": [label]}``, the response decoded with its special tokens, the label from the
dataset field ``--data.label_key`` names. You give OpenRLHF the URL, with the rewards (and the token, if the
service has one) in it::

    openrlhf.cli.train_ppo_ray ... --data.label_key label \\
        --reward.remote_url "http://cpu-box:8000/get_reward?funcs=countdown,format&token=$REWARDKIT_API_TOKEN"

This script sends a few countdown samples that way and prints what OpenRLHF gets back: ``rewards`` (the sum of
the rewards named), ``scores`` (the first reward's own 0-1 value: what ``--dynamic_filtering_reward_range 0
1`` compares) and ``extra_logs`` (each reward, logged by OpenRLHF).

Needs, in the venv that runs it::

    pip install '/path/to/rewardkit[client]'           # httpx (OpenRLHF itself uses requests)
    pip install '/path/to/rewardkit[service]'          # only to let this example start a service itself

Run::

    python -m rewardkit.examples.openrlhf                            # starts `rewardkit serve` on a free
                                                                     # loopback port, stops it at the end
    python -m rewardkit.examples.openrlhf --url http://cpu-box:8000  # or REWARDKIT_URL; a token in
                                                                     # REWARDKIT_API_TOKEN
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from urllib.parse import quote

import httpx

from rewardkit.examples._service import running_service

# What OpenRLHF decodes: the prompt in the model's chat template, then the response and its end token.
PROMPT = (
    "<|im_start|>user\nUsing the numbers [2, 6, 6], create an equation that equals 24. Think in <think> "
    "</think> tags and give the equation in <answer> </answer> tags.<|im_end|>\n<|im_start|>assistant\n"
)
RESPONSES = [
    "<think>6 - 2 = 4 and 4 * 6 = 24</think><answer>(6 - 2) * 6</answer><|im_end|>",  # right, well formed
    "<think>6 + 6 + 2</think><answer>6 + 6 + 2</answer><|im_end|>",  # well formed, but 14
    "It is (6 - 2) * 6.<|im_end|>",  # right, but no <answer>: nothing to check
]
# The dataset's label field: a JSON object becomes the reward's columns (countdown reads target and nums);
# any other label is the gold answer (the `solution` column of math).
LABEL = json.dumps({"target": 24, "nums": [2, 6, 6]})


def reward_url(base: str, funcs: str, token: str | None) -> str:
    """The URL to give OpenRLHF's ``--reward.remote_url``."""
    url = f"{base}/get_reward?funcs={quote(funcs, safe=',')}"
    return url + (f"&token={quote(token, safe='')}" if token else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit.examples.openrlhf",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the text as written here
    )
    parser.add_argument("--url", default=os.environ.get("REWARDKIT_URL"), help="a running service")
    parser.add_argument("--funcs", default="countdown,format", help="the rewards, comma-separated")
    args = parser.parse_args(argv)

    with running_service(args.url) as base:
        token = os.environ.get("REWARDKIT_API_TOKEN") or None
        url = reward_url(base, args.funcs, token)
        shown = reward_url(base, args.funcs, None) + ("&token=$REWARDKIT_API_TOKEN" if token else "")
        print(f'OpenRLHF\'s flag: --reward.remote_url "{shown}"')
        with httpx.Client(timeout=60) as http:
            for response in RESPONSES:
                body = {"query": [PROMPT + response], "prompts": [PROMPT], "labels": [LABEL]}
                answer = http.post(url, json=body)  # one sample a request, no headers: as OpenRLHF
                answer.raise_for_status()
                print(json.dumps(answer.json()), "<-", json.dumps(response))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
