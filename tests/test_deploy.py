"""deploy/kubernetes.yaml agrees with the service it deploys, and its readiness probe really works."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from service.app import create_app
from service.settings import Settings
from tests.support.helpers import ROOT, TOKEN, Server

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


DEPLOY = MANIFEST.parent


def test_manifests_validate_against_the_kubernetes_schemas_offline() -> None:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "kubernetes-validate"), "--strict", str(MANIFEST)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for kind in ("deployment/rewardkit", "service/rewardkit", "horizontalpodautoscaler/rewardkit"):
        assert f"passed for resource {kind}" in proc.stdout + proc.stderr


def test_the_autoscaler_scales_the_deployment_and_cpu_matches_the_math_pool(
    container: dict[str, Any],
) -> None:
    documents = list(yaml.safe_load_all(MANIFEST.read_text()))
    hpa = next(d for d in documents if d["kind"] == "HorizontalPodAutoscaler")
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]  # the autoscaler owns the count
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    timeout = next(v["value"] for v in container["env"] if v["name"] == "REWARDKIT_REQUEST_TIMEOUT_S")
    assert grace > float(timeout)  # a pod scaled away finishes its requests
    workers = next(v["value"] for v in container["env"] if v["name"] == "REWARDKIT_MATH_WORKERS")
    assert container["resources"]["requests"]["cpu"] == workers  # HPA utilisation is of the request


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    proc = subprocess.run(
        [str(hadolint), str(DEPLOY / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_ray_serve_config_is_a_valid_serve_deploy_config() -> None:
    import warnings

    with warnings.catch_warnings():  # Ray's schema module uses pydantic features pydantic deprecates
        warnings.simplefilter("ignore", DeprecationWarning)
        from ray.serve.schema import ServeDeploySchema

    config = ServeDeploySchema.model_validate(yaml.safe_load((DEPLOY / "ray_serve.yaml").read_text()))
    (application,) = config.applications
    assert application.import_path == "rewardkit.service.ray_serve:app"
    assert config.http_options.port == 8000


@pytest.mark.timeout(600)
def test_the_images_install_line_installs_and_serves_in_a_fresh_venv(tmp_path: Path) -> None:
    """The Dockerfile's `pip install ".[service,math,judge]"`, from a copy of what it COPYs, into a new venv:
    it serves and scores, and installs neither torch nor ms-swift."""
    import re
    import shutil
    import venv

    dockerfile = (DEPLOY / "Dockerfile").read_text()
    (extras,) = re.findall(r'pip install --no-cache-dir "\.\[([a-z,]+)\]"', dockerfile)
    context = tmp_path / "src"
    context.mkdir()
    for copied in re.findall(r"^COPY (?!--from)(.+) \S+$", dockerfile, re.MULTILINE):
        for name in copied.split():
            source = ROOT / name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, context / name)
    venv.create(tmp_path / "venv", with_pip=True)
    pip = tmp_path / "venv" / "bin" / "pip"
    install = subprocess.run(
        [str(pip), "install", "--quiet", f"{context}[{extras}]"], capture_output=True, text=True, timeout=540
    )
    assert install.returncode == 0, install.stderr[-3000:]
    listed = subprocess.run(
        [str(pip), "list", "--format=freeze"], capture_output=True, text=True, timeout=120
    ).stdout.lower()
    assert "torch==" not in listed and "ms-swift==" not in listed and "ray==" not in listed
    from tests.test_scale_out import free_port

    port = free_port()
    server = subprocess.Popen(
        [str(tmp_path / "venv" / "bin" / "rewardkit"), "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        body = {"funcs": ["math", "format"], "completions": ["\\boxed{2}"], "columns": {"solution": ["2"]}}
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.post(f"http://127.0.0.1:{port}/score", json=body, timeout=30)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.5)
        assert response.status_code == 200 and response.json()["scores"]["math"] == [1.0]
    finally:
        server.terminate()
        server.wait(30)
