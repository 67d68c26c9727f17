"""The API's pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), rendered from files this service serves.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so they are blank on a machine without internet
access (a training cluster's). The same pages here load the copies that the ``fastapi-offline`` package
ships (in the ``service`` extra), mounted under :data:`STATIC_URL`; nothing on them leaves this service.
They, their files and ``/openapi.json`` (:data:`DOCS_PATHS`) need the token like every route but ``/healthz``,
unless ``REWARDKIT_DOCS_PUBLIC`` is true (a browser sends no token: that is how a person reads them).
"""

from __future__ import annotations

import importlib.util

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

__all__ = ["DOCS_PATHS", "STATIC_PACKAGE", "STATIC_URL", "add_docs"]

STATIC_URL = "/docs-static"
#: The API's pages and schema (their files are under STATIC_URL).
DOCS_PATHS = frozenset({"/docs", "/redoc", "/openapi.json"})
STATIC_PACKAGE = (
    "fastapi_offline"  # its static/ folder: swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js
)


def add_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/redoc`` on ``app`` (made with ``docs_url=None, redoc_url=None``) from local
    files. Raises ``ImportError`` naming the extra when the package with the files is not installed."""
    if importlib.util.find_spec(STATIC_PACKAGE) is None:
        raise ImportError(
            "the service's /docs pages need the fastapi-offline package (Swagger UI and ReDoc files): "
            "pip install '/path/to/rewardkit[service]'"
        )
    app.mount(STATIC_URL, StaticFiles(packages=[(STATIC_PACKAGE, "static")]), name="docs-static")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")  # behind a proxy that serves the app under a prefix
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{STATIC_URL}/favicon.png",
            with_google_fonts=False,
        )
