"""deploy/kubernetes.yaml agrees with the service it deploys, and its readiness probe really works."""

from __future__ import annotations

import json
import os
import re
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
MAIN, CODE = "rewardkit", "rewardkit-code"  # the Deployments: every reward but code; code in its sandboxes


def resource(kind: str, name: str) -> dict[str, Any]:
    """The manifest's resource of this kind and name."""
    found = [
        d
        for d in yaml.safe_load_all(MANIFEST.read_text())
        if (d["kind"], d["metadata"]["name"]) == (kind, name)
    ]
    assert len(found) == 1, (kind, name)
    return found[0]  # type: ignore[no-any-return]


def pod_of(name: str) -> dict[str, Any]:
    return resource("Deployment", name)["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def container_of(name: str) -> dict[str, Any]:
    (spec,) = pod_of(name)["containers"]
    service = resource("Service", name)
    assert (
        service["spec"]["selector"] == resource("Deployment", name)["spec"]["template"]["metadata"]["labels"]
    )
    assert service["spec"]["ports"][0]["targetPort"] == spec["ports"][0]["containerPort"]
    return spec  # type: ignore[no-any-return]


def env_of(name: str) -> dict[str, str]:
    """The container's plain environment values (not the Secret's)."""
    return {v["name"]: v["value"] for v in container_of(name)["env"] if "value" in v}


@pytest.fixture(scope="module")
def container() -> dict[str, Any]:
    return container_of(MAIN)


@pytest.mark.parametrize("name", [MAIN, CODE])
def test_manifest_matches_the_app(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    container = container_of(name)
    command = container["command"]
    assert command[:2] == ["rewardkit", "serve"]
    assert command[command.index("--port") + 1] == str(container["ports"][0]["containerPort"])
    paths = set(create_app(Settings()).openapi()["paths"])
    assert container["livenessProbe"]["httpGet"]["path"] in paths
    assert "/readyz" in " ".join(container["readinessProbe"]["exec"]["command"])
    known = {f"REWARDKIT_{name.upper()}" for name in Settings.model_fields} | {"REWARDKIT_MATH_WORKERS"}
    for variable in container["env"]:
        assert variable["name"] in known, variable["name"]
    for key, value in env_of(name).items():
        monkeypatch.setenv(key, value)
    Settings().policy()  # the settings parse, and name only rewards, parameters and caps that exist


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
    for name in (MAIN, CODE):
        for kind in ("deployment", "service", "horizontalpodautoscaler"):
            assert f"passed for resource {kind}/{name} " in proc.stdout + proc.stderr
    assert f"passed for resource networkpolicy/{CODE} " in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", [MAIN, CODE])
def test_the_autoscaler_scales_the_deployment_and_cpu_matches_the_pool(name: str) -> None:
    hpa = resource("HorizontalPodAutoscaler", name)
    deployment = resource("Deployment", name)
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]  # the autoscaler owns the count
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    pod, container, env = pod_of(name), container_of(name), env_of(name)
    # a pod scaled away finishes its requests: its preStop sleep, then the drain, within the grace period
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    drain = int(env["REWARDKIT_SHUTDOWN_TIMEOUT_S"])
    assert drain > float(env["REWARDKIT_REQUEST_TIMEOUT_S"])
    assert pre_stop + drain + 10 <= pod["terminationGracePeriodSeconds"]
    # HPA utilisation is of the request: one math worker, or one sandbox at once, per CPU requested
    pool = env["REWARDKIT_MATH_WORKERS"] if name == MAIN else str(code_params()["max_concurrency"])
    assert container["resources"]["requests"]["cpu"] == pool


def code_params() -> dict[str, Any]:
    return json.loads(env_of(CODE)["REWARDKIT_PARAMS"])["code"]  # type: ignore[no-any-return]


def mebibytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) << (10 if unit == "Gi" else 0)


def image_user() -> int:
    (user,) = re.findall(r"^USER (\d+)(?::\d+)?$", (DEPLOY / "Dockerfile").read_text(), re.MULTILINE)
    return int(user)


def test_the_main_pod_stays_strict() -> None:
    """Loosening seccomp or AppArmor here would weaken every other reward's isolation: the main pod keeps the
    runtime's default seccomp profile (pinned, not left to the kubelet) and gets nothing the sandbox needs."""
    pod = pod_of(MAIN)
    context = container_of(MAIN)["securityContext"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == image_user() != 0
    assert context == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    assert "hostUsers" not in pod and pod["automountServiceAccountToken"] is False
    shown = yaml.safe_dump(resource("Deployment", MAIN))
    assert "Unconfined" not in shown and "Unmasked" not in shown and '"code"' not in shown


def test_the_code_pod_gets_what_bwrap_needs_and_nothing_more() -> None:
    pod, container = pod_of(CODE), container_of(CODE)
    security = pod["securityContext"]
    assert security["seccompProfile"] == {"type": "Unconfined"}  # the runtimes' defaults refuse unshare/mount
    assert security["appArmorProfile"] == {"type": "Unconfined"}  # docker-default and its kin deny mount
    assert container["securityContext"]["procMount"] == "Unmasked"  # a masked /proc: bwrap cannot mount one
    assert pod["hostUsers"] is False  # the API server refuses Unmasked without it; root in it is nobody
    assert security["runAsNonRoot"] is True and security["runAsUser"] == image_user() != 0
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == tmp["name"]]
    assert "emptyDir" in volume and volume["emptyDir"].get("medium") is None  # writable, not noexec
    assert pod["automountServiceAccountToken"] is False and pod["enableServiceLinks"] is False
    token = {v["name"]: v for v in container["env"]}["REWARDKIT_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    main = {v["name"]: v for v in container_of(MAIN)["env"]}["REWARDKIT_API_TOKEN"]["valueFrom"]
    assert (
        token["name"] != main["secretKeyRef"]["name"]
    )  # a pod running untrusted programs holds its own token
    policy = resource("NetworkPolicy", CODE)["spec"]
    labels = resource("Deployment", CODE)["spec"]["template"]["metadata"]["labels"]
    main_labels = resource("Deployment", MAIN)["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"] == labels and not labels.items() <= main_labels.items()
    assert policy["policyTypes"] == ["Egress"] and policy["egress"] == []  # nothing reachable from it
    assert env_of(CODE)["REWARDKIT_OPENRLHF_FUNCS"] == "code"


def test_the_code_pods_memory_covers_its_sandboxes() -> None:
    """Sandboxes at once x (a test's address space at its cap + the sandbox's work tmpfs) + 1 GiB for the
    service, as a Guaranteed pod (requests = limits)."""
    from rewardkit.sandbox import Limits

    resources = container_of(CODE)["resources"]
    assert resources["requests"] == resources["limits"]
    caps = json.loads(env_of(CODE)["REWARDKIT_CAPS"])["code"]
    params = code_params()
    assert params["memory_mb"] <= caps["memory_mb"]  # the default within the cap callers are held to
    needed = params["max_concurrency"] * (caps["memory_mb"] + Limits().disk_mb) + 1024
    assert mebibytes(resources["limits"]["memory"]) >= needed


@pytest.fixture(scope="module")
def code_pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A service with the code pod's settings (this machine runs bwrap)."""
    env = {**env_of(CODE), "REWARDKIT_MATH_WORKERS": "1", "REWARDKIT_API_TOKEN": TOKEN}
    server = Server(env, tmp_path_factory.mktemp("code-pod") / "server.log")
    yield server
    server.stop()


def run_probe(container: dict[str, Any], url: str) -> subprocess.CompletedProcess[str]:
    _, flag, code = container["readinessProbe"]["exec"]["command"]
    env = {**os.environ, "REWARDKIT_API_TOKEN": TOKEN}
    code = code.replace("http://127.0.0.1:8000", url)
    return subprocess.run([sys.executable, flag, code], env=env, capture_output=True, text=True, timeout=90)


def test_the_code_pods_settings_score_code_and_hold_callers_to_the_memory_cap(code_pod: Server) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    tests = {"inputs": ["3\n", "5\n"], "outputs": ["6\n", "10\n"]}
    programs = ["```python\nprint(int(input()) * 2)\n```", "```python\nprint(int(input()) + 1)\n```"]
    body: dict[str, Any] = {"funcs": ["code"], "completions": programs, "columns": {"tests": [tests, tests]}}
    scored = httpx.post(code_pod.url + "/score", json=body, headers=auth, timeout=120)
    assert scored.status_code == 200 and scored.json()["scores"]["code"] == [1.0, 0.0], scored.text
    cap = json.loads(env_of(CODE)["REWARDKIT_CAPS"])["code"]["memory_mb"]
    body["funcs"] = [{"name": "code", "params": {"memory_mb": cap + 1}}]
    over = httpx.post(code_pod.url + "/score", json=body, headers=auth, timeout=60)
    assert over.status_code == 422 and f"cap of {cap}" in over.text


def test_the_code_pods_readiness_probe_needs_a_sandbox_that_starts(code_pod: Server, tmp_path: Path) -> None:
    """/readyz is 200 while code is unavailable (the other rewards are not held back), so the code pod's
    probe reads the code reward's own state: ready here, not ready where bwrap cannot start."""
    ready = run_probe(container_of(CODE), code_pod.url)
    assert ready.returncode == 0, ready.stderr[-2000:]
    broken = json.dumps({"code": {**code_params(), "bwrap": "/bin/false"}})
    env = {
        **env_of(CODE),
        "REWARDKIT_PARAMS": broken,
        "REWARDKIT_MATH_WORKERS": "1",
        "REWARDKIT_API_TOKEN": TOKEN,
    }
    server = Server(env, tmp_path / "server.log")
    try:
        failed = run_probe(container_of(CODE), server.url)
        assert failed.returncode != 0 and "AssertionError: unavailable: " in failed.stderr, failed.stderr
        assert run_probe(container_of(MAIN), server.url).returncode == 0  # what the main pod's probe says
    finally:
        server.stop()


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
    """The Dockerfile's `pip install ".[service,math,judge,code]"`, from a copy of what it COPYs, into a new
    venv: it serves and scores, and installs neither torch nor ms-swift."""
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
