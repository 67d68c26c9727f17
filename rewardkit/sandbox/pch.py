"""A precompiled ``bits/stdc++.h`` per host and flag set, so that competitive programs compile several times
faster (most of a typical solution's compile time is parsing that header).

Built once, on first use, by the host's ``g++`` with a language's own flags (a precompiled header is used
only with the flags it was built with) from the system's ``bits/stdc++.h`` (the distribution's header, not
a program's: so it is built outside the sandbox), into ``<cache>/<key>/bits/stdc++.h.gch``, where ``key``
hashes the compiler (its path, version, and ``cc1plus``'s size and time), the header (path, size, time) and
the flags: an upgraded compiler gets a new one. ``cache`` is the operator's ``pch_dir`` setting: ``"auto"``
(``$XDG_CACHE_HOME/rewardkit/pch``, else ``~/.cache/rewardkit/pch``), a directory, or ``"off"``.

Built safely: into a fresh temporary directory beside the final one, made readable by all (a root
service's sandboxes run as other users), then renamed into place in one step; of builders racing (threads,
service workers) the first rename wins and the others throw theirs away; a thread waits for its process's
build. A build that fails is not tried again in the process (compiles go on without it, a warning logged).

A compile sandbox sees the directory read-only at its host path, and ``g++`` is given it with ``-I``: it
looks for ``bits/stdc++.h.gch`` there before the header, so a program whose first line includes
``<bits/stdc++.h>`` reads the precompiled one, and any other compiles as without it.

>>> cache_dir("off") is None, cache_dir("/var/cache/pch")
(True, '/var/cache/pch')
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading

from rewardkit.sandbox.languages import Language

__all__ = ["cache_dir", "include_dir"]

logger = logging.getLogger("rewardkit")
_BUILD_TIMEOUT_S = 600.0
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C"}
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_failed: set[str] = set()


def cache_dir(setting: str) -> str | None:
    """Where precompiled headers are kept for the ``pch_dir`` setting (``None``: off)."""
    if setting == "off":
        return None
    if setting != "auto":
        return setting
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rewardkit", "pch")


def _run(argv: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the host's compiler on the host's header
        argv, input=stdin, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, env=_ENV, check=False
    )


@functools.cache
def _header(compiler: str, flags: tuple[str, ...]) -> str | None:
    """The path of the ``bits/stdc++.h`` that ``compiler`` includes with ``flags`` (``-H`` names it)."""
    said = _run(
        [compiler, *flags, "-x", "c++", "-E", "-H", "-o", "/dev/null", "-"], "#include <bits/stdc++.h>\n"
    )
    for line in said.stderr.splitlines():
        if line.startswith(". ") and line.endswith("bits/stdc++.h"):
            return line[2:]
    return None


@functools.cache
def _key(compiler: str, flags: tuple[str, ...], header: str) -> str:
    """Once a process: a compiler upgraded under a running service is seen at its restart."""
    cc1 = _run([compiler, "-print-prog-name=cc1plus"]).stdout.strip()
    facts: list[object] = [os.path.realpath(compiler), _run([compiler, "--version"]).stdout.split("\n")[0]]
    for path in (cc1, header):
        try:
            stat = os.stat(path)
            facts.append([os.path.realpath(path), stat.st_size, stat.st_mtime_ns])
        except OSError:
            facts.append(path)
    facts.append(list(flags))
    return hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:24]


def _build(compiler: str, flags: tuple[str, ...], header: str, final: str) -> None:
    parent = os.path.dirname(final)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".build-", dir=parent)
    try:
        os.mkdir(os.path.join(work, "bits"))
        target = os.path.join(work, "bits", "stdc++.h.gch")
        said = _run([compiler, *flags, "-x", "c++-header", header, "-o", target])
        if said.returncode != 0:
            raise OSError(f"g++ could not build it: {said.stderr.strip()[:500]}")
        for path, mode in ((work, 0o755), (os.path.join(work, "bits"), 0o755), (target, 0o644)):
            os.chmod(path, mode)
        try:
            os.rename(work, final)  # one step: a compile sees the whole header or none
        except OSError:
            if not os.path.isdir(final):  # not another builder's win: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def include_dir(language: Language, compiler: str, setting: str) -> str | None:
    """The directory to give ``compiler`` with ``-I`` for ``language``'s flags (it holds
    ``bits/stdc++.h.gch``), built on first use; ``None`` when the language has none, the setting is
    ``"off"``, or building failed (logged once). Blocks while it builds (seconds): call it off the loop."""
    root = cache_dir(setting)
    if not language.pch or root is None:
        return None
    flags = language.flags()
    try:
        header = _header(compiler, flags)
        final = os.path.realpath(os.path.join(root, _key(compiler, flags, header))) if header else None
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("no precompiled bits/stdc++.h (compiles go on without it): %s", exc)
        return None
    if final is None or header is None:
        return None
    if os.path.isfile(os.path.join(final, "bits", "stdc++.h.gch")):
        return final
    with _locks_guard:
        lock = _locks.setdefault(final, threading.Lock())
    with lock:
        if final in _failed:
            return None
        if not os.path.isfile(os.path.join(final, "bits", "stdc++.h.gch")):
            try:
                _build(compiler, flags, header, final)
            except (OSError, subprocess.SubprocessError) as exc:
                _failed.add(final)
                logger.warning(
                    "no precompiled bits/stdc++.h in %s (compiles go on without it): %s", root, exc
                )
                return None
    return final
