"""Clients of the scoring service: sync, async, and a reward-contract callable for trainers. They need the
``client`` extra (httpx alone: ``pip install '/path/to/rewardkit[client]'`` in a trainer's venv); without it,
importing this module raises an ImportError that names it.

    from rewardkit.client import RewardClient, remote_reward

    client = RewardClient("http://127.0.0.1:8000")        # token: argument or REWARDKIT_API_TOKEN
    client.score(["countdown"], ["<answer>6 * 4</answer>"], target=[24], nums=[[4, 6]]).rewards   # [1.0]
    trl_reward = remote_reward("math", "http://127.0.0.1:8000", timeout_s=5.0)   # reward_funcs=[trl_reward]

HTTP settings are named ``http_*`` (``http_timeout_s``, ``http_max_retries``, ...), apart from a reward's own
parameters (the math reward's ``timeout_s``, the judge's ``max_retries``). A batch is split into requests of
at most the smaller of ``max_batch`` and the server's limit, each under the server's body limit (both read
from ``GET /rewards``); connection errors, 429 and 5xx are retried with exponential
backoff (``Retry-After`` is honoured); other 4xx, and a 504 that says the request ran past the server's
deadline (the same batch would fail again), are raised at once as :class:`RewardServiceError`. A client
that has never reached the service retries refused connections for :data:`REFUSED_FOR_S` only (nothing
listens there: a service not started or a wrong port), then asks whether the service is running; once it
has reached it, a refusal (a restart) gets the full retries. A URL without ``http://`` or ``https://``
raises ``ValueError`` when the client is made, an unknown keyword a ``TypeError`` naming the setting.

Before sending, parameters are checked against what the server publishes at ``GET /rewards`` (which ones a
caller may set, and their caps), so a misconfigured run fails at start-up with :class:`PolicyError` instead
of a 422 mid-run; a template parameter that names a file on the client is read here and sent inline.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

# first: without httpx (no `client` extra) this raises the ImportError that names the extra
from rewardkit.client_options import check_http_options, service_url  # isort: skip

import httpx

from rewardkit.batching import RewardServiceError, ScoreResult, func_json, json_body, request_bodies
from rewardkit.core import Completion, Explained, Reward, Scored
from rewardkit.retry import retry_after_s, retrying
from rewardkit.spec import MAX_FUNCS, PolicyError, RewardSpec, check, read_if_file

__all__ = [
    "AsyncRewardClient",
    "PolicyError",
    "RemoteReward",
    "RewardClient",
    "RewardServiceError",
    "ScoreResult",
    "check_funcs",
    "json_body",
    "remote_reward",
]

RETRY_STATUS = {429, 500, 502, 503, 504}
REFUSED_FOR_S = 0.5  # how long a client that never reached the service retries refused connections


def check_funcs(
    server: dict[str, Any], funcs: Sequence[str | RewardSpec], base_url: str = "the service"
) -> list[str | RewardSpec]:
    """``funcs`` checked against the policy a server publishes (its ``GET /rewards`` body) with
    :func:`rewardkit.spec.check`, the check the server runs itself: every reward exists there, every parameter
    is one a caller may set, numbers are within their caps, nested reward specs likewise. Parameters the
    server marks ``inline_file`` that name a file here are read and sent as text. Raises
    :class:`PolicyError` saying what to change."""
    if len(funcs) > MAX_FUNCS:
        raise PolicyError(f"{len(funcs)} funcs in one request; the service takes at most {MAX_FUNCS}")
    table = {r["name"]: r.get("params", {}) for r in server.get("rewards", [])}
    out: list[str | RewardSpec] = []
    for func in funcs:
        spec = check(
            table, RewardSpec(func) if isinstance(func, str) else func, server=base_url, inline=read_if_file
        )
        out.append(func if isinstance(func, str) else spec)
    return out


class _Answered(Exception):
    """The service answered with an error status (raised inside the retry loop)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise _Answered(response)
    return response


def _transient(failure: BaseException) -> bool:
    if isinstance(failure, httpx.TransportError):
        return True
    if isinstance(failure, _Answered):
        if failure.response.headers.get("x-rewardkit-timeout"):
            return False  # the batch ran past the server's deadline: it would again
        return failure.response.status_code in RETRY_STATUS
    return False


class _Retrying:
    """What the sync and async clients share: settings, backoff, and turning responses into results."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        http_timeout_s: float = 120.0,
        http_max_retries: int = 5,
        http_backoff_s: float = 0.5,
        http_max_backoff_s: float = 30.0,
        max_batch: int = 16_384,
        **unknown: Any,
    ) -> None:
        check_http_options(f"{type(self).__name__}()", list(unknown))
        self.base_url = service_url(base_url)
        self.reached = False  # whether the service ever answered this client (any status)
        token = token if token is not None else os.environ.get("REWARDKIT_API_TOKEN") or None
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout = httpx.Timeout(http_timeout_s, connect=min(10.0, http_timeout_s))
        self.max_retries, self.backoff_s, self.max_backoff_s = (
            http_max_retries,
            http_backoff_s,
            http_max_backoff_s,
        )
        self.max_batch = max_batch

    @staticmethod
    def _columns_of(
        server: dict[str, Any], columns_body: dict[str, Any] | None, name: str
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(required, optional) columns of a configured reward: what ``POST /rewards/columns`` said, else
        the registry's."""
        found = columns_body or {r["name"]: r for r in server.get("rewards", [])}[name]
        return tuple(found["columns"]), tuple(found["optional_columns"])

    def _policy(self) -> dict[str, Any]:
        """The retry policy of one request (:mod:`rewardkit.retry`): transport errors, 429 and 5xx are
        retried, but not a 504 that says the batch ran past the server's deadline (it would again), nor a
        refused connection past :data:`REFUSED_FOR_S` while this client has never reached the service."""
        started = time.monotonic()

        def retry_on(failure: BaseException) -> bool:
            if isinstance(failure, httpx.ConnectError) and not self.reached:
                return time.monotonic() - started < REFUSED_FOR_S
            return _transient(failure)

        return {
            "max_retries": self.max_retries,
            "base_s": self.backoff_s,
            "cap_s": self.max_backoff_s,
            "retry_on": retry_on,
            "retry_after": lambda failure: retry_after_s(
                failure.response.headers.get("retry-after") if isinstance(failure, _Answered) else None,
                cap_s=self.max_backoff_s,
            ),
        }

    def _final(self, failure: Exception, path: str) -> RewardServiceError:
        response = failure.response if isinstance(failure, _Answered) else None
        return self._fail(response, failure, self.base_url + path)

    def _fail(self, response: httpx.Response | None, error: Exception, url: str) -> RewardServiceError:
        if response is None:
            said = str(error) or type(error).__name__
            if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
                said += f"; is the service running at {self.base_url}?"
            elif isinstance(error, httpx.TimeoutException):
                said += f" (no answer within http_timeout_s={self.timeout.read} s)"
            return RewardServiceError(f"could not reach the reward service at {url}: {said}")
        try:
            detail = response.json().get("detail")
        except (ValueError, AttributeError):
            detail = response.text[:500]
        return RewardServiceError(
            f"reward service answered {response.status_code} for {url}: {detail}",
            response.status_code,
            detail,
        )

    @staticmethod
    def _result(response: httpx.Response) -> ScoreResult:
        data = response.json()
        return ScoreResult(data["rewards"], data["scores"], data.get("errors", {}), data.get("timing_ms", {}))


class RewardClient(_Retrying):
    """Synchronous client of the scoring service. Token: ``token`` or ``REWARDKIT_API_TOKEN``."""

    def __init__(self, base_url: str, token: str | None = None, **options: Any) -> None:
        super().__init__(base_url, token, **options)
        self._http = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=self.timeout)
        self._server: dict[str, Any] | None = None

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call with the retry policy; returns a 2xx response or raises RewardServiceError."""
        try:
            for attempt in retrying(**self._policy()):
                with attempt:
                    response = self._http.request(method, path, **kwargs)
                    self.reached = True
                    return _checked(response)
        except (httpx.TransportError, _Answered) as failure:
            raise self._final(failure, path) from None
        raise AssertionError("unreachable")

    def server_info(self) -> dict[str, Any]:
        """The server's ``GET /rewards`` body (rewards, their parameter policy, limits), fetched once."""
        if self._server is None:
            self._server = self.request("GET", "/rewards").json()
        return self._server

    def check(self, funcs: Sequence[str | RewardSpec]) -> list[str | RewardSpec]:
        """``funcs`` as they will be sent, checked against the server's policy (see :func:`check_funcs`)."""
        return check_funcs(self.server_info(), funcs, self.base_url)

    def score(
        self, funcs: Sequence[str | RewardSpec], completions: Sequence[Completion], **columns: Any
    ) -> ScoreResult:
        """Score a batch with one or more rewards (split to fit the server's batch and body limits)."""
        funcs = self.check(funcs)
        bodies = request_bodies(
            self.server_info(), funcs, completions, columns, self.max_batch, self.base_url
        )
        return ScoreResult.merge([self._result(self.request("POST", "/score", content=b)) for b in bodies])

    def columns(self, func: str | RewardSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(required, optional): the columns ``func`` reads as configured (a judge template's own
        placeholders included), from ``POST /rewards/columns``; a server without that route gives its
        registry's columns."""
        spec = RewardSpec(func) if isinstance(func, str) else func
        try:
            found = self.request("POST", "/rewards/columns", content=json_body(func_json(spec))).json()
        except RewardServiceError as exc:
            if exc.status_code not in (404, 405):
                raise
            found = None
        return self._columns_of(self.server_info(), found, spec.name)

    def rewards(self) -> list[dict[str, Any]]:
        """The server's registry (``GET /rewards``)."""
        return list(self.server_info()["rewards"])

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRewardClient(_Retrying):
    """Asynchronous client of the scoring service (same policy as :class:`RewardClient`). ``server_info``:
    the server's ``GET /rewards`` body if the caller already has it (a client per event loop or batch need
    not ask again)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        server_info: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(base_url, token, **options)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self.headers, timeout=self.timeout)
        self._server: dict[str, Any] | None = server_info
        self.reached = server_info is not None  # a caller that has it reached the service before

    async def server_info(self) -> dict[str, Any]:
        """The server's ``GET /rewards`` body, fetched once."""
        if self._server is None:
            self._server = (await self.request("GET", "/rewards")).json()
        return self._server

    async def check(self, funcs: Sequence[str | RewardSpec]) -> list[str | RewardSpec]:
        return check_funcs(await self.server_info(), funcs, self.base_url)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            async for attempt in retrying(**self._policy(), asynchronous=True):
                with attempt:
                    response = await self._http.request(method, path, **kwargs)
                    self.reached = True
                    return _checked(response)
        except (httpx.TransportError, _Answered) as failure:
            raise self._final(failure, path) from None
        raise AssertionError("unreachable")

    async def score(
        self, funcs: Sequence[str | RewardSpec], completions: Sequence[Completion], **columns: Any
    ) -> ScoreResult:
        funcs = await self.check(funcs)
        bodies = request_bodies(
            await self.server_info(), funcs, completions, columns, self.max_batch, self.base_url
        )
        responses = await asyncio.gather(*(self.request("POST", "/score", content=b) for b in bodies))
        return ScoreResult.merge([self._result(r) for r in responses])

    async def columns(self, func: str | RewardSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """:meth:`RewardClient.columns`, asynchronously."""
        spec = RewardSpec(func) if isinstance(func, str) else func
        try:
            response = await self.request("POST", "/rewards/columns", content=json_body(func_json(spec)))
            found = response.json()
        except RewardServiceError as exc:
            if exc.status_code not in (404, 405):
                raise
            found = None
        return self._columns_of(await self.server_info(), found, spec.name)

    async def rewards(self) -> list[dict[str, Any]]:
        return list((await self.server_info())["rewards"])

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRewardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class RemoteReward(Reward):
    """A configured reward that scores on the service: a :class:`~rewardkit.core.Reward` like one in process
    (so a TRL ``reward_funcs`` entry, the engine and the trainers' adapters treat both alike), with an async
    face too (:meth:`ascore_detailed`) for trainers that await their rewards.

    Its columns are the configured reward's, as the server says (``POST /rewards/columns``; a custom judge
    template's placeholders included), so only those are sent: trainers pass many other keyword arguments,
    some not JSON. With ``connect``, the reward and ``params`` are checked against the server's policy when
    it is made (a template file is read here and sent inline), so a bad setting fails before training
    starts; without, at the first call. ``alias`` and ``columns`` work as in :func:`rewardkit.get` (the
    server applies the column map); ``http`` holds the client's settings (``http_timeout_s``, ...).
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        token: str | None = None,
        *,
        connect: bool = True,
        alias: str | None = None,
        columns: dict[str, str] | None = None,
        http: dict[str, Any] | None = None,
        **params: Any,
    ) -> None:
        check_http_options("RemoteReward(http=...)", list(http or {}))
        self.base_url, self.token, self.http = service_url(base_url), token, dict(http or {})
        self.spec = RewardSpec(name, params, alias=alias, columns=columns)
        if alias is not None:
            self.configure(alias=alias)
        self._client: RewardClient | None = None
        self._server: dict[str, Any] | None = None  # GET /rewards, kept for the async face
        self._columns: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        if connect:
            self._connect()

    @property
    def reward_name(self) -> str:
        return self.spec.name

    def params(self) -> dict[str, Any]:
        return dict(self.spec.params)

    def _learn(self, spec: str | RewardSpec, columns: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
        assert isinstance(spec, RewardSpec)
        self.spec, self._columns = spec, columns  # a template file read here, sent inline

    def _connect(self) -> RewardClient:
        if self._client is None:
            self._client = RewardClient(self.base_url, self.token, **self.http)
        if self._columns is None:
            try:
                (spec,) = self._client.check([self.spec])
                self._learn(spec, self._client.columns(spec))
                self._server = self._client.server_info()
            except Exception:
                self.close()  # no connection left open behind a refusal
                raise
        return self._client

    @property
    def required_columns(self) -> tuple[str, ...]:
        self._connect()
        assert self._columns is not None
        return self._columns[0]

    @property
    def optional(self) -> tuple[str, ...]:
        self._connect()
        assert self._columns is not None
        return self._columns[1]

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        return self._verdicts(self._connect().score([self.spec], completions, **columns))

    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """:meth:`score_detailed` on the caller's event loop, with a client for this call (trainers' loops
        come and go) that asks the server's policy only the first time."""
        async with AsyncRewardClient(
            self.base_url, self.token, server_info=self._server, **self.http
        ) as client:
            if self._columns is None:  # learnt here, not by _connect(), which would block the loop
                (spec,) = await client.check([self.spec])
                self._learn(spec, await client.columns(spec))
            bound = self.bind_columns(completions, columns)
            result = await client.score([self.spec], completions, **bound)
            self._server = await client.server_info()
        verdicts = self._verdicts(result)
        return Scored([v.value for v in verdicts], [v.reason for v in verdicts])

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values

    def _verdicts(self, result: ScoreResult) -> list[Explained]:
        """The service's values and reasons for this reward (keyed by its ``__name__``)."""
        values = result.scores[self.__name__]
        reasons = result.errors.get(self.__name__) or [None] * len(values)
        return [Explained(value, reason, None) for value, reason in zip(values, reasons, strict=True)]

    def close(self) -> None:
        """Close the HTTP connections (a new call reopens them)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.spec.name,
            "base_url": self.base_url,
            "token": self.token,
            "params": dict(self.spec.params),
            "alias": self.spec.alias,
            "columns": self.spec.columns,
            "http": self.http,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["name"],
            state["base_url"],
            state["token"],
            connect=False,
            alias=state.get("alias"),
            columns=state.get("columns"),
            http=state.get("http"),
            **state["params"],
        )


def remote_reward(
    name: str,
    base_url: str,
    token: str | None = None,
    *,
    http_timeout_s: float = 120.0,
    http_max_retries: int = 5,
    **options: Any,
) -> RemoteReward:
    """A callable with the reward contract that scores ``name`` on the service at ``base_url``; checks the
    reward and its parameters against the server now (``connect=False``: at the first call).

    ``options`` are :class:`RemoteReward`'s (``connect``, ``alias``, ``columns``, which work as in
    :func:`rewardkit.get`) and the reward's parameters (``timeout_s`` is the math reward's time limit); the
    HTTP client's settings are ``http_timeout_s`` and ``http_max_retries``."""
    http = {"http_timeout_s": http_timeout_s, "http_max_retries": http_max_retries}
    return RemoteReward(name, base_url, token, http=http, **options)
