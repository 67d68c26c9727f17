"""Fixtures of the trust-boundary tests: the operator's judge endpoint (a real loopback server) and the
key the operator configured for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_judge import FakeJudge

JUDGE_KEY = "sk-operator-judge-key"


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudge]:
    """The judge endpoint the operator configured (a module's service points at it)."""
    legit = FakeJudge()
    yield legit
    legit.close()
