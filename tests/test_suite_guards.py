"""The suite guards itself (issue 34): a skip that ``tests/conftest.py``'s ``ALLOWED_SKIPS`` does not name
fails ``make test``; every allowed skip says why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ALLOWED_SKIPS

ROOT = Path(__file__).resolve().parents[1]


def test_an_unexpected_skip_fails_the_run() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/support/skips_probe.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout[-2000:]
    assert "unexpected skips" in run.stdout
    assert "tests/support/skips_probe.py::test_a_skip_nobody_allowed" in run.stdout


def test_every_allowed_skip_names_a_test_and_a_reason() -> None:
    for node, why in ALLOWED_SKIPS.items():
        path, _, name = node.partition("::")
        assert (ROOT / path).exists() and f"def {name}(" in (ROOT / path).read_text(), node
        assert len(why) > 20, node
