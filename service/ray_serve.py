"""The scoring service as a Ray Serve application: the same FastAPI app in N replicas behind Serve's proxy.

``rewardkit serve --ray --replicas N`` starts a local Ray instance (or joins the cluster ``RAY_ADDRESS``
names) and serves on ``--host/--port``; ``deploy/ray_serve.yaml`` runs it with ``serve deploy`` on a
cluster, its import path being ``service.ray_serve:app`` (``rewardkit.service.ray_serve:app`` when installed
from a wheel).

Each replica builds the app itself (nothing is pickled but settings), sizes its math pool to the CPUs Ray
gives it, and answers with ``X-Rewardkit-Replica`` (host:pid). The replicas of one machine write their
metrics to one directory (prometheus_client's multiprocess mode, as ``--workers``), so ``/metrics``
answered by any of them holds that machine's totals; Serve's own request counts come from Ray's metrics
export.

Of the slow-client bounds, the ASGI guard's (the token before the body, the body's size and time limits)
hold in every replica; a replica stopped by Serve gets ``REWARDKIT_SHUTDOWN_TIMEOUT_S`` to finish its
requests (Serve's ``graceful_shutdown_timeout_s``), and ``max_ongoing_requests`` caps what each one takes at
once. Request heads and connections are Serve's proxy's to bound.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from ray import serve

from .metrics import MULTIPROC_ENV
from .settings import Settings

__all__ = ["RayOptions", "application", "run"]  # and `app`, built on import (below)


def _replica_app() -> FastAPI:
    """Runs in each replica: its math pool gets the CPUs Ray assigned to it (at least one process)."""
    import ray

    from .app import create_app

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")  # type: ignore[no-untyped-call]
    if cpus and not os.environ.get("REWARDKIT_MATH_WORKERS"):
        os.environ["REWARDKIT_MATH_WORKERS"] = str(max(1, math.floor(cpus)))
    return create_app()


@serve.ingress(_replica_app)
class Rewardkit:
    """A replica of the scoring service (the routes are the FastAPI app's)."""


@dataclass(frozen=True)
class RayOptions:
    """How the deployment scales: a fixed ``replicas`` count, or autoscaling between ``min_replicas`` and
    ``max_replicas`` towards ``target_ongoing_requests`` per replica; ``cpus`` per replica (fractions
    allowed)."""

    replicas: int = 2
    min_replicas: int | None = None
    max_replicas: int | None = None
    target_ongoing_requests: float = 4.0
    cpus: float = 1.0
    shutdown_timeout_s: float = Settings.model_fields["shutdown_timeout_s"].default

    def deployment_options(self, metrics_dir: str | None = None) -> dict[str, Any]:
        # A local Ray's replicas inherit this process's environment; only where to add up their metrics is
        # passed. Settings that are not secrets go along to a cluster's nodes (Ray logs a runtime_env):
        # tokens and keys belong in the nodes' own environment there.
        env = {} if metrics_dir is None else {MULTIPROC_ENV: metrics_dir}
        if os.environ.get("RAY_ADDRESS"):
            env.update({k: v for k, v in os.environ.items() if k.startswith("REWARDKIT_") and not _secret(k)})
        options: dict[str, Any] = {
            "name": "rewardkit",
            "ray_actor_options": {"num_cpus": self.cpus, "runtime_env": {"env_vars": env}},
            "max_ongoing_requests": 64,
            "health_check_period_s": 5,
            "graceful_shutdown_timeout_s": self.shutdown_timeout_s,  # requests in flight finish first
        }
        if self.min_replicas is not None or self.max_replicas is not None:
            low = self.min_replicas if self.min_replicas is not None else 1
            high = self.max_replicas if self.max_replicas is not None else max(low, self.replicas)
            if not 0 <= low <= high or high < 1:
                raise ValueError(f"replicas: need 0 <= min ({low}) <= max ({high}) and max >= 1")
            options["autoscaling_config"] = {
                "min_replicas": low,
                "max_replicas": high,
                "target_ongoing_requests": self.target_ongoing_requests,
            }
        else:
            if self.replicas < 1:
                raise ValueError(f"replicas must be at least 1, got {self.replicas}")
            options["num_replicas"] = self.replicas
        return options


def _secret(name: str) -> bool:
    return any(word in name for word in ("TOKEN", "KEY", "SECRET", "PASSWORD"))


def application(options: RayOptions | None = None, metrics_dir: str | None = None) -> Any:
    """The bound Serve application (``serve.run(application(...))``); ``metrics_dir``: where the replicas of
    one machine add up their metrics."""
    chosen = options or RayOptions()
    deployment: Any = serve.deployment(Rewardkit)
    return deployment.options(**chosen.deployment_options(metrics_dir)).bind()


def __getattr__(name: str) -> Any:  # `serve deploy` / `serve run service.ray_serve:app`: built on import
    if name == "app":
        return application(
            RayOptions(
                replicas=int(os.environ.get("REWARDKIT_RAY_REPLICAS", "2")),
                cpus=float(os.environ.get("REWARDKIT_RAY_CPUS", "1")),
                shutdown_timeout_s=Settings().shutdown_timeout_s,
            )
        )
    raise AttributeError(name)


def run(host: str, port: int, options: RayOptions) -> None:
    """Serve until SIGTERM or SIGINT (or until Ray goes away), then stop what it started: with a local Ray,
    the application, Serve, Ray and every process they run; on a cluster named by ``RAY_ADDRESS``, only this
    application (the cluster and other applications keep running)."""
    import signal

    import psutil
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    stop = threading.Event()
    address = os.environ.get("RAY_ADDRESS")
    started, directory = not ray.is_initialized() and not address, None
    children: list[Any] = []
    try:
        if started:  # a Ray of our own, on loopback (see the CLI), its replicas sharing a metrics directory
            ray.init(include_dashboard=False, logging_level=logging.WARNING, _node_ip_address="127.0.0.1")
            directory = tempfile.mkdtemp(prefix="rewardkit-metrics-")
        elif not ray.is_initialized():
            ray.init(address=address, logging_level=logging.WARNING)
        # after ray.init, which installs handlers of its own (they would abort the process)
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, lambda *_: stop.set())
        serve.start(http_options={"host": host, "port": port})
        bound = application(options, metrics_dir=directory)
        # serve.run waits for the replicas without a timeout: in a thread, so that a signal still stops us
        starting = threading.Thread(
            target=serve.run, args=(bound,), kwargs={"name": "rewardkit", "route_prefix": "/"}, daemon=True
        )
        starting.start()
        while starting.is_alive() and not stop.wait(0.5):
            pass
        if not stop.is_set():
            print(f"rewardkit on Ray Serve: http://{host}:{port} ({options})", flush=True)
        while not stop.wait(5):
            if not ray.is_initialized():
                break
        # Who to stop, listed while they are still ours: once the raylet exits, its workers (the replicas and
        # their math pools) belong to init and would outlive us.
        children = psutil.Process().children(recursive=True) if started else []
    finally:
        for number in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the cleanup short
            signal.signal(number, signal.SIG_IGN)
        if started:
            children = children or psutil.Process().children(recursive=True)
            # Bounded: a Ray whose raylet is gone (a signal to the whole process group) would wait forever.
            _bounded(serve.shutdown, 20)
            _bounded(ray.shutdown, 20)
            _stop(children + psutil.Process().children(recursive=True))
        elif ray.is_initialized():
            _bounded(lambda: serve.delete("rewardkit"), 20)  # ours only: shutdown() deletes every app
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def _bounded(call: Any, seconds: float) -> None:
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(seconds)


def _stop(children: list[Any], grace_s: float = 10.0) -> None:
    """Every process in ``children`` is gone when it returns (terminated, then killed)."""
    import psutil

    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=grace_s)
