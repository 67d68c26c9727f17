"""How the service's exceptions become answers, and how its schema describes them.

422 for a caller's mistake (an unknown reward, a bad parameter, an invalid body), 400 for a body that is
not text, 503 for a backend that is down (retried), 504 past the request deadline (not retried); the
guard in :mod:`service.middleware` answers 401, 408 and 413 itself. Every answer is a
:class:`~service.models.ErrorResponse`: ``detail`` a string, run through :func:`safe_detail` (secrets in
URLs masked, at most :data:`MAX_DETAIL` characters) whatever raised it; an invalid body's 422 lists each
failing field in ``errors``, without the value sent. :func:`document_errors` writes the same into the
OpenAPI schema, for every route.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from rewardkit import registry
from rewardkit.core import BackendUnavailable, DeadlineExceeded, RewardError
from rewardkit.redact import clip, redact_secrets
from rewardkit.registry import UnknownRewardError

from .models import ErrorResponse, SafeJSONResponse
from .settings import Settings

#: The most characters of an answer's ``detail`` (what a message echoes is cut long before, at 200).
MAX_DETAIL = 2_000
#: The most field errors an invalid body's 422 lists.
MAX_FIELD_ERRORS = 20
SCORING_PATHS = frozenset({"/score", "/get_reward"})
ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorResponse"}


def safe_detail(text: str) -> str:
    """``text`` as an answer may carry it: secrets in URLs masked, at most :data:`MAX_DETAIL` characters
    (saying so when cut). A safety net under every message, whoever built it.

    >>> safe_detail("judge at https://j.example/v1?api-key=s3cret answered 401")
    'judge at https://j.example/v1?api-key=*** answered 401'
    >>> len(safe_detail("x" * 10**6)) < MAX_DETAIL + 50
    True
    """
    if len(text) <= MAX_DETAIL:
        return redact_secrets(text)
    # Redacted before the final cut, so a secret cut in two is never half shown; the window is cut first,
    # so a huge message costs no more than a small one.
    return f"{redact_secrets(text[: 2 * MAX_DETAIL])[:MAX_DETAIL]}... (cut: {len(text)} characters in all)"


def field_errors(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    """An invalid body's summary and its field errors: where (``loc``), what (``msg``, ``type``), never
    the value sent (``input``), each part cut to a few hundred characters."""
    errors = [
        {
            "loc": [clip(p) if isinstance(p, str) else p for p in error.get("loc", ())],
            "msg": clip(str(error.get("msg", ""))),
            "type": str(error.get("type", "")),
        }
        for error in exc.errors()[:MAX_FIELD_ERRORS]
    ]
    if not errors:
        return "invalid request", []
    # the deepest first: of a union's branches ('a name, or an object'), the one that got furthest
    first = max(errors, key=lambda e: len(e["loc"]))
    where = ".".join(str(p) for p in first["loc"])
    more = len(exc.errors()) - 1
    summary = f"invalid request: {where}: {first['msg']}" + (f" (and {more} more)" if more else "")
    return summary, errors


def add_error_handlers(app: FastAPI, settings: Settings) -> None:
    """Install the handlers on ``app`` (``settings`` names the request deadline in the 504's detail)."""

    def error(
        status: int, detail: str, headers: Mapping[str, str] | None = None, **extra: Any
    ) -> SafeJSONResponse:
        return SafeJSONResponse({"detail": safe_detail(detail), **extra}, status_code=status, headers=headers)

    @app.exception_handler(UnknownRewardError)
    async def unknown_reward(request: Request, exc: UnknownRewardError) -> SafeJSONResponse:
        return error(422, str(exc), available=[info.name for info in registry.list_rewards()])

    @app.exception_handler(RewardError)
    async def bad_request(request: Request, exc: RewardError) -> SafeJSONResponse:
        return error(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, exc: RequestValidationError) -> SafeJSONResponse:
        summary, errors = field_errors(exc)
        return error(422, summary, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> SafeJSONResponse:
        # the routes' own refusals (413 for a batch, 422), 400 for a body that is not text, 404 and 405
        return error(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(BackendUnavailable)
    async def backend_down(request: Request, exc: BackendUnavailable) -> SafeJSONResponse:
        # 503: the client retries it with backoff, then fails the step loudly
        return error(503, str(exc), headers={"Retry-After": "5"})

    @app.exception_handler(DeadlineExceeded)
    async def too_slow(request: Request, exc: DeadlineExceeded) -> SafeJSONResponse:
        limit = settings.request_timeout_s
        return error(
            504,
            f"the request took longer than {limit:g} s (REWARDKIT_REQUEST_TIMEOUT_S); {exc}",
            headers={"X-Rewardkit-Timeout": "request"},  # clients do not retry this: it would fail again
        )


#: What each error status means, as the schema says it.
ERRORS = {
    400: "The body is not valid UTF-8 text.",
    401: "Missing or wrong token (answered before the body is read; the connection is closed).",
    408: "The body did not arrive within REWARDKIT_BODY_TIMEOUT_S (the connection is closed).",
    413: "Over REWARDKIT_MAX_BODY_MB or REWARDKIT_MAX_BATCH.",
    422: "A caller's mistake: an invalid body (each field in `errors`), an unknown reward (the `available` "
    "ones listed), a parameter or column the reward refuses.",
    503: "A backend is down (the judge; retried after Retry-After), or REWARDKIT_MAX_CONNECTIONS are open "
    "(text/plain from the server).",
    504: "Over REWARDKIT_REQUEST_TIMEOUT_S (not worth retrying).",
}


def document_errors(app: FastAPI, gated: Callable[[str], bool], query_token: frozenset[str]) -> None:
    """Make ``app``'s OpenAPI schema describe every error answer the service sends, and the token on the
    routes ``gated`` says need it (as a query parameter too on ``query_token``)."""
    built = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = built()  # FastAPI's schema, cached on the app
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {}).update(
                {
                    "bearer": {"type": "http", "scheme": "bearer"},
                    "token": {"type": "apiKey", "in": "query", "name": "token"},
                }
            )
            for path, operations in schema.get("paths", {}).items():
                for operation in operations.values():
                    _describe(operation, path, gated(path), path in query_token)
            schemas = components.setdefault("schemas", {})
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
            error = ErrorResponse.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(error.pop("$defs", {}), ErrorResponse=error)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _describe(operation: dict[str, Any], path: str, gated: bool, query_token: bool) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    statuses = {413, 503}
    if "requestBody" in operation:
        statuses |= {400, 408, 422}
    if operation.get("parameters"):
        statuses.add(422)
    if path in SCORING_PATHS:
        statuses.add(504)
    if gated:
        statuses.add(401)
        operation["security"] = [{"bearer": []}, *([{"token": []}] if query_token else [])]
    for status in sorted(statuses):
        if str(status) not in responses or status == 422:  # FastAPI's own 422 is a list: replaced
            json_body = {"application/json": {"schema": ERROR_SCHEMA}}
            responses[str(status)] = {"description": ERRORS[status], "content": json_body}
        if status == 503:  # a route's own 503 (/readyz) or the error body; the connection cap's is text
            responses["503"]["content"]["text/plain"] = {"schema": {"type": "string"}}
