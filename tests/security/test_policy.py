"""The trust boundary in-process: the policy, inline templates, image reading, the shared judge limit,
linear checks in the server process, and a service that knows rewards only through their contract."""

from __future__ import annotations

import ast
import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.concurrency import SharedLimit
from rewardkit.core import Reward, Verdict
from rewardkit.judging.images import ImageRefused, encode_image
from rewardkit.judging.templates import template_fields
from rewardkit.policy import CallerParam, PolicyError, RemotePolicy

ROOT = Path(__file__).resolve().parents[2]


def test_in_process_the_python_api_keeps_every_parameter() -> None:
    reward = rewardkit.get("math", workers=1, memory_mb=512, timeout_s=120.0, max_answer_chars=10**7)
    assert reward.params()["workers"] == 1 and reward.params()["timeout_s"] == 120.0


def test_server_values_apply_under_caller_values_and_are_not_published() -> None:
    policy = RemotePolicy({"math": {"workers": 1, "timeout_s": 2.0}, "countdown": {"format_score": 0.1}})
    assert policy.build("math").params()["workers"] == 1
    assert policy.build("math", {"timeout_s": 3.0}).params() == {
        "timeout_s": 3.0,
        "workers": 1,
        "memory_mb": 2048,
        "max_answer_chars": 1000,
        "extract": "standard",
        "rel_tol": 0.0,
        "precision": 6,
        "strict": True,
        "set_relations": False,
        "correct": 1.0,
        "wrong": 0.0,
    }
    described = policy.describe("math")
    assert described["workers"] == {"settable": False}  # the operator's value stays on the server
    assert described["timeout_s"]["default"] == 2.0 and described["timeout_s"]["cap"] == 60
    assert policy.build("countdown").params()["format_score"] == 0.1


def test_remote_defaults_close_files_and_urls_for_callers_only() -> None:
    judge = RemotePolicy().build("llm_judge")
    assert judge.local_files is False and judge.image_urls is False  # type: ignore[attr-defined]
    local = rewardkit.get("llm_judge")
    assert local.local_files is True and local.image_urls is True  # type: ignore[attr-defined]


def test_operator_caps_replace_the_defaults() -> None:
    policy = RemotePolicy(caps={"math": {"timeout_s": 10}})
    assert policy.build("math", {"timeout_s": 10}).params()["timeout_s"] == 10.0
    with pytest.raises(PolicyError, match="'timeout_s' is 11, over this server's cap of 10"):
        policy.build("math", {"timeout_s": 11})
    with pytest.raises(PolicyError, match="over this server's cap"):
        policy.build("math", {"timeout_s": float("nan")})


@pytest.mark.parametrize(
    "params, caps, message",
    [
        ({"nope": {}}, {}, "unknown reward 'nope'"),
        ({"math": {"threads": 2}}, {}, "has no parameter"),
        ({}, {"math": {"workers": 4}}, "not a parameter callers may set"),
        ({}, {"math": {"timeout_s": -1}}, "non-negative number"),
    ],
)
def test_a_bad_server_configuration_fails_at_start_up(
    params: dict[str, Any], caps: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RemotePolicy(params, caps)


def test_the_environment_configures_the_policy(tmp_path: Path) -> None:
    config = tmp_path / "rewards.json"
    config.write_text('{"math": {"workers": 1}}')
    policy = RemotePolicy.from_env(
        {"REWARDKIT_CONFIG": str(config), "REWARDKIT_CAPS": '{"math": {"timeout_s": 5}}'}
    )
    assert policy.server_params == {"math": {"workers": 1}} and policy.cap("math", "timeout_s") == 5
    with pytest.raises(ValueError, match="REWARDKIT_PARAMS is not valid JSON"):
        RemotePolicy.from_env({"REWARDKIT_PARAMS": "{"})
    with pytest.raises(ValueError, match="cannot read"):
        RemotePolicy.from_env({"REWARDKIT_CONFIG": str(tmp_path / "missing.json")})


class _Composite(Reward):
    """A reward built from another one named by the caller, as routing rewards and cosine are."""

    def __init__(self, inner: Any = "format", scale: float = 1.0) -> None:
        self.inner = inner if isinstance(inner, Reward) else rewardkit.get(inner)
        self.scale = scale

    def _score(self, completions: Any, columns: Any, raise_on_error: bool) -> list[Verdict]:
        scored = self.inner.score_detailed(completions, **columns)
        return [Verdict(None if v is None else v * self.scale) for v in scored.values]


@pytest.fixture
def composite(scratch_registry: None) -> str:
    rewardkit.register(
        "scaled_test",
        columns=[],
        caller_params={"inner": CallerParam(reward_spec=True), "scale": CallerParam(cap=10)},
    )(_Composite)
    return "scaled_test"


def test_nested_reward_specs_pass_the_same_policy_recursively(composite: str) -> None:
    policy = RemotePolicy()
    built = policy.build(composite, {"inner": {"name": "math", "params": {"timeout_s": 1.0}}, "scale": 2})
    assert isinstance(built, _Composite) and built.inner.params()["timeout_s"] == 1.0
    with pytest.raises(PolicyError, match="'workers' is a server setting"):
        policy.build(composite, {"inner": {"name": "math", "params": {"workers": 64}}})
    with pytest.raises(PolicyError, match="over this server's cap of 60"):
        policy.build(composite, {"inner": {"name": "math", "params": {"timeout_s": 1e9}}})
    deep: Any = "format"
    for _ in range(6):
        deep = {"name": composite, "params": {"inner": deep}}
    with pytest.raises(PolicyError, match="nested deeper"):
        policy.build(composite, {"inner": deep})
    assert policy.describe(composite)["inner"]["reward_spec"] is True


def test_template_placeholders_are_plain_names() -> None:
    assert template_fields("{question} {completion} {{x}}") == {"question", "completion"}
    for bad in ("{a.b}", "{a[0]}", "{a:>9}", "{a!r}", "{0}", "{}"):
        with pytest.raises(ValueError, match="plain"):
            template_fields(bad)
    with pytest.raises(rewardkit.RewardError, match="plain"):
        rewardkit.get("llm_judge", template="{completion} {x.y}")


def test_an_operator_template_file_is_read_but_never_a_callers(tmp_path: Path) -> None:
    path = tmp_path / "judge.txt"
    path.write_text("Grade: {completion} SCORE:2")
    assert rewardkit.get("llm_judge", template=str(path)).template == "Grade: {completion} SCORE:2"  # type: ignore[attr-defined]
    with pytest.raises(rewardkit.RewardError, match="must contain"):
        rewardkit.get("llm_judge", template=str(path), local_files=False)


def test_without_local_files_a_path_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []

    def read_bytes(self: Path) -> bytes:
        opened.append(self)
        return b""

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    (tmp_path / "exists.png").write_bytes(b"\x89PNG")
    reasons = set()
    for name in ("exists.png", "missing.png"):
        with pytest.raises(ImageRefused) as info:
            encode_image(str(tmp_path / name), 64, local_files=False)
        reasons.add(str(info.value))
    assert reasons == {"not_inline"} and opened == []
    with pytest.raises(ImageRefused, match="url_not_allowed"):
        encode_image("https://example.invalid/x.png", 64, image_urls=False)


def test_the_shared_limit_holds_across_threads_and_event_loops() -> None:
    limit = SharedLimit(3)
    peak = [0]
    lock = threading.Lock()

    async def one() -> None:
        async with limit:
            with lock:
                peak[0] = max(peak[0], limit.in_use)
            await asyncio.sleep(0.01)

    async def batch() -> None:
        await asyncio.gather(*(one() for _ in range(20)))

    threads = [threading.Thread(target=asyncio.run, args=(batch(),)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak[0] == 3 and limit.in_use == 0


def test_a_cancelled_waiter_gives_its_slot_back() -> None:
    limit = SharedLimit(1)

    async def main() -> None:
        await limit.acquire()
        waiter = asyncio.create_task(limit.acquire())
        await asyncio.sleep(0.01)
        waiter.cancel()
        limit.release()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.wait_for(limit.acquire(), 1)  # the slot is free again
        limit.release()

    asyncio.run(main())
    assert limit.in_use == 0


HOSTILE = {
    "digits_then_power": "1" * 1_000_000 + "^",
    "boxed_digits_power": "\\boxed{" + "1" * 1_000_000 + "^}",
    "digits_then_bang": "\\boxed{" + "9" * 1_000_000 + "}!",
    "carets": "\\boxed{" + "2^" * 500_000 + "}",
    "unclosed_boxes": "\\boxed{" * 140_000,
    "braces": "{" * 500_000 + "}" * 500_000,
    "answer_tags": "<answer>" * 120_000 + "1",
    "spaces_power": "<answer>1" + " " * 1_000_000 + "^2</answer>",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_reward_is_linear_on_1_mb_of_hostile_text(name: str) -> None:
    text = HOSTILE[name]
    n = 4
    columns = {"solution": ["1"] * n, "target": [24] * n, "nums": [[4, 6]] * n}
    # the largest limits a caller may set
    rewards = [rewardkit.get("math", max_answer_chars=100_000, timeout_s=60), rewardkit.get("countdown")]
    rewards += [rewardkit.get("format"), rewardkit.get("r1v_acc")]
    for reward in rewards:
        start = time.perf_counter()
        values = reward([text] * n, **columns)
        took = time.perf_counter() - start
        assert len(values) == n
        assert took < 5.0, f"{reward.__name__} took {took:.1f} s on {name}"  # linear: well under 1 s here


ALLOWED_IMPORTS = {
    "rewardkit",
    "rewardkit.adapters.openrlhf",  # reading OpenRLHF's requests: shared with its file form
    "rewardkit.core",
    "rewardkit.engine",
    "rewardkit.registry",
    "rewardkit.policy",
    "rewardkit.redact",  # masking secrets and cutting echoed values in answers and logs
}


def test_the_service_knows_rewards_only_through_their_contract() -> None:
    for path in (ROOT / "service").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            for module in modules:
                if module.startswith("rewardkit"):
                    assert module in ALLOWED_IMPORTS, f"{path.name} imports {module}"
                assert module.split(".")[0] not in {"pebble", "math_verify", "openai"}, path.name
        assert "_verifiers" not in path.read_text()


def test_numbers_too_large_for_a_float_are_a_bad_parameter_not_a_crash() -> None:
    for name, params in (("math", {"correct": 10**400}), ("repetition", {"max_penalty": -(10**400)})):
        with pytest.raises(rewardkit.RewardError, match="too large"):
            RemotePolicy().build(name, params)
    with pytest.raises(ValueError, match="non-negative number"):
        RemotePolicy(caps={"math": {"timeout_s": 10**400}})


def test_rewards_nested_in_the_operators_settings_are_built_as_remote_ones() -> None:
    """A judge the operator routes to keeps the remote defaults (no server files, no image URLs); a math
    reward inside cosine (its default accuracy, or the caller's) uses the operator's math settings."""
    settings = {"base_url": "http://judge/v1", "model": "m", "api_key_env": "HOME"}
    judge = {"name": "llm_judge", "params": settings}
    policy = RemotePolicy({"route": {"routes": {"j": judge}}, "math": {"workers": 1, "memory_mb": 512}})
    routed = policy.build("route", {}).params()["routes"]
    assert routed["j"] == "llm_judge"
    inner = policy.build("route", {})._rewards()["j"]  # type: ignore[attr-defined]
    assert inner.local_files is False and inner.image_urls is False
    for params in ({"max_len": 10}, {"max_len": 10, "accuracy": "math"}):
        math = policy.build("cosine", params).inner  # type: ignore[attr-defined]
        assert (math.workers, math.memory_mb) == (1, 512)
