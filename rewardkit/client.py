"""Clients of the scoring service: sync, async, and a reward-contract callable for trainers.

    from rewardkit.client import RewardClient, remote_reward

    client = RewardClient("http://127.0.0.1:8000")        # token: argument or REWARDKIT_API_TOKEN
    client.score(["countdown"], ["<answer>6 * 4</answer>"], target=[24], nums=[[4, 6]]).rewards   # [1.0]
    trl_reward = remote_reward("math", "http://127.0.0.1:8000", timeout_s=5.0)   # reward_funcs=[trl_reward]

Batches over the server's limit are split; connection errors, 429 and 5xx are retried with exponential
backoff (``Retry-After`` is honoured); other 4xx are raised at once as :class:`RewardServiceError`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.core import Completion
from rewardkit.engine import FuncSpec

try:
    import httpx
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the rewardkit client needs httpx: pip install 'rewardkit[service]'") from exc

__all__ = ["AsyncRewardClient", "RewardClient", "RewardServiceError", "ScoreResult", "remote_reward"]

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
    return {"name": func.name, "weight": func.weight, "params": dict(func.params)}


def json_body(body: Any) -> bytes:
    """ASCII JSON: faster to encode here than UTF-8 output, and text a model broke (lone surrogates)
    travels escaped instead of failing the call."""
    return json.dumps(body).encode("ascii")


def _chunks(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, n)) for start in range(0, n, size)] or [(0, 0)]


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


class _Retrying:
    """What the sync and async clients share: settings, backoff, and turning responses into results."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        max_batch: int = 16_384,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        token = token if token is not None else os.environ.get("REWARDKIT_API_TOKEN") or None
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.max_batch = max_batch

    def _backoff_or_raise(
        self, attempt: int, response: httpx.Response | None, error: Exception | None, path: str
    ) -> float:
        """How long to wait before the next attempt; raises when the failure is final."""
        if not self._should_retry(attempt, response):
            raise self._fail(response, error, self.base_url + path)
        return self._delay(attempt, response)

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = response.headers.get("retry-after", "")
            if retry_after.replace(".", "", 1).isdigit():
                return min(float(retry_after), self.max_backoff_s)
        backoff: float = self.backoff_s * 2.0**attempt
        return min(backoff, self.max_backoff_s) * (0.5 + random.random() / 2)

    def _should_retry(self, attempt: int, response: httpx.Response | None) -> bool:
        if attempt >= self.max_retries:
            return False
        return response is None or response.status_code in RETRY_STATUS

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

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call with the retry policy; returns a 2xx response or raises RewardServiceError."""
        attempt = 0
        while True:
            response, error = None, None
            try:
                response = self._http.request(method, path, **kwargs)
                if response.status_code < 400:
                    return response
            except httpx.TransportError as exc:
                error = exc
            time.sleep(self._backoff_or_raise(attempt, response, error, path))
            attempt += 1

    def score(
        self, funcs: Sequence[str | FuncSpec], completions: Sequence[Completion], **columns: Any
    ) -> ScoreResult:
        """Score a batch with one or more rewards (split into requests of at most ``max_batch``)."""
        parts = [
            self._result(
                self.request(
                    "POST", "/score", content=json_body(_body(funcs, completions, columns, start, end))
                )
            )
            for start, end in _chunks(len(completions), self.max_batch)
        ]
        return ScoreResult.merge(parts)

    def rewards(self) -> list[dict[str, Any]]:
        """The server's registry (``GET /rewards``)."""
        data: dict[str, Any] = self.request("GET", "/rewards").json()
        return list(data["rewards"])

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRewardClient(_Retrying):
    """Asynchronous client of the scoring service (same policy as :class:`RewardClient`)."""

    def __init__(self, base_url: str, token: str | None = None, **options: Any) -> None:
        super().__init__(base_url, token, **options)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self.headers, timeout=self.timeout)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            response, error = None, None
            try:
                response = await self._http.request(method, path, **kwargs)
                if response.status_code < 400:
                    return response
            except httpx.TransportError as exc:
                error = exc
            await asyncio.sleep(self._backoff_or_raise(attempt, response, error, path))
            attempt += 1

    async def score(
        self, funcs: Sequence[str | FuncSpec], completions: Sequence[Completion], **columns: Any
    ) -> ScoreResult:
        chunks = _chunks(len(completions), self.max_batch)
        responses = await asyncio.gather(
            *(
                self.request("POST", "/score", content=json_body(_body(funcs, completions, columns, s, e)))
                for s, e in chunks
            )
        )
        return ScoreResult.merge([self._result(r) for r in responses])

    async def rewards(self) -> list[dict[str, Any]]:
        data: dict[str, Any] = (await self.request("GET", "/rewards")).json()
        return list(data["rewards"])

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRewardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class RemoteReward:
    """A reward-contract callable that scores through the service: usable as a TRL ``reward_funcs`` entry.

    Only the reward's own columns are sent (trainers pass many other keyword arguments, some not JSON).
    """

    def __init__(self, name: str, base_url: str, token: str | None = None, **params: Any) -> None:
        self.__name__ = name
        self.name, self.base_url, self.token, self.params = name, base_url, token, params
        self._client: RewardClient | None = None
        self._columns: tuple[str, ...] | None = None

    def _connect(self) -> RewardClient:
        if self._client is None:
            self._client = RewardClient(self.base_url, self.token)
        if self._columns is None:
            info = {r["name"]: r for r in self._client.rewards()}
            if self.name not in info:
                raise RewardServiceError(
                    f"the service at {self.base_url} has no reward {self.name!r}; it has {sorted(info)}"
                )
            self._columns = tuple(info[self.name]["columns"]) + tuple(info[self.name]["optional_columns"])
        return self._client

    def __call__(self, completions: Sequence[Completion], **kwargs: Any) -> list[float | None]:
        client = self._connect()
        columns = {k: kwargs[k] for k in self._columns or () if kwargs.get(k) is not None}
        result = client.score([FuncSpec(self.name, self.params)], completions, **columns)
        return result.scores[self.name]

    def close(self) -> None:
        """Close the HTTP connections (a new call reopens them)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "base_url": self.base_url, "token": self.token, "params": self.params}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["base_url"], state["token"], **state["params"])  # type: ignore[misc]


def remote_reward(name: str, base_url: str, token: str | None = None, **params: Any) -> RemoteReward:
    """A callable with the reward contract that scores ``name`` on the service at ``base_url``."""
    return RemoteReward(name, base_url, token, **params)
