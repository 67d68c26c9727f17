"""The ``rewardkit serve`` and ``rewardkit plugin-path`` commands: run the scoring service (uvicorn, or Ray
Serve), and print where a trainer's plugin file is."""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import sys
import tempfile
from typing import Annotated, Any

import typer

from rewardkit.cli.common import fail

__all__ = ["plugin_path_command", "serve_command"]


def serve_command(
    host: Annotated[str, typer.Option(metavar="HOST", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, metavar="N", help="uvicorn worker processes.")] = 1,
    ray: Annotated[
        bool, typer.Option("--ray", help="Serve with Ray Serve (local Ray, or the cluster in RAY_ADDRESS).")
    ] = False,
    replicas: Annotated[int, typer.Option(min=1, metavar="N", help="--ray: replicas (fixed).")] = 2,
    min_replicas: Annotated[
        int | None, typer.Option(min=0, metavar="N", help="--ray: autoscale from this many.")
    ] = None,
    max_replicas: Annotated[
        int | None, typer.Option(min=1, metavar="N", help="--ray: autoscale up to this many.")
    ] = None,
    target_ongoing_requests: Annotated[
        float,
        typer.Option(
            min=0.1, metavar="N", help="--ray: autoscaling's target requests in flight per replica."
        ),
    ] = 4.0,
    cpus_per_replica: Annotated[
        float,
        typer.Option(
            min=0.01, metavar="CPUS", help="--ray: CPUs each replica asks Ray for (its math pool's size)."
        ),
    ] = 1.0,
) -> None:
    """Run the scoring service (POST /score, /get_reward, /rewards, /metrics; docs at /docs)."""
    from rewardkit.adapters import service_app

    try:
        import uvicorn
    except ImportError:
        fail("the service needs its extra: pip install '/path/to/rewardkit[service]'")
    package = service_app().split(":")[0].rsplit(".", 1)[0]  # service, or rewardkit.service from a wheel
    if ray:
        if not os.environ.get("RAY_ADDRESS"):
            # A Ray of our own listens on loopback only, whatever --host the service answers on: Ray's own
            # ports have no authentication. (Ray reads this when it is imported, below.)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            module = importlib.import_module(package + ".ray_serve")
        except ImportError:
            fail("--ray needs Ray Serve: pip install '/path/to/rewardkit[ray]'")
        settings = _settings(package)
        options = module.RayOptions(
            replicas=replicas,
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            target_ongoing_requests=target_ongoing_requests,
            cpus=cpus_per_replica,
            shutdown_timeout_s=settings.shutdown_timeout_s,
        )
        module.run(host, port, options)
        sys.stdout.flush()
        os._exit(0)  # Ray's exit hooks ran already (bounded); the ones left could wait on a gone raylet
    settings = _settings(package)
    if workers > 1 and not os.environ.get("REWARDKIT_MATH_WORKERS"):
        # the workers share the cores: each one's math pool gets its part of them, not all of them
        os.environ["REWARDKIT_MATH_WORKERS"] = str(max(1, (os.cpu_count() or 1) // workers))
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # /metrics sums over every worker (prometheus_client's multiprocess mode): a fresh directory a run
        directory = tempfile.mkdtemp(prefix="rewardkit-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
    # Slow clients and shutdown (the ASGI guard bounds the body and checks the token: service/middleware.py):
    # - a request head must arrive within REWARDKIT_HEADER_TIMEOUT_S (uvicorn has no such bound: this
    #   protocol adds it, service/protocol.py);
    # - limit_concurrency: a request that finds REWARDKIT_MAX_CONNECTIONS connections (or tasks) open in
    #   this process gets uvicorn's 503, so trickling clients cannot take every file descriptor's worth of
    #   work; the head timeout closes them;
    # - timeout_graceful_shutdown: on SIGTERM, idle connections close at once, requests in flight get
    #   REWARDKIT_SHUTDOWN_TIMEOUT_S to finish (310 s: the longest request, 300 s, and its body fit, under
    #   the pod's 330 s grace less its 5 s preStop), then are cancelled and the process exits.
    uvicorn.run(
        service_app(),
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=f"{package}.protocol:HeadTimeoutProtocol",
        limit_concurrency=settings.max_connections,
        timeout_graceful_shutdown=settings.shutdown_timeout_s,
    )


def plugin_path_command(
    trainer: Annotated[
        str, typer.Argument(help="The trainer: swift (ms-swift), verl or openrlhf.")
    ] = "swift",
) -> None:
    """Print the path of a trainer's plugin file: ms-swift's --external_plugins, veRL's
    reward.custom_reward_function.path, OpenRLHF's --reward.remote_url (the file form)."""
    from rewardkit.adapters import plugin_path

    try:
        typer.echo(str(plugin_path(trainer)))
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))


def _settings(package: str) -> Any:
    """The service's settings from ``REWARDKIT_*``; a setting that does not parse, or a service that cannot
    be imported, is said on stderr and ends the command (exit 2) before anything starts."""
    from rewardkit.redact import redact_secrets

    try:
        return importlib.import_module(package + ".settings").Settings()
    except ValueError as exc:  # a REWARDKIT_* setting that does not parse: say which, start nothing
        fail(redact_secrets(str(exc)))
    except ImportError as exc:  # an install without the service's modules
        fail(f"the service cannot be imported ({exc})")
