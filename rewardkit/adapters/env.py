"""The trainers' adapters configured from the environment: a reward in process, or the same on the service.

Every adapter (the ms-swift plugin, veRL, OpenRLHF's file form) reads the same variables:

- ``REWARDKIT_URL``: when set, rewards score on the service there (:class:`ServiceReward`), with the token
  in ``REWARDKIT_API_TOKEN``; when not, in this process (:func:`rewardkit.get`);
- ``REWARDKIT_PARAMS`` (JSON keyed by reward name, ``{"countdown": {"format_score": 0.1}}``) or the JSON
  file named by ``REWARDKIT_CONFIG``: each reward's parameters.

>>> reward = reward_from_env("countdown", {"format_score": 0.1})   # REWARDKIT_URL is not set here
>>> reward(["<answer>4 + 6</answer>"], target=[24], nums=[[4, 6]])
[0.1]
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rewardkit.core import Completion, Explained, Reward, Scored
from rewardkit.policy import load_params_table
from rewardkit.registry import get
from rewardkit.spec import RewardSpec

if TYPE_CHECKING:
    from rewardkit.client import RewardClient

__all__ = ["ServiceReward", "env_params", "reward_from_env", "service_url"]


def service_url() -> str | None:
    """``REWARDKIT_URL``, or ``None`` when rewards score in this process."""
    return os.environ.get("REWARDKIT_URL") or None


def env_params() -> dict[str, dict[str, Any]]:
    """``{reward: {parameter: value}}`` from ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``, read once per value
    of those variables (per-sample callers ask often). Treat it as read-only."""
    return _params_table(os.environ.get("REWARDKIT_PARAMS", ""), os.environ.get("REWARDKIT_CONFIG", ""))


@functools.lru_cache(maxsize=8)
def _params_table(params: str, config: str) -> dict[str, dict[str, Any]]:
    return load_params_table({"REWARDKIT_PARAMS": params, "REWARDKIT_CONFIG": config})


class _Services:
    """Per service URL (and token): one synchronous client (thread-safe, closed at exit); per URL: the
    server's policy (its ``GET /rewards`` body): per-sample and per-batch callers need not ask again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str | None], RewardClient] = {}
        self.infos: dict[str, dict[str, Any]] = {}

    def client(self, url: str, token: str | None) -> RewardClient:
        from rewardkit.client import RewardClient

        with self._lock:
            found = self._clients.get((url, token))
            if found is None:
                found = self._clients[(url, token)] = RewardClient(url, token)
            return found

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()


_services = _Services()
atexit.register(_services.close)


class ServiceReward(Reward):
    """A configured reward that scores on the service at ``url``: a :class:`~rewardkit.core.Reward` like the
    one in process (so the engine, the trainers' adapters and their columns treat both alike), with an async
    face too (:meth:`ascore_detailed`).

    With ``check``, the reward and its parameters are checked against the server's policy now (a template
    file is read here and sent inline) and the configured reward's columns are asked for, so that a bad
    setting fails at start-up; without, that happens at the first batch.
    """

    def __init__(
        self, name: str, url: str, params: Mapping[str, Any], *, token: str | None = None, check: bool = True
    ) -> None:
        self.url, self.token = url, token
        self.spec = RewardSpec(name, dict(params))
        self._columns: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        if check:
            self.check()

    def check(self) -> None:
        """Check the reward against the server's policy and learn its columns (see the class)."""
        from rewardkit.client import RewardClient

        with RewardClient(self.url, self.token) as client:
            (spec,) = client.check([self.spec])
            self._learn(spec, client.columns(spec))
            _services.infos[self.url] = client.server_info()

    def _learn(self, spec: str | RewardSpec, columns: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
        assert isinstance(spec, RewardSpec)
        self.spec, self._columns = spec, columns

    @property
    def reward_name(self) -> str:
        return self.spec.name

    def _server_columns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if self._columns is None:
            self.check()
        assert self._columns is not None
        return self._columns

    @property
    def required_columns(self) -> tuple[str, ...]:
        return self._server_columns()[0]

    @property
    def optional(self) -> tuple[str, ...]:
        return self._server_columns()[1]

    def params(self) -> dict[str, Any]:
        return dict(self.spec.params)

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        result = _services.client(self.url, self.token).score([self.spec], list(completions), **columns)
        return self._verdicts(result.scores, result.errors)

    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """:meth:`score_detailed` on the caller's event loop: a client for this call and closed with it
        (trainers' loops come and go), which asks the server's policy only the first time."""
        from rewardkit.client import AsyncRewardClient

        info = _services.infos.get(self.url)
        async with AsyncRewardClient(self.url, self.token, server_info=info) as client:
            if self._columns is None:  # learnt here, not by check(), which would block the loop
                (spec,) = await client.check([self.spec])
                self._learn(spec, await client.columns(spec))
            bound = self.bind_columns(completions, columns)
            result = await client.score([self.spec], list(completions), **bound)
            _services.infos[self.url] = await client.server_info()
        verdicts = self._verdicts(result.scores, result.errors)
        return Scored([v.value for v in verdicts], [v.reason for v in verdicts])

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values

    def _verdicts(self, scores: Mapping[str, list[Any]], errors: Mapping[str, list[Any]]) -> list[Explained]:
        """The service's values and reasons for this reward (its result key is the reward's name)."""
        values = scores[self.reward_name]
        reasons = errors.get(self.reward_name) or [None] * len(values)
        return [Explained(value, reason, None) for value, reason in zip(values, reasons, strict=True)]


def reward_from_env(name: str, params: Mapping[str, Any] | None = None, *, check: bool = True) -> Reward:
    """The reward ``name`` as the adapters configure it: on the service at ``REWARDKIT_URL`` when that is set
    (token ``REWARDKIT_API_TOKEN``; ``check``: against the server's policy now), else in this process.

    Args:
        params: the reward's parameters; by default its entry in ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``.
    """
    params = env_params().get(name, {}) if params is None else params
    url = service_url()
    if url is None:
        return get(name, **params)
    token = os.environ.get("REWARDKIT_API_TOKEN") or None
    return ServiceReward(name, url, params, token=token, check=check)
