"""The wheel: one top-level name (rewardkit), the service and the ms-swift plugin inside it, both usable
from the installed copy, found by `rewardkit plugin-path swift` and `rewardkit serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, a folder it was installed into without dependencies: those come from this venv)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    (wheel,) = out.glob("rewardkit-*.whl")
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    return wheel, target


def run(target: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(target)}  # before site-packages: the installed copy wins
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=target, capture_output=True, text=True, timeout=120
    )


def test_the_wheel_adds_one_top_level_name_and_carries_the_adapters(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"rewardkit", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "rewardkit/service/app.py" in names and "rewardkit/service/routes/score.py" in names
    assert "rewardkit/plugins/swift/rewards.py" in names
    assert not any("__pycache__" in name for name in names)


def test_the_installed_copy_finds_its_service_and_plugin(installed: tuple[Path, Path]) -> None:
    _, target = installed
    proc = run(
        target,
        "import json, rewardkit, rewardkit.adapters as a\n"
        "from rewardkit.service.app import create_app\n"
        "app = create_app()\n"
        "print(json.dumps([rewardkit.__file__, a.service_app(), str(a.plugin_path('swift')),"
        " sorted(app.openapi()['paths'])]))",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    package, app, plugin, paths = json.loads(proc.stdout.strip().splitlines()[-1])
    assert package.startswith(str(target))
    assert app == "rewardkit.service.app:create_app"
    assert plugin == str(target / "rewardkit" / "plugins" / "swift" / "rewards.py")
    assert {"/score", "/rewards", "/healthz"} <= set(paths)
    argv = "import sys; sys.argv = ['rewardkit', 'plugin-path', 'swift']\n"
    cli = run(target, argv + "from rewardkit.cli import main; main()")
    assert cli.returncode == 0 and cli.stdout.strip() == plugin


@pytest.mark.timeout(240)
def test_ms_swift_loads_the_installed_plugin(installed: tuple[Path, Path]) -> None:
    _, target = installed
    proc = run(
        target,
        "import json, rewardkit.adapters as a\n"
        "from swift.utils.utils import import_external_file\n"
        "import_external_file(str(a.plugin_path('swift')))\n"
        "from swift.rewards import orms\n"
        "reward = orms['external_countdown']()\n"
        "print(json.dumps(reward(['<answer>4 * 6</answer>'], target=[24], nums=[[4, 6]])))",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [1.0]
