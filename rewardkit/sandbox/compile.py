"""Compiling a program inside a sandbox of its own: the compiler's limits, the binary or its diagnostics.

The entry point, for the code reward and for checkers::

    await compile_program(source: str, language: Language | str, limits: CompileLimits | None = None,
                          config: SandboxConfig | None = None) -> Compiled | CompileError

runs the language's compile command (:mod:`rewardkit.sandbox.languages`) in a fresh sandbox
(:mod:`rewardkit.sandbox.build` inside: every guarantee of :mod:`rewardkit.sandbox`, with the compiler's
own limits: wall clock, each process's address space, processes at once, output, the binary's size, and a
memory cgroup of ``memory_mb + disk_mb + 64`` MB where the host has one), with the precompiled
``bits/stdc++.h`` of :mod:`rewardkit.sandbox.pch` visible read-only where the language has one. It returns
the binary (:class:`Compiled`, to run with ``run_sandbox``: see :func:`run_fields`) or
:class:`CompileError` with the compiler's first lines. Results are kept per process, keyed by language,
flags and source (:data:`CACHE_BYTES` of binaries at most): a checker or a program seen again is not
compiled again. :func:`compile_all` compiles a batch's distinct programs once each, concurrently, within
a caller's bound on sandboxes at once.

Raises :class:`CompilerMissing` where the host has no such compiler (an operator's problem: install it)
and :class:`~rewardkit.sandbox.run.SandboxError` where the sandbox cannot start.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import hashlib
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.sandbox.bwrap import WORK_DIR, SandboxConfig
from rewardkit.sandbox.languages import Language, by_name
from rewardkit.sandbox.pch import include_dir
from rewardkit.sandbox.run import Limits, run_sandbox

__all__ = [
    "CACHE_BYTES",
    "CompileError",
    "CompileLimits",
    "Compiled",
    "CompilerMissing",
    "clear_cache",
    "compile_all",
    "compile_program",
    "run_fields",
]

CACHE_BYTES = 128 << 20
SHOWN_LINES = 20  # the compiler's first lines kept in a compile error
SHOWN_CHARS = 2000
BINARY_PATH = f"{WORK_DIR}/prog"
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class CompilerMissing(FileNotFoundError):
    """The host has no compiler for a language; the message names it and how to install it."""


@dataclass(frozen=True)
class CompileLimits:
    """A compile sandbox's limits: ``timeout_s`` of wall clock (its CPU the next whole second),
    ``memory_mb`` each compiler process's address space (and, with ``disk_mb``, the sandbox's cgroup),
    ``processes`` at once (``g++`` runs ``cc1plus``, ``as``, ``collect2``, ``ld``), ``binary_mb`` the
    largest binary (and file), ``disk_mb`` the work directory (source, objects, binary)."""

    timeout_s: float = 30.0
    memory_mb: int = 2048
    processes: int = 16
    open_files: int = 256
    binary_mb: int = 32  # within a test sandbox's 64 MB work directory, with room for stdin
    disk_mb: int = 256

    def sandbox(self) -> Limits:
        """The sandbox's limits for one compile."""
        return Limits(
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            output_bytes=self.binary_mb << 20,
            processes=self.processes,
            open_files=self.open_files,
            file_mb=self.binary_mb,
            disk_mb=self.disk_mb,
        )


@dataclass(frozen=True)
class Compiled:
    """A compiled program: its language's name, binary and how long the compile took."""

    language: str
    binary: bytes
    seconds: float = 0.0


@dataclass(frozen=True)
class CompileError:
    """A program that does not compile: the compiler's first lines (or which limit stopped it)."""

    language: str
    message: str
    seconds: float = 0.0


def run_fields(compiled: Compiled) -> dict[str, Any]:
    """The fields a test job adds to run ``compiled`` (``run_sandbox``'s job: ``binary``, ``binary_path``,
    ``run``)."""
    argv = by_name(compiled.language).run_argv(BINARY_PATH)
    return {"binary": compiled.binary, "binary_path": BINARY_PATH, "run": list(argv)}


def compiler(language: Language) -> str:
    """The host path of ``language``'s compiler; :class:`CompilerMissing` naming the package otherwise."""
    name = (language.compile or ("?",))[0]
    # the service's PATH first, then the system's directories (a service started with an empty PATH)
    found = shutil.which(name) or shutil.which(name, path=_SYSTEM_PATH)
    if found is None:
        package = {"g++": "g++", "gcc": "gcc"}.get(name, name)
        raise CompilerMissing(
            f"{language.name} programs need {name}, which this host lacks: install it (Debian/Ubuntu: "
            f"apt-get install {package}; `make install` does)"
        )
    return found


def first_lines(text: str) -> str:
    """The first :data:`SHOWN_LINES` lines of ``text``, within :data:`SHOWN_CHARS` characters.

    >>> len(first_lines("a\\n" * 30).splitlines()), first_lines("x" * 5000)[-21:]
    (20, '... (5000 characters)')
    """
    lines = text.splitlines()
    kept = "\n".join(lines[:SHOWN_LINES])
    if len(kept) > SHOWN_CHARS:
        kept = kept[:SHOWN_CHARS]
    return kept + (f"... ({len(text)} characters)" if kept != text.rstrip("\n") else "")


class _Cache:
    """Finished compiles by key, least recently used first out, within :data:`CACHE_BYTES`."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.size = capacity, 0
        self.items: collections.OrderedDict[str, Compiled | CompileError] = collections.OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def _cost(value: Compiled | CompileError) -> int:
        return 256 + (len(value.binary) if isinstance(value, Compiled) else len(value.message))

    def get(self, key: str) -> Compiled | CompileError | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: str, value: Compiled | CompileError) -> None:
        with self.lock:
            if key in self.items:
                return
            self.items[key] = value
            self.size += self._cost(value)
            while self.size > self.capacity and self.items:
                _, old = self.items.popitem(last=False)
                self.size -= self._cost(old)


_cache = _Cache(CACHE_BYTES)


def _key(source: str, language: Language, argv: Sequence[str], limits: CompileLimits) -> str:
    digest = hashlib.sha256()
    for part in (language.name, "\0".join(argv), repr(limits), source):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0\0")
    return digest.hexdigest()


async def compile_program(
    source: str,
    language: Language | str,
    limits: CompileLimits | None = None,
    config: SandboxConfig | None = None,
) -> Compiled | CompileError:
    """Compile ``source`` in a sandbox (see the module's docstring); a result seen before comes from the
    cache."""
    language = by_name(language) if isinstance(language, str) else language
    limits = limits or CompileLimits()
    config = config or SandboxConfig()
    path = compiler(language)
    include = await asyncio.to_thread(include_dir, language, path, config.pch_dir)
    source_path = f"{WORK_DIR}/{language.source}"
    extra = ("-I", include) if include else ()
    argv = language.compile_argv(source_path, BINARY_PATH, extra)
    argv = (path, *argv[1:])
    key = _key(source, language, argv, limits)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    seen = dataclasses.replace(config, ro_paths=(*config.ro_paths, include)) if include else config
    job = {
        "kind": "compile",
        "program": source,
        "fn_name": None,
        "inputs": [],
        "source_path": source_path,
        "binary_path": BINARY_PATH,
        "argv": list(argv),
    }
    sandbox = limits.sandbox()
    began = time.monotonic()
    run = await run_sandbox(job, sandbox, seen, wall_s=sandbox.startup_s + limits.timeout_s + 2.0)
    seconds = time.monotonic() - began
    result: Compiled | CompileError
    if run.binary is not None:
        result = Compiled(language.name, run.binary, seconds)
    elif run.compile_error is not None:
        result = CompileError(language.name, first_lines(run.compile_error), seconds)
    else:  # the sandbox's own wall clock, or its memory cgroup: the compiler's limits
        why = "killed for memory" if run.oom_killed else f"ended: {run.ended}"
        result = CompileError(language.name, f"the compile sandbox {why}", seconds)
        if run.ended not in ("wall_clock", "output_limit") and not run.oom_killed:
            return result  # a crash of the sandbox, not the program's doing: not kept
    _cache.put(key, result)
    return result


async def compile_all(
    programs: Sequence[tuple[str, Language]],
    limits: CompileLimits | None = None,
    config: SandboxConfig | None = None,
    bound: contextlib.AbstractAsyncContextManager[Any] | None = None,
) -> list[Compiled | CompileError]:
    """Each (source, language)'s compile, in order; identical ones compiled once, concurrently, each
    within ``bound`` (a shared limit on sandboxes at once) when given."""
    slot: dict[tuple[str, str], int] = {}
    unique: list[tuple[str, Language]] = []
    for source, language in programs:
        if (source, language.name) not in slot:
            slot[(source, language.name)] = len(unique)
            unique.append((source, language))

    async def one(source: str, language: Language) -> Compiled | CompileError:
        if bound is None:
            return await compile_program(source, language, limits, config)
        async with bound:
            return await compile_program(source, language, limits, config)

    tasks = [asyncio.ensure_future(one(source, language)) for source, language in unique]
    try:
        done = await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [done[slot[(source, language.name)]] for source, language in programs]


def clear_cache() -> None:
    """Forget every kept compile (tests, benchmarks)."""
    global _cache
    _cache = _Cache(CACHE_BYTES)
