"""The wheel: one top-level name (rewardkit), the service and the ms-swift plugin inside it, both usable
from the installed copy, found by `rewardkit plugin-path swift` and `rewardkit serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, a folder it was installed into without dependencies: those come from this venv)."""
    out, target = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("site")
    pip("wheel", "-w", str(out), str(ROOT))
    (wheel,) = out.glob("rewardkit-*.whl")
    pip("install", "--target", str(target), str(wheel))
    return wheel, target


def pip(command: str, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", command, "--no-deps", "-q", *args],
        check=True,
        capture_output=True,
        timeout=240,
    )


def run(target: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(target)}  # before site-packages: the installed copy wins
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=target, capture_output=True, text=True, timeout=120
    )


def printed(target: Path, code: str) -> Any:
    """Run ``code`` with the installed copy first on the path; return its ``result``, through JSON."""
    proc = run(target, code + "\nimport json; print(json.dumps(result))")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_wheel_adds_one_top_level_name_and_carries_the_adapters(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"rewardkit", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "rewardkit/service/app.py" in names and "rewardkit/service/routes/score.py" in names
    assert "rewardkit/plugins/swift/rewards.py" in names
    assert not any("__pycache__" in name for name in names)


def test_the_installed_copy_finds_its_service_and_plugin(installed: tuple[Path, Path]) -> None:
    _, target = installed
    package, app, plugin, paths = printed(
        target,
        "import rewardkit, rewardkit.adapters as a\n"
        "from rewardkit.service.app import create_app\n"
        "paths = sorted(create_app().openapi()['paths'])\n"
        "result = [rewardkit.__file__, a.service_app(), str(a.plugin_path('swift')), paths]",
    )
    assert package.startswith(str(target))
    assert app == "rewardkit.service.app:create_app"
    assert plugin == str(target / "rewardkit" / "plugins" / "swift" / "rewards.py")
    assert {"/score", "/rewards", "/healthz"} <= set(paths)
    argv = "import sys; sys.argv = ['rewardkit', 'plugin-path', 'swift']\n"
    cli = run(target, argv + "from rewardkit.cli import main; main()")
    assert cli.returncode == 0 and cli.stdout.strip() == plugin
    others = printed(
        target,
        "import rewardkit.adapters as a\nresult = [str(a.plugin_path(t)) for t in ('verl', 'openrlhf')]",
    )
    assert others == [str(target / "rewardkit" / "adapters" / f) for f in ("verl_reward.py", "openrlhf.py")]


@pytest.mark.timeout(240)
def test_ms_swift_loads_the_installed_plugin(installed: tuple[Path, Path]) -> None:
    _, target = installed
    scores = printed(
        target,
        "import rewardkit.adapters as a\n"
        "from swift.utils.utils import import_external_file\n"
        "import_external_file(str(a.plugin_path('swift')))\n"
        "from swift.rewards import orms\n"
        "result = orms['external_countdown']()(['<answer>4 * 6</answer>'], target=[24], nums=[[4, 6]])",
    )
    assert scores == [1.0]
