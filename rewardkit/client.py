"""Clients of the scoring service: sync, async, and a reward-contract callable for trainers.

    from rewardkit.client import RewardClient, remote_reward

    client = RewardClient("http://127.0.0.1:8000")        # token: argument or REWARDKIT_API_TOKEN
    client.score(["countdown"], ["<answer>6 * 4</answer>"], target=[24], nums=[[4, 6]]).rewards   # [1.0]
    trl_reward = remote_reward("math", "http://127.0.0.1:8000", timeout_s=5.0)   # reward_funcs=[trl_reward]

HTTP settings are named ``http_*`` (``http_timeout_s``, ``http_max_retries``, ...), apart from a reward's own
parameters (the math reward's ``timeout_s``, the judge's ``max_retries``). A batch is split into requests of
at most the smaller of ``max_batch`` and the server's limit, each under the server's body limit (both read
from ``GET /rewards``); connection errors, 429 and 5xx are retried with exponential
backoff (``Retry-After`` is honoured); other 4xx, and a 504 that says the request ran past the server's
deadline (the same batch would fail again), are raised at once as :class:`RewardServiceError`.

Before sending, parameters are checked against what the server publishes at ``GET /rewards`` (which ones a
caller may set, and their caps), so a misconfigured run fails at start-up with :class:`PolicyError` instead
of a 422 mid-run; a template parameter that names a file on the client is read here and sent inline.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion
from rewardkit.engine import MAX_FUNCS, FuncSpec
from rewardkit.policy import MAX_SPEC_DEPTH, MAX_SPEC_MAP, PolicyError, read_if_file
from rewardkit.retry import retry_after_s, retrying

try:
    import httpx
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the rewardkit client needs httpx: pip install 'rewardkit[service]'") from exc

__all__ = [
    "AsyncRewardClient",
    "PolicyError",
    "RewardClient",
    "RewardServiceError",
    "ScoreResult",
    "check_funcs",
    "remote_reward",
]

RETRY_STATUS = {429, 500, 502, 503, 504}


class RewardServiceError(RuntimeError):
    """The service answered with an error (or could not be reached after the retries)."""

    def __init__(self, message: str, status_code: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.status_code, self.detail = status_code, detail


@dataclass
class ScoreResult:
    """The body of ``POST /score``, typed."""

    rewards: list[float | None]
    scores: dict[str, list[float | None]]
    errors: dict[str, list[str | None]]
    timing_ms: dict[str, float]

    @classmethod
    def merge(cls, parts: Sequence[ScoreResult]) -> ScoreResult:
        """Concatenate the results of consecutive chunks of one batch."""
        keys = list(parts[0].scores) if parts else []
        sizes = [len(p.rewards) for p in parts]
        errors: dict[str, list[str | None]] = {}
        for key in {k for p in parts for k in p.errors}:
            errors[key] = [
                r for p, n in zip(parts, sizes, strict=True) for r in p.errors.get(key, [None] * n)
            ]
        return cls(
            rewards=[r for p in parts for r in p.rewards],
            scores={k: [v for p in parts for v in p.scores[k]] for k in keys},
            errors=errors,
            timing_ms={k: round(sum(p.timing_ms.get(k, 0.0) for p in parts), 3) for k in keys},
        )


def _func_json(func: str | FuncSpec) -> str | dict[str, Any]:
    if isinstance(func, str):
        return func
    body: dict[str, Any] = {"name": func.name, "weight": func.weight, "params": dict(func.params)}
    if func.alias is not None:
        body["alias"] = func.alias
    if func.columns is not None:
        body["columns"] = dict(func.columns)
    return body


def check_funcs(
    server: dict[str, Any], funcs: Sequence[str | FuncSpec], base_url: str = "the service"
) -> list[str | FuncSpec]:
    """``funcs`` checked against the policy a server publishes (its ``GET /rewards`` body): every reward
    exists there, every parameter is one a caller may set, numbers are within their caps, nested reward
    specs likewise. Parameters the server marks ``inline_file`` that name a file here are read and sent as
    text. Raises :class:`PolicyError` saying what to change."""
    rewards = {r["name"]: r for r in server.get("rewards", [])}
    if len(funcs) > MAX_FUNCS:
        raise PolicyError(f"{len(funcs)} funcs in one request; the service takes at most {MAX_FUNCS}")
    out: list[str | FuncSpec] = []
    for func in funcs:
        spec = FuncSpec(func) if isinstance(func, str) else func
        params = _check_params(rewards, spec.name, dict(spec.params), base_url, 0)
        out.append(
            func
            if isinstance(func, str)
            else FuncSpec(spec.name, params, spec.weight, spec.alias, spec.columns)
        )
    return out


def _check_params(
    rewards: dict[str, Any], name: str, params: dict[str, Any], base_url: str, depth: int
) -> dict[str, Any]:
    if name not in rewards:
        raise PolicyError(f"the service at {base_url} has no reward {name!r}; it has {sorted(rewards)}")
    if depth > MAX_SPEC_DEPTH:
        raise PolicyError(f"reward specs nested deeper than {MAX_SPEC_DEPTH}")
    table = rewards[name].get("params", {})
    for param, value in list(params.items()):
        policy = table.get(param)
        if not isinstance(policy, dict) or "settable" not in policy:
            if param not in table:
                raise PolicyError(f"reward {name!r} on {base_url} has no parameter {param!r}")
            continue  # a server that publishes no policy: it will judge for itself
        if not policy["settable"]:
            raise PolicyError(
                f"reward {name!r}: parameter {param!r} is a server setting on {base_url}; a caller "
                "cannot set it. Ask its operator to set it (REWARDKIT_PARAMS / REWARDKIT_CONFIG), or drop it."
            )
        cap = policy.get("cap")
        if cap is not None and isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
            raise PolicyError(
                f"reward {name!r}: parameter {param!r} is {value!r}, over the cap of {cap:g} on {base_url}"
            )
        if policy.get("inline_file"):  # a file on the client: the server reads no files for callers
            params[param] = read_if_file(value)
        if policy.get("reward_spec"):
            params[param] = _nested(rewards, value, base_url, depth + 1)
        if policy.get("reward_spec_map"):
            if not isinstance(value, dict):
                raise PolicyError(f"reward {name!r}: parameter {param!r} maps keys to rewards")
            if len(value) > MAX_SPEC_MAP:
                raise PolicyError(
                    f"reward {name!r}: {param!r} holds {len(value)} rewards; at most {MAX_SPEC_MAP}"
                )
            params[param] = {k: _nested(rewards, v, base_url, depth + 1) for k, v in value.items()}
    return params


def _nested(rewards: dict[str, Any], value: Any, base_url: str, depth: int) -> Any:
    if isinstance(value, str):
        _check_params(rewards, value, {}, base_url, depth)
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        inner = dict(value.get("params") or {})
        out = {**value, "params": _check_params(rewards, value["name"], inner, base_url, depth)}
        return out
    raise PolicyError('a nested reward is a name or {"name": ..., "params": {...}, "columns": {...}}')


def json_body(body: Any) -> bytes:
    """ASCII JSON: faster to encode here than UTF-8 output, and text a model broke (lone surrogates)
    travels escaped instead of failing the call."""
    return json.dumps(body).encode("ascii")


def _group_keys(columns: dict[str, Any], n: int) -> list[int] | None:
    """Each completion's GRPO group (see :func:`rewardkit.lengths.group_keys`), or ``None`` without one."""
    from rewardkit.lengths import GROUP_COLUMNS, group_keys

    named = {k: v for k, v in columns.items() if k in GROUP_COLUMNS and isinstance(v, list) and len(v) == n}
    return group_keys(named, n, "client") if named else None


class _Cuts:
    """Where a batch may be cut into requests: anywhere, or only between groups."""

    def __init__(self, groups: list[int] | None, n: int) -> None:
        self.groups, self.n = groups, n

    def before(self, start: int, end: int) -> int | None:
        """The last cut in ``(start, end]``, or ``None`` when a group fills it all."""
        if self.groups is None or end >= self.n:
            return end if end > start else None
        for cut in range(end, start, -1):
            if self.groups[cut] != self.groups[cut - 1]:
                return cut
        return None

    def too_large(self, start: int, what: str) -> str:
        unit = "completion" if self.groups is None else "the group starting at completion"
        return f"{unit} {start} alone is over {what}; it cannot be split across requests"

    def check_contiguous(self, spans: list[tuple[int, int]]) -> None:
        if self.groups is None or len(spans) < 2:
            return
        seen: dict[int, int] = {}
        for number, (start, end) in enumerate(spans):
            for key in set(self.groups[start:end]):
                if seen.setdefault(key, number) != number:
                    raise RewardServiceError(
                        "the batch must be split to fit the server's limits, but a group's completions are "
                        "not next to each other, so a group would be scored in two requests; keep each "
                        "group's completions together (as GRPO trainers do)"
                    )


def _body(
    funcs: Sequence[str | FuncSpec],
    completions: Sequence[Completion],
    columns: dict[str, Any],
    start: int,
    end: int,
) -> dict[str, Any]:
    return {
        "funcs": [_func_json(f) for f in funcs],
        "completions": list(completions[start:end]),
        "columns": {k: list(v)[start:end] for k, v in columns.items()},
    }


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
    ) -> None:
        self.base_url = base_url.rstrip("/")
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

    def _bodies(
        self,
        server: dict[str, Any],
        funcs: Sequence[str | FuncSpec],
        completions: Sequence[Completion],
        columns: dict[str, Any],
    ) -> list[bytes]:
        """The request bodies of a batch: at most the smaller of our and the server's ``max_batch`` items
        each, and each under the server's body limit (a chunk over it is halved until it fits).

        A GRPO group (the completions sharing a ``group``, ``prompt``, ``prompts`` or ``messages`` value) is
        never cut: rewards such as ``length`` compare within it. A group that does not fit one request, or
        groups that are not contiguous in a batch that must be split, raise :class:`RewardServiceError`."""
        n = len(completions)
        size = max(1, min(self.max_batch, int(server.get("max_batch") or self.max_batch)))
        limit = int(float(server.get("max_body_mb") or 64.0) * 1024 * 1024 * 0.98)  # headroom for framing
        groups = _group_keys(columns, n)
        cuts = _Cuts(groups, n)
        pending: list[tuple[int, int]] = []
        start = 0
        while start < n:  # chunks of at most `size`, cut between groups
            end = cuts.before(start, min(start + size, n))
            if end is None:
                raise RewardServiceError(cuts.too_large(start, f"the server's max_batch of {size}"), 413)
            pending.append((start, end))
            start = end
        pending = list(reversed(pending or [(0, 0)]))
        bodies: list[bytes] = []
        spans: list[tuple[int, int]] = []
        while pending:
            start, end = pending.pop()
            body = json_body(_body(funcs, completions, columns, start, end))
            if len(body) <= limit:
                bodies.append(body)
                spans.append((start, end))
                continue
            middle = cuts.before(start, (start + end) // 2) or cuts.before(start, end - 1)
            if middle is None or middle <= start:
                raise RewardServiceError(
                    cuts.too_large(start, f"{len(body):,} bytes, over the server's limit of {limit:,}")
                    + f" (REWARDKIT_MAX_BODY_MB on {self.base_url})",
                    413,
                )
            pending += [(middle, end), (start, middle)]  # the first half goes first
        cuts.check_contiguous(spans)
        return bodies

    @staticmethod
    def _columns_of(
        server: dict[str, Any], columns_body: dict[str, Any] | None, name: str
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(required, optional) columns of a configured reward: what ``POST /rewards/columns`` said, else
        the registry's."""
        found = columns_body or {r["name"]: r for r in server.get("rewards", [])}[name]
        return tuple(found["columns"]), tuple(found["optional_columns"])

    def _policy(self) -> dict[str, Any]:
        """The retry policy (:mod:`rewardkit.retry`): transport errors, 429 and 5xx are retried, but not a
        504 that says the batch ran past the server's deadline (it would again)."""
        return {
            "max_retries": self.max_retries,
            "base_s": self.backoff_s,
            "cap_s": self.max_backoff_s,
            "retry_on": _transient,
            "retry_after": lambda failure: retry_after_s(
                failure.response.headers.get("retry-after") if isinstance(failure, _Answered) else None,
                cap_s=self.max_backoff_s,
            ),
        }

    def _final(self, failure: Exception, path: str) -> RewardServiceError:
        response = failure.response if isinstance(failure, _Answered) else None
        return self._fail(response, failure, self.base_url + path)

    @staticmethod
    def _fail(response: httpx.Response | None, error: Exception | None, url: str) -> RewardServiceError:
        if response is None:
            return RewardServiceError(f"could not reach the reward service at {url}: {error}")
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
                    return _checked(self._http.request(method, path, **kwargs))
        except (httpx.TransportError, _Answered) as failure:
            raise self._final(failure, path) from None
        raise AssertionError("unreachable")

    def server_info(self) -> dict[str, Any]:
        """The server's ``GET /rewards`` body (rewards, their parameter policy, limits), fetched once."""
        if self._server is None:
            self._server = self.request("GET", "/rewards").json()
        return self._server

    def check(self, funcs: Sequence[str | FuncSpec]) -> list[str | FuncSpec]:
        """``funcs`` as they will be sent, checked against the server's policy (see :func:`check_funcs`)."""
        return check_funcs(self.server_info(), funcs, self.base_url)

    def score(
        self, funcs: Sequence[str | FuncSpec], completions: Sequence[Completion], **columns: Any
    ) -> ScoreResult:
        """Score a batch with one or more rewards (split to fit the server's batch and body limits)."""
        funcs = self.check(funcs)
        bodies = self._bodies(self.server_info(), funcs, completions, columns)
        return ScoreResult.merge([self._result(self.request("POST", "/score", content=b)) for b in bodies])

    def columns(self, func: str | FuncSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(required, optional): the columns ``func`` reads as configured (a judge template's own
        placeholders included), from ``POST /rewards/columns``; a server without that route gives its
        registry's columns."""
        spec = FuncSpec(func) if isinstance(func, str) else func
        try:
            found = self.request("POST", "/rewards/columns", content=json_body(_func_json(spec))).json()
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

    async def server_info(self) -> dict[str, Any]:
        """The server's ``GET /rewards`` body, fetched once."""
        if self._server is None:
            self._server = (await self.request("GET", "/rewards")).json()
        return self._server

    async def check(self, funcs: Sequence[str | FuncSpec]) -> list[str | FuncSpec]:
        return check_funcs(await self.server_info(), funcs, self.base_url)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            async for attempt in retrying(**self._policy(), asynchronous=True):
                with attempt:
                    return _checked(await self._http.request(method, path, **kwargs))
        except (httpx.TransportError, _Answered) as failure:
            raise self._final(failure, path) from None
        raise AssertionError("unreachable")

    async def score(
        self, funcs: Sequence[str | FuncSpec], completions: Sequence[Completion], **columns: Any
    ) -> ScoreResult:
        funcs = await self.check(funcs)
        bodies = self._bodies(await self.server_info(), funcs, completions, columns)
        responses = await asyncio.gather(*(self.request("POST", "/score", content=b) for b in bodies))
        return ScoreResult.merge([self._result(r) for r in responses])

    async def columns(self, func: str | FuncSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """:meth:`RewardClient.columns`, asynchronously."""
        spec = FuncSpec(func) if isinstance(func, str) else func
        try:
            response = await self.request("POST", "/rewards/columns", content=json_body(_func_json(spec)))
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


class RemoteReward:
    """A reward-contract callable that scores through the service: usable as a TRL ``reward_funcs`` entry.

    Only the columns the configured reward reads are sent (trainers pass many other keyword arguments, some
    not JSON); the server says which (``POST /rewards/columns``), a custom judge template's included.
    It checks the reward and ``params`` against the server's policy when it is made (with ``connect=False``,
    at the first call), so a bad setting fails before training starts. ``alias`` and ``columns`` work as in
    :func:`rewardkit.get`; ``http`` holds the client's settings (``http_timeout_s``, ...).
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
        self.__name__ = alias or name
        self.name, self.base_url, self.token, self.params = name, base_url, token, params
        self.alias, self.column_map, self.http = alias, columns, dict(http or {})
        self._client: RewardClient | None = None
        self._columns: tuple[str, ...] | None = None
        if connect:
            self._connect()

    def _spec(self) -> FuncSpec:
        return FuncSpec(self.name, self.params, alias=self.alias, columns=self.column_map)

    def _connect(self) -> RewardClient:
        if self._client is None:
            self._client = RewardClient(self.base_url, self.token, **self.http)
        if self._columns is None:
            try:
                (spec,) = self._client.check([self._spec()])
                assert isinstance(spec, FuncSpec)
                self.params = dict(spec.params)  # a template file read here, sent inline
                self._columns = sum(self._client.columns(self._spec()), ())
            except Exception:
                self.close()  # no connection left open behind a refusal
                raise
        return self._client

    def __call__(self, completions: Sequence[Completion], **kwargs: Any) -> list[float | None]:
        client = self._connect()
        columns = {k: kwargs[k] for k in self._columns or () if kwargs.get(k) is not None}
        result = client.score([self._spec()], completions, **columns)
        return result.scores[self.__name__]

    def close(self) -> None:
        """Close the HTTP connections (a new call reopens them)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base_url": self.base_url,
            "token": self.token,
            "params": self.params,
            "alias": self.alias,
            "columns": self.column_map,
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
    connect: bool = True,
    alias: str | None = None,
    columns: dict[str, str] | None = None,
    http_timeout_s: float = 120.0,
    http_max_retries: int = 5,
    **params: Any,
) -> RemoteReward:
    """A callable with the reward contract that scores ``name`` on the service at ``base_url``; checks the
    reward and its ``params`` against the server now (``connect=False``: at the first call).

    ``params`` are the reward's (``timeout_s`` is the math reward's time limit); the HTTP client's settings
    are ``http_timeout_s`` and ``http_max_retries``. ``alias`` and ``columns`` work as in
    :func:`rewardkit.get`."""
    http = {"http_timeout_s": http_timeout_s, "http_max_retries": http_max_retries}
    return RemoteReward(
        name, base_url, token, connect=connect, alias=alias, columns=columns, http=http, **params
    )
