"""``/docs`` and ``/redoc`` render without internet access: their scripts and styles come from the service
itself (service/docs.py), proved by a real headless browser that may resolve no host but loopback. A browser
sends no token: the server runs with REWARDKIT_DOCS_PUBLIC, as one whose pages people read does."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import TOKEN, Server

INSTALL = "apt-get update && apt-get install -y chromium"  # Debian's package; `make test` runs it
REFERENCE = re.compile(r"""(?:href|src|spec-url)="([^"]*)"|url: '([^']*)'""")
KINDS = {".js": "javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"REWARDKIT_API_TOKEN": TOKEN, "REWARDKIT_DOCS_PUBLIC": "true"}
    s = Server(env, tmp_path_factory.mktemp("docs") / "server.log")
    yield s
    s.stop()


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_pages_load_only_files_the_service_serves(secured: Server, page: str) -> None:
    html = httpx.get(secured.url + page).text  # no token: REWARDKIT_DOCS_PUBLIC opens the pages
    assert "://" not in html and not re.search(r"""["'(]//""", html), html  # no other host, no CDN
    references = [a or b for a, b in REFERENCE.findall(html)]
    assert "/openapi.json" in references and len(references) >= 3, references
    for path in references:
        assert path.startswith("/"), path
        response = httpx.get(secured.url + path)
        assert response.status_code == 200, path
        assert KINDS[Path(path).suffix] in response.headers["content-type"], path
        assert len(response.content) > 1000, path
    assert httpx.get(secured.url + "/rewards").status_code == 401  # the token rules are unchanged


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(f"the /docs browser test needs Debian's chromium, which is not installed: {INSTALL}")
    return found


def _render(url: str, profile: Path) -> str:
    """The page's DOM after its scripts ran, in a headless chromium that can resolve no host but loopback
    (a CDN's name fails to resolve, on a machine with internet access too)."""
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--virtual-time-budget=10000",
        "--dump-dom",
        url,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.timeout(300)
def test_a_browser_without_internet_renders_the_routes(secured: Server, tmp_path: Path) -> None:
    swagger = _render(secured.url + "/docs", tmp_path / "swagger")
    assert 'data-path="/score"' in swagger and 'data-path="/get_reward"' in swagger, swagger[-3000:]
    redoc = _render(secured.url + "/redoc", tmp_path / "redoc")
    assert "/score" in redoc and "/get_reward" in redoc, redoc[-3000:]
