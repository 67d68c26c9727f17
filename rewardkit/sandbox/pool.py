"""Many sandboxes at once, bounded across the process, within the request's deadline.

A batch's jobs run concurrently on the caller's event loop, at most ``size`` sandboxes at a time across
every batch, thread and loop of the process (:class:`~rewardkit.concurrency.SharedLimit`; default the CPU
count). Jobs with the same ``key`` (a GRPO group's identical programs against the same tests) run once.
A job in a compiled language (its payload's ``language``: :mod:`rewardkit.sandbox.languages`) is compiled
first, each distinct source of the batch once, in sandboxes of their own within the same bound
(:func:`rewardkit.sandbox.compile.compile_all`, the pool's ``compile_limits``); one that does not compile
is a ``compile_error`` run without a test sandbox.
Each sandbox's wall clock is cut to the request's deadline (:func:`rewardkit.core.remaining_s`); a run cut
by it raises :class:`~rewardkit.core.DeadlineExceeded`.

Before its first run a pool makes sure the sandbox starts at all (:func:`problem`): where it cannot (no
user namespaces, a masked ``/proc``), the batch raises :class:`SandboxUnavailable`, whose message names the
fix. Nothing ever runs outside the sandbox.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.concurrency import SharedLimit
from rewardkit.core import BackendUnavailable, DeadlineExceeded, check_deadline, remaining_s
from rewardkit.sandbox.bwrap import SandboxConfig, bwrap_binary
from rewardkit.sandbox.compile import Compiled, CompileLimits, compile_all, run_fields
from rewardkit.sandbox.languages import LANGUAGES, by_name
from rewardkit.sandbox.run import Limits, RunResult, SandboxError, TestResult, run_sandbox

__all__ = ["FIX", "Job", "SandboxPool", "SandboxUnavailable", "problem", "shared_pool"]

FIX = (
    "the code reward runs programs only inside bubblewrap and never without it. Give the service what bwrap "
    "needs: unprivileged user namespaces when it runs as a normal user (sysctl user.max_user_namespaces > 0; "
    "kernel.unprivileged_userns_clone=1 on Debian; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu "
    "24.04+), CAP_SYS_ADMIN when it runs as root (better: run it as a normal user); in Docker --security-opt "
    "seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined; in "
    "Kubernetes securityContext seccompProfile and appArmorProfile Unconfined and procMount: Unmasked "
    "(deploy/README.md)"
)
_PROBE = {"kind": "stdio", "program": "print(input())", "fn_name": None, "inputs": ["sandbox-ok"]}
_PROBE_LIMITS = Limits(timeout_s=10.0, startup_s=20.0)
_started: set[SandboxConfig] = set()  # configurations whose sandbox has started once in this process


class SandboxUnavailable(BackendUnavailable):
    """The sandbox cannot start on this host; the message says why and how to fix it."""


@dataclass(frozen=True)
class Job:
    """One sandbox's work: the harness's job (``kind``, ``program``, ``fn_name``, ``inputs``), its limits,
    the key under which identical jobs of a batch run once, and the caller's look at each result."""

    payload: Mapping[str, Any]
    limits: Limits
    key: str
    on_result: Callable[[TestResult], bool] | None = None


async def problem(config: SandboxConfig | None = None, timeout_s: float = 30.0) -> str | None:
    """Why a sandbox cannot start here (bwrap's own words and the fix), or ``None`` when one can; a success
    is remembered for the process."""
    config = config or SandboxConfig()
    if config in _started:
        return None
    try:
        bwrap_binary(config)
        result = await run_sandbox(_PROBE, _PROBE_LIMITS, config, wall_s=timeout_s)
    except (SandboxError, FileNotFoundError) as exc:
        return f"{exc}; {FIX}"
    tests = result.tests
    if not tests or tests[0].status != "ok" or tests[0].stdout.strip() != "sandbox-ok":
        said = tests[0] if tests else result.detail or result.ended
        return f"the sandbox started but a probe program failed in it ({said}); {FIX}"
    _started.add(config)
    return None


class SandboxPool:
    """Runs jobs in sandboxes, at most ``size`` at once across the process (default: the CPU count)."""

    def __init__(
        self,
        size: int | None = None,
        config: SandboxConfig | None = None,
        compile_limits: CompileLimits | None = None,
    ) -> None:
        self.size = size or os.cpu_count() or 1
        self.config = config or SandboxConfig()
        self.compile_limits = compile_limits or CompileLimits()
        self._limit = SharedLimit(self.size)
        self._stats_lock = threading.Lock()
        self._stats = {"runs": 0.0, "deduplicated": 0.0, "wall_clock_kills": 0.0, "startup_s_total": 0.0}
        self._stats["compiles"] = self._stats["compile_errors"] = 0.0

    async def run(self, jobs: Sequence[Job]) -> list[RunResult]:
        """Each job's result, in order; identical keys share one run.

        Raises:
            SandboxUnavailable: the sandbox cannot start on this host (the message names the fix).
            DeadlineExceeded: the request's deadline passed; every sandbox of the batch was killed.
        """
        if not jobs:
            return []
        why = await problem(self.config)
        if why is not None:
            raise SandboxUnavailable(why)
        slot: dict[str, int] = {}
        unique: list[Job] = []
        for job in jobs:
            if job.key not in slot:
                slot[job.key] = len(unique)
                unique.append(job)
        with self._stats_lock:
            self._stats["deduplicated"] += len(jobs) - len(unique)
        unique, failed = await self._compile(unique)
        tasks = [asyncio.ensure_future(self._one(job)) for job in unique if job.key not in failed]
        try:
            ran = iter(await asyncio.gather(*tasks))
        finally:  # one failure (the deadline) ends the batch: no sandbox goes on without it
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        results = [failed[job.key] if job.key in failed else next(ran) for job in unique]
        return [results[slot[job.key]] for job in jobs]

    async def _compile(self, jobs: list[Job]) -> tuple[list[Job], dict[str, RunResult]]:
        """The jobs with their programs compiled (``binary``, ``binary_path``, ``run`` added), and a
        ``compile_error`` result for each that did not compile."""
        wanted = [i for i, job in enumerate(jobs) if _compiled(job)]
        if not wanted:
            return jobs, {}
        check_deadline("code")
        programs = [(jobs[i].payload["program"], by_name(jobs[i].payload["language"])) for i in wanted]
        made = await compile_all(programs, self.compile_limits, self.config, self._limit)
        check_deadline("code")  # a compile runs to its own wall clock at most: no test sandbox past it
        out, failed = list(jobs), {}
        for i, result in zip(wanted, made, strict=True):
            if isinstance(result, Compiled):
                out[i] = dataclasses.replace(jobs[i], payload={**jobs[i].payload, **run_fields(result)})
            else:
                failed[jobs[i].key] = RunResult(ended="compile_error", compile_error=result.message)
        with self._stats_lock:
            self._stats["compiles"] += len({program for program in programs})
            self._stats["compile_errors"] += len(failed)
        return out, failed

    async def _one(self, job: Job) -> RunResult:
        async with self._limit:
            check_deadline("code")
            wall = job.limits.wall_s(len(job.payload["inputs"]))
            left = remaining_s()
            cut = left is not None and left < wall
            result = await run_sandbox(
                job.payload, job.limits, self.config, on_result=job.on_result, wall_s=left if cut else wall
            )
        with self._stats_lock:
            self._stats["runs"] += 1
            self._stats["startup_s_total"] += result.startup_s or 0.0
            self._stats["wall_clock_kills"] += result.ended == "wall_clock"
        if cut and result.ended == "wall_clock":
            raise DeadlineExceeded("code: the request deadline passed; its sandboxes were killed")
        return result

    def stats(self) -> dict[str, float]:
        """Sandboxes run, jobs deduplicated, runs killed at their wall clock, mean start-up seconds, distinct
        programs compiled (a batch's; some may come from the process's cache) and those that did not."""
        with self._stats_lock:
            out = dict(self._stats)
        total = out.pop("startup_s_total")
        out["startup_s_mean"] = total / out["runs"] if out["runs"] else 0.0
        return out


_pools: dict[tuple[int | None, SandboxConfig], SandboxPool] = {}
_pools_lock = threading.Lock()


def _compiled(job: Job) -> bool:
    language = LANGUAGES.get(str(job.payload.get("language") or "python"))
    return language is not None and language.compiled


def shared_pool(size: int | None, config: SandboxConfig) -> SandboxPool:
    """The process's pool for ``size`` and ``config``: rewards configured alike share one bound."""
    with _pools_lock:
        pool = _pools.get((size, config))
        if pool is None:
            pool = _pools[(size, config)] = SandboxPool(size, config)
        return pool
