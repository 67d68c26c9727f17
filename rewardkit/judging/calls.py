"""One call to a judge endpoint: the request through the openai SDK, its reply read within a byte limit,
retried on transient failures, and every failure turned into a reason, or into one actionable error.

Configuration errors (401/403/404) stop the batch with :class:`JudgeConfigError`, whose message names the
URL (its secrets masked: a ``user:password@``, an ``?api-key=``), the model and the variable the key came
from, never the key. Whether a batch's failures mean the endpoint is down is :func:`down`;
:func:`unavailable_message` says so. An error reply's body is read up to ``ERROR_BODY_BYTES`` (the SDK
would read it whole to quote its message), a successful one up to the judge's ``max_reply_bytes``. A
base URL's query (``https://h/v1?api-key=...``) goes with every request, and the client's log lines mask
its secrets as the messages do.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import ssl
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from rewardkit.concurrency import SharedLimit
from rewardkit.core import BackendUnavailable, RewardError
from rewardkit.redact import redact_secrets, shown
from rewardkit.retry import retry_after_s, retrying

__all__ = [
    "ERROR_BODY_BYTES",
    "REPLY_TOO_LARGE",
    "Caller",
    "JudgeConfigError",
    "JudgeUnavailableError",
    "down",
    "new_client",
    "post_chat",
    "reachable",
    "shown_url",
    "unavailable_message",
]

REPLY_TOO_LARGE = "judge_reply_too_large"
ERROR_BODY_BYTES = 64 << 10  # of a 4xx/5xx reply, what is read: its message is at the start
UNREACHABLE = frozenset({"connection_error"})  # a timeout reached a server: it may be slow, not down
#: what a call that reached nothing useful ends with, besides 5xx and 429 (``judge_error:<status>``) and
#: bodies that are not a chat completion (``judge_error:<exception>``)
_DOWN = frozenset({"connection_error", "timeout", "unparseable_judgement", REPLY_TOO_LARGE})


class JudgeConfigError(RewardError):
    """The judge endpoint refused the configuration (401/403/404): fix the setting, not the data."""


class JudgeUnavailableError(BackendUnavailable):
    """Too many calls of a batch (by default all of them) failed after the retries: the endpoint could not
    be reached, answered 5xx or 429, timed out, or sent replies with no score in them. Training on a batch
    of ``None`` would go on with no signal. ``on_unavailable="none"`` gives those items ``None`` instead."""


class _ReplyTooLarge(Exception):
    pass


def shown_url(url: str) -> str:
    """A base URL for messages: a ``user:password@`` and secret-named query values in it are secrets (and
    errors reach callers): :func:`rewardkit.redact.redact_secrets`.

    >>> shown_url("http://user:hunter2@judge:8000/v1"), shown_url("https://h/v1?api-key=s3cret")
    ('http://***@judge:8000/v1', 'https://h/v1?api-key=***')
    """
    return redact_secrets(url)


class _MaskedLog(logging.Filter):
    """Masks URL secrets in the HTTP client's log lines (httpx logs every request's URL at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_secrets(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


_MASK = _MaskedLog()


async def _cut_error_body(response: Any) -> None:
    """A response hook: of an error reply, only the first ``ERROR_BODY_BYTES`` are kept and the rest is
    never read (the SDK reads an error body whole before it raises, be it 1 GB); a success passes on
    untouched (:func:`post_chat` reads it within its own limit)."""
    if response.status_code < 400:
        return
    kept = bytearray()
    try:
        async for chunk in response.stream:
            kept += chunk[: ERROR_BODY_BYTES - len(kept)]
            if len(kept) >= ERROR_BODY_BYTES:
                break
    finally:
        await response.stream.aclose()  # the connection is dropped, its rest unread
    # the same httpx (httpx or httpx2) as the response: the SDK reads it as usual, message and all
    stream_type = sys.modules[type(response).__module__.partition(".")[0]].ByteStream
    response.stream = stream_type(bytes(kept))


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client of the process: loading the CA store takes 40 ms of CPU, which a
    client of its own per batch would pay each time (and on the event loop)."""
    return ssl.create_default_context()


def new_client(base_url: str, api_key: str, timeout_s: float) -> Any:
    """An ``openai.AsyncOpenAI`` client for one batch, sharing the process's TLS context; the SDK does not
    retry (:mod:`rewardkit.retry` does). Error bodies are cut at ``ERROR_BODY_BYTES``; a query in
    ``base_url`` goes with every request (the SDK would otherwise append the path after it)."""
    import openai

    for name in ("httpx", "httpx2"):  # whichever the SDK uses logs request URLs at INFO
        logging.getLogger(name).addFilter(_MASK)  # once: a logger holds a filter once
    parts = urlsplit(base_url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) or None
    base_url = urlunsplit(parts._replace(query="", fragment=""))
    hooks = {"response": [_cut_error_body]}
    aiohttp_client = getattr(openai, "DefaultAioHttpClient", None)  # the SDK's aiohttp transport
    try:  # its C parser and pool take a third less CPU a call than httpx's at 64 calls in flight
        http_client = aiohttp_client(verify=_tls(), event_hooks=hooks) if aiohttp_client is not None else None
    except RuntimeError:  # openai without its aiohttp extra
        http_client = None
    http_client = http_client or openai.DefaultAsyncHttpxClient(verify=_tls(), event_hooks=hooks)
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key,
        timeout=timeout_s,
        max_retries=0,
        http_client=http_client,
        default_query=query,
    )


async def post_chat(client: Any, body: dict[str, Any], max_bytes: int) -> str:
    """The text of the first choice of a ``/chat/completions`` reply, the body read as it streams in and
    abandoned past ``max_bytes`` (``_ReplyTooLarge``). The SDK's low-level post (same auth, errors and
    status exceptions as ``chat.completions.create``, without its per-call walk over the typed parameters,
    1.5 ms of CPU a call, the bottleneck at 64 calls in flight) hands back the unread HTTP response."""
    import httpx

    response = await client.post("/chat/completions", cast_to=httpx.Response, body=body, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise _ReplyTooLarge
        raw = bytearray()
        async for chunk in response.aiter_bytes():
            raw += chunk
            if len(raw) > max_bytes:
                raise _ReplyTooLarge
    finally:
        await response.aclose()
    content = json.loads(bytes(raw))["choices"][0]["message"]["content"]
    return content if isinstance(content, str) else ""


@dataclass
class Caller:
    """What one batch's calls share: the client, the concurrency limits and the call settings."""

    client: Any
    semaphore: asyncio.Semaphore
    total: SharedLimit
    model: str
    temperature: float
    timeout_s: float
    max_retries: int
    max_reply_bytes: int
    base_url: str
    api_key_env: str

    async def send(
        self,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any] | None,
        retries: int | None = None,
    ) -> tuple[str | None, str | None]:
        """``(reply, None)``, or ``(None, reason)`` when the call failed after its retries."""
        import openai

        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if response_format is not None:
            body["response_format"] = response_format
        try:
            async for attempt in retrying(
                asynchronous=True,
                max_retries=self.max_retries if retries is None else retries,
                base_s=0.5,
                cap_s=30.0,
                retry_on=_transient,
                retry_after=lambda failure: retry_after_s(_header(failure, "retry-after"), cap_s=60.0),
            ):
                with attempt:
                    async with self.semaphore, self.total:  # held for the call, not for the backoff
                        async with asyncio.timeout(self.timeout_s):  # the whole call, reading included
                            reply = await post_chat(self.client, body, self.max_reply_bytes)
            return reply, None
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            raise JudgeConfigError(self.config_message(exc.status_code)) from None
        except (openai.APITimeoutError, TimeoutError) as exc:
            return None, "connection_error" if _refused(exc) else "timeout"
        except openai.APIConnectionError:
            return None, "connection_error"
        except openai.APIStatusError as exc:
            return None, f"judge_error:{exc.status_code}"
        except _ReplyTooLarge:
            return None, REPLY_TOO_LARGE
        except Exception as exc:  # garbage bodies and the like: this item, not the batch
            return None, f"judge_error:{type(exc).__name__}"

    def config_message(self, status: int | None) -> str:
        return (
            f"llm_judge: the judge at {shown_url(self.base_url)} answered {status} for model "
            f"{shown(self.model)} "
            f"with the key read from the environment variable {self.api_key_env}. Check that the key in "
            f"{self.api_key_env} is valid for this endpoint, that the base URL ends where the API starts "
            "(usually .../v1), and that the model id exists there."
        )


def down(reason: str | None) -> bool:
    """Whether a call's reason says the endpoint gave nothing usable: unreachable, a timeout, 5xx or 429
    after the retries, a body that is not a chat completion, a reply without a score or over the size
    limit. A refused request (other 4xx) and a judge that quoted the response, or wrote several scores
    (what a completion can bring about), are not.

    >>> [down(r) for r in ("timeout", "judge_error:503", "judge_error:429", "judge_error:400", None)]
    [True, True, True, False, False]
    """
    if reason is None:
        return False
    if reason in _DOWN:
        return True
    kind, _, detail = reason.partition(":")
    return kind == "judge_error" and (not detail.isdigit() or int(detail) >= 500 or detail == "429")


def unavailable_message(reasons: Sequence[str], calls: int, base_url: str, max_retries: int) -> str:
    """What :class:`JudgeUnavailableError` says of a batch whose failed calls ended with ``reasons``."""
    url = shown_url(base_url)
    if len(reasons) == calls and set(reasons) <= UNREACHABLE:
        return (
            f"llm_judge: none of {calls} calls reached the judge at {url} after {max_retries} retries "
            f"({reasons[0]}). Check that the server is up and reachable from here, and the base URL and "
            "port; on_unavailable='none' scores such items None instead."
        )
    counts = ", ".join(f"{reason} x{count}" for reason, count in Counter(reasons).most_common())
    return (
        f"llm_judge: {len(reasons)} of {calls} calls to the judge at {url} failed after {max_retries} "
        f"retries ({counts}). The endpoint is down or overloaded, or answers without a score: check its "
        "logs and that the model serves there; on_unavailable='none' scores such items None instead."
    )


def _transient(failure: BaseException) -> bool:
    """Rate limits, server errors, timeouts and lost connections are worth another try."""
    import openai

    return isinstance(
        failure,
        openai.RateLimitError | openai.InternalServerError | openai.APIConnectionError | TimeoutError,
    )


def _header(failure: BaseException | None, name: str) -> str | None:
    response = getattr(failure, "response", None)
    return response.headers.get(name) if response is not None else None


def _refused(failure: BaseException) -> bool:
    """A "timeout" caused by a refused or reset connection (the SDK's aiohttp transport reports a refused
    connect as ConnectTimeout): the endpoint is not there, it is not slow."""
    seen: BaseException | None = failure.__cause__
    while seen is not None:
        if isinstance(seen, OSError) and not isinstance(seen, TimeoutError):
            return True
        seen = seen.__cause__
    return False


_PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


async def reachable(base_url: str, timeout_s: float) -> bool | None:
    """Whether anything accepts a connection where ``base_url`` points (no request is made, nothing is
    billed): ``False`` when the connection is refused or the host unknown; ``None`` when it cannot be told
    (a proxy is configured, no host, or no answer within ``timeout_s``: a slow server is not a dead one)."""
    parts = urlsplit(base_url)
    if any(os.environ.get(name) for name in _PROXIES) or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), timeout_s)
    except TimeoutError:
        return None
    except (OSError, ValueError):
        return False
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return True
