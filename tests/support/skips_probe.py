"""A test that skips, run by ``tests/test_suite_guards.py`` in a pytest of its own: a skip the allow-list
does not name must fail the run."""

import pytest


def test_a_skip_nobody_allowed() -> None:
    pytest.skip("a package this run should have had")
