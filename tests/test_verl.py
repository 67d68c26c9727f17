"""veRL's own loader and reward managers (verl 0.9.1) calling rewardkit's veRL file.

veRL does not install beside ms-swift 4.6 (it pins transformers<5.11 and would downgrade it), so it goes into
a directory of its own, without its dependencies but the few its reward path imports (ray and tensordict at
import time, omegaconf/hydra for its config), and runs in a subprocess with that directory first on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.adapters import plugin_path
from tests.support.helpers import ROOT

SITE = Path(sys.prefix) / "verl-site"  # inside the venv: `make clean` removes it with the rest
PACKAGES = [
    "verl==0.9.1",
    "ray==2.60.0",
    "tensordict==0.10.0",
    "pyvers==0.1.0",
    "omegaconf==2.4.0",
    "hydra-core==1.3.8",
    "antlr4-python3-runtime==4.9.3",
    "codetiming==1.4.0",
    "msgpack==1.2.4",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "referencing==0.37.0",
    "rpds-py==2026.9.1",
    "orjson==3.13.0",
    "pylatexenc==2.11",
]
ROWS = [  # data_source, response, ground_truth, expected
    ["openai/gsm8k", "16 - 3 - 4 = 9, 9 * 2 = 18\n#### 18", "18", 1.0],
    ["openai/gsm8k", "#### 17", "18", 0.0],
    ["countdown", "<answer>(6 - 2) * 6</answer>", {"target": 24, "numbers": [2, 6, 6]}, 1.0],
    ["countdown", "<answer>6 + 2 + 6</answer>", {"target": 24, "numbers": [2, 6, 6]}, 0.0],
    ["lighteval/MATH", "so x = \\boxed{\\frac{1}{2}}", "0.5", 1.0],
    ["math_dapo", "Answer: 7", "8", -1.0],
    [  # a code source: ground_truth is the tests as JSON text, scored as the share passed (veRL's prime_code)
        "codecontests",
        "```python\nprint(sum(map(int, input().split())))\n```",
        json.dumps({"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "8\n"]}),
        0.5,
    ],
    ["countdown", "I give up", {"target": 24, "numbers": [2, 6, 6]}, 0.0],
]


@pytest.fixture(scope="module")
def verl_site() -> Path:
    stamp = SITE / ".installed"
    if not stamp.is_file():
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(SITE)]
        subprocess.run(command + PACKAGES, check=True, timeout=600)
        stamp.write_text("\n".join(PACKAGES))
    return SITE


@pytest.mark.timeout(300)
def test_verls_managers_call_the_adapter(verl_site: Path) -> None:
    rows = [row[:3] for row in ROWS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(verl_site), str(ROOT)])}
    env.pop("REWARDKIT_URL", None)
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "support" / "verl_run.py"),
            json.dumps(rows),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # the managers got their functions as rewardkit/examples/verl.py loads them: by veRL's own loader, from
    # the settings the example documents (reward.custom_reward_function.path and .name)
    assert report["loaded"] == ["by veRL's get_custom_reward_fn"]
    expected = [row[3] for row in ROWS]
    assert report["async_detected"] is True  # veRL awaits it
    assert report["reward_loop"] == expected
    assert report["reward_loop_batches"] == 1  # eight per-sample tasks, one batch
    assert report["naive"] == expected
    assert report["batch"] == expected
    # "ok": read and judged on its merits (right or wrong); otherwise what stopped a normal judgement
    assert report["detailed_reasons"] == ["ok"] * 6 + ["wrong_answer:1", "no_answer"]


KWARGS_RUN = """
import json, sys
from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn
path, name = sys.argv[1], sys.argv[2]
kwargs = json.loads(sys.argv[3])
config = {"reward": {"custom_reward_function": {"path": path, "name": name, "reward_kwargs": kwargs}}}
fn = get_custom_reward_fn(OmegaConf.create(config))
print(json.dumps(fn(data_source="openai/gsm8k", solution_str="I think it is 12", ground_truth="12",
                    extra_info={"index": 0})))
"""


@pytest.mark.timeout(120)
def test_verls_loader_passes_reward_kwargs_as_reward_parameters(verl_site: Path) -> None:
    """custom_reward_function.reward_kwargs reach compute_score through veRL's own loader: they are applied
    (extract: lenient reads a bare last number), and one no reward has fails, naming it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(verl_site), str(ROOT)])}
    env.pop("REWARDKIT_URL", None)

    def run(kwargs: dict[str, object]) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", KWARGS_RUN, str(plugin_path("verl")), "compute_score"]
        return subprocess.run(
            [*command, json.dumps(kwargs)], env=env, capture_output=True, text=True, timeout=110
        )

    plain, lenient, typo = run({}), run({"extract": "lenient"}), run({"extrct": "lenient"})
    assert plain.returncode == 0 and lenient.returncode == 0, (plain.stderr + lenient.stderr)[-4000:]
    assert json.loads(plain.stdout.splitlines()[-1]) == 0.0
    assert json.loads(lenient.stdout.splitlines()[-1]) == 1.0
    assert typo.returncode != 0 and "'extrct' is no parameter of the data-source table" in typo.stderr
