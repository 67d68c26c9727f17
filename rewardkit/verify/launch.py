"""How math worker processes start: from a forkserver that already imported SymPy and Math-Verify, so a
killed worker is replaced in milliseconds, and without the parent's ``__main__``.

multiprocessing would re-import the parent's ``__main__`` script in every worker (for a trainer: torch,
transformers, the whole CLI), or break on a script without a main guard; the workers need nothing from
``__main__``, so their start data leaves it out.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import threading
from multiprocessing import popen_forkserver, spawn
from typing import Any

__all__ = ["bare_forkserver_context"]

_launching_bare = threading.local()


class _BarePopen(popen_forkserver.Popen):
    def _launch(self, process_obj: Any) -> None:
        _launching_bare.active = True
        try:
            super()._launch(process_obj)  # type: ignore[misc]
        finally:
            _launching_bare.active = False


class _BareProcess(multiprocessing.context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        return _BarePopen(process_obj)


class _BareForkServerContext(multiprocessing.context.ForkServerContext):
    Process = _BareProcess


def bare_forkserver_context() -> multiprocessing.context.ForkServerContext:
    original = spawn.get_preparation_data
    if not getattr(original, "_rewardkit_bare", False):

        def get_preparation_data(name: str) -> dict[str, Any]:
            data: dict[str, Any] = original(name)
            if getattr(_launching_bare, "active", False):
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        get_preparation_data._rewardkit_bare = True  # type: ignore[attr-defined]
        spawn.get_preparation_data = get_preparation_data
    context = _BareForkServerContext()
    context.set_forkserver_preload(["rewardkit.verify.worker"])
    return context
