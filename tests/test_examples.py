"""rewardkit/examples/: each script runs as a user runs it (``python -m rewardkit.examples.NAME``), imports
only what the install lines at its top bring, and is run by a test.

The trainers' examples run in the trainers' own tests, which they replace: TRL's and ms-swift's GRPO runs in
tests/test_trl_e2e.py and tests/test_swift_e2e.py, veRL's own loader in tests/test_verl.py. The service
examples start `rewardkit serve` themselves here, and must stop it.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.helpers import ROOT, TOKEN

EXAMPLES = ROOT / "rewardkit" / "examples"
PUBLIC = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))


def run_example(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARDKIT_")}
    return subprocess.run(
        [sys.executable, "-m", f"rewardkit.examples.{name}", *args],
        cwd=ROOT,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=240,
    )


def stopped(output: str) -> str:
    """The URL of the service the example said it started, checked to be gone now that it has exited."""
    (url,) = re.findall(r"started `rewardkit serve` at (http://127\.0\.0\.1:\d+)", output)
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/healthz", timeout=5)
    return str(url)


@pytest.mark.timeout(300)
def test_the_client_example_starts_a_service_scores_on_it_and_stops_it() -> None:
    proc = run_example("client")
    assert proc.returncode == 0, proc.stderr[-3000:]
    url = stopped(proc.stdout)
    lines = proc.stdout.splitlines()
    assert "countdown + format: [2.0, 1.0, 0.0]" in lines
    assert "countdown: [1.0, 0.0, 0.0]" in lines and "format: [1.0, 1.0, 0.0]" in lines
    remote = "remote_reward('countdown', format_score=0.1): [1.0, 0.1, 0.0] in process: [1.0, 0.1, 0.0]"
    assert remote in lines
    (refused,) = [line for line in lines if line.startswith("refused before sending:")]
    assert f"'workers' is a server setting on {url}" in refused


@pytest.mark.timeout(300)
def test_the_openrlhf_example_sends_openrlhfs_requests_with_the_token_in_the_url() -> None:
    """With REWARDKIT_API_TOKEN set, the service it starts requires the token, and the example's requests
    carry it in the URL (no headers, as OpenRLHF): every sample is answered."""
    proc = run_example("openrlhf", env={"REWARDKIT_API_TOKEN": TOKEN})
    assert proc.returncode == 0, proc.stderr[-3000:]
    url = stopped(proc.stdout)
    assert TOKEN not in proc.stdout  # the flag it prints names the variable, not the token
    flag = f"{url}/get_reward?funcs=countdown,format&token=$REWARDKIT_API_TOKEN"
    assert f'OpenRLHF\'s flag: --reward.remote_url "{flag}"' in proc.stdout.splitlines()
    answers = [line.split(" <- ")[0] for line in proc.stdout.splitlines() if " <- " in line]
    assert answers == [
        '{"rewards": [2.0], "scores": [1.0], "extra_logs": {"countdown": [1.0], "format": [1.0]}}',
        '{"rewards": [1.0], "scores": [0.0], "extra_logs": {"countdown": [0.0], "format": [1.0]}}',
        '{"rewards": [0.0], "scores": [0.0], "extra_logs": {"countdown": [0.0], "format": [0.0]}}',
    ]


#: the scores of the veRL example's rows: gsm8k right and wrong, MATH, countdown right and with a power,
#: math_dapo wrong (-1, veRL's DAPO values)
VERL_SCORES = [1.0, 0.0, 1.0, 1.0, 0.0, -1.0]


def verl_scores(output: str) -> list[float]:
    return [float(line.split()[0]) for line in output.splitlines()[1:]]


@pytest.mark.parametrize("name", ["compute_score_async", "compute_score"])
def test_the_verl_example_without_verl_loads_the_file_by_path(name: str) -> None:
    proc = run_example("verl", "--name", name)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"{name} loaded by path, as veRL's loader does (no veRL here: ")
    assert verl_scores(proc.stdout) == VERL_SCORES


def test_every_example_is_run_by_a_test() -> None:
    assert PUBLIC == ["client", "openrlhf", "swift", "trl", "verl"]
    tests = "\n".join(
        p.read_text() for p in (ROOT / "tests").glob("test_*.py") if p.name != "test_examples.py"
    )
    here = Path(__file__).read_text()
    for name in PUBLIC:
        assert f'run_example("{name}"' in here or f'"rewardkit.examples.{name}"' in tests, name


# --- what each example imports, against what its install lines bring ----------------------------------------


def install_lines(name: str) -> list[str]:
    """The requirements of the ``pip install`` lines in the example's docstring (comments cut)."""
    doc = ast.get_docstring(ast.parse((EXAMPLES / f"{name}.py").read_text())) or ""
    found = []
    for line in doc.splitlines():
        if line.strip().startswith("pip install "):
            found += [word.strip("'") for word in line.split("#")[0].split()[2:]]
    return found


def imported(module: str, seen: set[str] | None = None) -> set[str]:
    """The top-level names of the distributions' modules ``module`` imports, following the examples' own
    helper modules. An import under ``except ImportError`` is optional (veRL's, where veRL is installed)."""
    seen = seen if seen is not None else set()
    if module in seen:
        return set()
    seen.add(module)
    tree = ast.parse((EXAMPLES / f"{module}.py").read_text())
    optional = {
        id(node)
        for handler_owner in ast.walk(tree)
        if isinstance(handler_owner, ast.Try)
        and any(isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in handler_owner.handlers)
        for statement in handler_owner.body
        for node in ast.walk(statement)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in optional or not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for target in targets:
            if target.startswith("rewardkit.examples."):
                names |= imported(target.rsplit(".", 1)[1], seen)
            elif (top := target.split(".")[0]) not in sys.stdlib_module_names and top != "rewardkit":
                names.add(top)
    return names


def brought(requirements: list[str]) -> set[str]:
    """The distributions those requirements install here: rewardkit's extras as pyproject.toml declares them,
    the others' dependencies as their installed metadata declares them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [
        Requirement(r if not r.startswith("/path/to/rewardkit") else r[len("/path/to/") :])
        for r in requirements
    ]
    names: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = set(req.extras)
        if name == "rewardkit":
            declared = list(project["dependencies"])
            for extra in extras:
                declared += project["optional-dependencies"][extra]
            todo += [Requirement(r) for r in declared]
            continue
        if name in names:
            continue
        names.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:  # not for this platform, or not installed here: brings nothing here
            continue
        for line in requires:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append(dep)
    return names


@pytest.mark.parametrize("name", PUBLIC)
def test_each_example_imports_only_what_its_install_lines_bring(name: str) -> None:
    lines = install_lines(name)
    assert any(r.startswith("/path/to/rewardkit[") for r in lines), f"{name}: no install line for rewardkit"
    installs = brought(lines)
    providers = packages_distributions()
    for module in sorted(imported(name)):
        dists = {canonicalize_name(d) for d in providers.get(module, [module])}
        assert dists & installs, f"{name} imports {module} ({dists}), which {lines} do not install"
