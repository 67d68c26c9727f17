"""deploy/kubernetes.yaml agrees with the service it deploys, and its readiness probe really works."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from service.app import create_app
from service.settings import Settings
from tests.helpers import TOKEN, Server

MANIFEST = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes.yaml"


@pytest.fixture(scope="module")
def container() -> dict[str, Any]:
    documents = list(yaml.safe_load_all(MANIFEST.read_text()))
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    service = next(d for d in documents if d["kind"] == "Service")
    (spec,) = deployment["spec"]["template"]["spec"]["containers"]
    assert service["spec"]["ports"][0]["targetPort"] == spec["ports"][0]["containerPort"]
    return spec  # type: ignore[no-any-return]


def test_manifest_matches_the_app(container: dict[str, Any]) -> None:
    command = container["command"]
    assert command[:2] == ["rewardkit", "serve"]
    assert command[command.index("--port") + 1] == str(container["ports"][0]["containerPort"])
    paths = set(create_app(Settings()).openapi()["paths"])
    assert container["livenessProbe"]["httpGet"]["path"] in paths
    assert "/readyz" in " ".join(container["readinessProbe"]["exec"]["command"])
    known = {f"REWARDKIT_{name.upper()}" for name in Settings.model_fields} | {"REWARDKIT_MATH_WORKERS"}
    for variable in container["env"]:
        assert variable["name"] in known, variable["name"]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server({"REWARDKIT_API_TOKEN": TOKEN}, tmp_path_factory.mktemp("deploy") / "server.log")
    yield server
    server.stop()


def test_prometheus_scrapes_the_annotated_path_without_a_token(
    container: dict[str, Any], tmp_path: Path
) -> None:
    documents = list(yaml.safe_load_all(MANIFEST.read_text()))
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    env = {v["name"]: v["value"] for v in container["env"] if "value" in v}
    env["REWARDKIT_MATH_WORKERS"] = "1"  # this machine is smaller than the pod
    server = Server({**env, "REWARDKIT_API_TOKEN": TOKEN}, tmp_path / "server.log")
    try:
        scraped = httpx.get(server.url + annotations["prometheus.io/path"], timeout=30)
        assert scraped.status_code == 200 and "rewardkit_requests_total" in scraped.text
        assert httpx.get(server.url + "/rewards", timeout=30).status_code == 401  # the rest stays closed
    finally:
        server.stop()


def test_readiness_probe_command_passes_with_the_token_and_fails_without(
    container: dict[str, Any], secured: Server
) -> None:
    _, flag, code = container["readinessProbe"]["exec"]["command"]
    code = code.replace("http://127.0.0.1:8000", secured.url)
    ok = subprocess.run(
        [sys.executable, flag, code], env={**os.environ, "REWARDKIT_API_TOKEN": TOKEN}, timeout=60
    )
    assert ok.returncode == 0
    bad = subprocess.run(
        [sys.executable, flag, code],
        env={**os.environ, "REWARDKIT_API_TOKEN": "wrong"},
        capture_output=True,
        timeout=60,
    )
    assert bad.returncode != 0 and b"401" in bad.stderr
