"""The wheel: one top-level name (rewardkit), the service and the ms-swift plugin inside it, both usable
from the installed copy, found by `rewardkit plugin-path swift` and `rewardkit serve`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.helpers import ROOT, Server


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


# --- release: one version everywhere, and the README's install lines for a trainer's venv -----------------

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
#: where each file names the version: an image tag, a wheel's file name, the image's OCI label
MENTIONS = re.compile(
    r"(?<![/\w])rewardkit:(\d+\.[\w.]*)|rewardkit-(\d[\w.]*)-py3|image\.version=\"([^\"]+)\""
)
NAMED_IN = [
    "README.md",
    "deploy/README.md",
    "deploy/kubernetes.yaml",
    "deploy/Dockerfile",
    "deploy/ray_serve.yaml",
]


def test_every_place_names_the_version_of_pyproject(tmp_path: Path) -> None:
    for name in NAMED_IN:
        found = {"".join(groups) for groups in MENTIONS.findall((ROOT / name).read_text())}
        assert found == {VERSION}, f"{name} names {found}, pyproject {VERSION}"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    heading = re.search(r"^## (\S+) \((\d{4}-\d\d-\d\d)\)$", changelog, re.MULTILINE)
    assert heading is not None and heading[1] == VERSION  # the first release heading is this version's
    script = Path(sys.executable).parent / "rewardkit"
    cli = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert cli.stdout.strip() == f"rewardkit {VERSION}", "refresh the metadata: pip install --no-deps -e ."
    server = Server({}, tmp_path / "server.log")
    try:
        assert httpx.get(server.url + "/rewards", timeout=30).json()["version"] == VERSION
    finally:
        server.stop()


def install_lines() -> list[str]:
    """The README's `pip install '...'` lines of its Install section, as written there."""
    section = (ROOT / "README.md").read_text().split("\n## Install\n")[1].split("\n## ")[0]
    return [line for line in section.splitlines() if line.startswith("pip install '")]


def in_venv(venv: Path, line: str) -> subprocess.CompletedProcess[str]:
    """Run a shell line as a user would with ``venv`` activated, outside the checkout."""
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        ["bash", "-c", line], env=env, cwd=venv.parent, capture_output=True, text=True, timeout=240
    )


def installed_copy(venv: Path) -> None:
    """``venv`` imports rewardkit from its own site-packages, and its `rewardkit --version` is this one."""
    shown = in_venv(venv, "python -c 'import rewardkit; print(rewardkit.__file__)' && rewardkit --version")
    assert shown.returncode == 0, shown.stderr[-3000:]
    where, version = shown.stdout.strip().splitlines()
    assert where.startswith(str(venv)) and version == f"rewardkit {VERSION}"


def test_the_readme_names_every_extra_and_its_service_line_serves_every_reward() -> None:
    """Issue 34.5: every extra of pyproject is named in the README's Install section (``code`` and ``client``
    were not), and its service line installs the extras of the rewards that need one, so that the server it
    gives lists none of them as unavailable at /readyz."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    section = (ROOT / "README.md").read_text().split("\n## Install\n")[1].split("\n## ")[0]
    in_lines = {name for group in re.findall(r"\[([a-z,]+)\]'", section) for name in group.split(",")}
    named = {e for e in extras if f"`{e}`" in section or e in in_lines}
    assert sorted(set(extras) - named) == []
    (service,) = [line for line in install_lines() if "[service" in line]
    installs = set(re.findall(r"\[([a-z,]+)\]'", service)[0].split(","))
    assert {"service", "math", "judge", "code"} <= installs, service


@pytest.mark.timeout(300)
def test_the_readmes_install_lines_install_into_a_fresh_venv(tmp_path: Path) -> None:
    """The core line from a checkout, then `make wheel` and the wheel line (with the quick `service` extra
    for its `swift`: torch and ms-swift take minutes), each in a new venv as `python -m venv` makes it."""
    lines = install_lines()
    (core,) = [line for line in lines if line.startswith("pip install '/path/to/rewardkit'")]
    (wheel_line,) = [line for line in lines if ".whl[" in line]
    assert f"dist/rewardkit-{VERSION}-py3-none-any.whl" in wheel_line
    for name in ("checkout", "wheel"):
        subprocess.run([sys.executable, "-m", "venv", str(tmp_path / name)], check=True, timeout=120)
    done = in_venv(tmp_path / "checkout", core.replace("/path/to/rewardkit", str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    installed_copy(tmp_path / "checkout")

    dist = tmp_path / "dist"
    make = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "wheel", f"DIST={dist}"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert make.returncode == 0, make.stdout + make.stderr
    assert f"{dist}/rewardkit-{VERSION}-py3-none-any.whl" in make.stdout.splitlines()
    quick = re.sub(r"\[[a-z,]+\]'", "[service]'", wheel_line.replace("'dist/", f"'{dist}/"))
    done = in_venv(tmp_path / "wheel", quick)
    assert done.returncode == 0, done.stderr[-3000:]
    installed_copy(tmp_path / "wheel")
    app = in_venv(tmp_path / "wheel", "python -c 'import rewardkit.service.app'")
    assert app.returncode == 0, app.stderr[-3000:]


def test_no_document_installs_rewardkit_from_an_index() -> None:
    """`pip install 'rewardkit[...]'` finds nothing: every document names a checkout or a wheel."""
    listed = ["git", "ls-files", "*.md", "deploy/*"]
    documents = subprocess.run(listed, cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert "README.md" in documents and "deploy/ray_serve.yaml" in documents
    for document in documents:
        for line in (ROOT / document).read_text().splitlines():
            assert not re.search(r"pip install '?rewardkit([\['\s]|$)", line), f"{document}: {line}"


@pytest.mark.timeout(420)
def test_the_client_extra_brings_the_client_and_nothing_of_the_server(tmp_path: Path) -> None:
    """Issue 34.4: in a trainer's venv without the client's extra, importing the client names the extra
    (it raised a bare ModuleNotFoundError for httpx); the README's `[client]` line then installs the client
    alone (no FastAPI, no uvicorn), and it scores through a real service."""
    lines = install_lines()
    (core,) = [line for line in lines if line.startswith("pip install '/path/to/rewardkit'")]
    (client_line,) = [line for line in lines if "[client]'" in line]
    venv = tmp_path / "trainer"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = in_venv(venv, core.replace("/path/to/rewardkit", str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    importing = "python -c 'from rewardkit.client import remote_reward'"
    missing = in_venv(venv, importing)
    assert missing.returncode == 1
    last = missing.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ImportError: the rewardkit client needs httpx: pip install '/path/to/rewardkit[client]'"
    )
    assert "ModuleNotFoundError" not in missing.stderr, missing.stderr

    done = in_venv(venv, client_line.replace("/path/to/rewardkit", str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    server = Server({}, tmp_path / "server.log")
    try:
        scored = in_venv(
            venv,
            "python -c '"
            "import importlib.util as u, json\n"
            "from rewardkit.client import remote_reward\n"
            f'fmt = remote_reward("format", "{server.url}")\n'
            'server = [m for m in ("fastapi", "uvicorn", "starlette") if u.find_spec(m) is not None]\n'
            'print(json.dumps([fmt(["<think>a</think><answer>b</answer>", "no"]), server]))\'',
        )
    finally:
        server.stop()
    assert scored.returncode == 0, scored.stderr[-3000:]
    assert json.loads(scored.stdout.strip().splitlines()[-1]) == [[1.0, 0.0], []]
