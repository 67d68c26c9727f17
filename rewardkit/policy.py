"""What a remote caller may set: the trust boundary between a scoring service and its callers.

In-process, ``rewardkit.get(name, **params)`` takes every parameter: a user configuring their own process is
not a remote caller. A service (or any adapter that takes requests from others) builds rewards through a
:class:`RemotePolicy` instead. Each reward declares, when it is registered, which parameters a caller may set
(:class:`CallerParam`, optionally with a cap on numbers that size work); every other parameter is a *server
setting*, configured by the operator (``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``), never by a request.

>>> from rewardkit.policy import RemotePolicy
>>> policy = RemotePolicy()
>>> policy.build("math", {"timeout_s": 2.0}).timeout_s
2.0
>>> policy.build("math", {"workers": 64})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rewardkit.spec.PolicyError: reward 'math': parameter 'workers' is a server setting; ...
>>> policy.build("math", {"timeout_s": 3600})
Traceback (most recent call last):
...
rewardkit.spec.PolicyError: reward 'math': parameter 'timeout_s' is 3600, over this server's cap of 60
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rewardkit import registry
from rewardkit.core import Reward, RewardError, finite_number
from rewardkit.redact import clip
from rewardkit.spec import (
    MAX_SPEC_DEPTH,
    MAX_SPEC_MAP,
    MAX_SPECS,
    CallerParam,
    PolicyError,
    RewardSpec,
    UnknownRewardError,
    check,
    read_if_file,
)

__all__ = [
    "MAX_SPECS",
    "MAX_SPEC_DEPTH",
    "MAX_SPEC_MAP",
    "CallerParam",
    "PolicyError",
    "RemotePolicy",
    "load_params_table",
    "read_if_file",
]


def load_params_table(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """``{reward name: {parameter: value}}`` from ``REWARDKIT_PARAMS`` (JSON) or the JSON file named by
    ``REWARDKIT_CONFIG``; empty when neither is set. Raises ``ValueError`` naming the source."""
    env = os.environ if environ is None else environ
    raw, source = env.get("REWARDKIT_PARAMS"), "REWARDKIT_PARAMS"
    if not raw and env.get("REWARDKIT_CONFIG"):
        source = env["REWARDKIT_CONFIG"]
        try:
            raw = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"REWARDKIT_CONFIG: cannot read {source}: {exc.strerror}") from None
    if not raw:
        return {}
    return params_table(_json(raw, source), source)


def params_table(table: object, source: str) -> dict[str, dict[str, Any]]:
    """Check the shape ``{reward name: {parameter: value}}``."""
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, dict) for k, v in table.items()
    ):
        raise ValueError(f"{source} must be a JSON object of {{reward name: {{parameter: value}}}}")
    return {name: dict(params) for name, params in table.items()}


def _json(raw: str, source: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source} is not valid JSON: {exc}") from None


class RemotePolicy:
    """Builds rewards for remote callers: caller parameters checked and capped, server settings merged in.

    Args:
        server_params: the operator's ``{reward: {parameter: value}}`` (any parameter; the reward's
            remote defaults apply under them).
        caps: the operator's ``{reward: {parameter: cap}}``, replacing the declared default caps.

    Raises ``ValueError`` for a configuration that names an unknown reward or parameter, or caps a parameter
    a caller cannot set.
    """

    def __init__(
        self,
        server_params: Mapping[str, Mapping[str, Any]] | None = None,
        caps: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self.server_params = {k: dict(v) for k, v in (server_params or {}).items()}
        self.caps: dict[str, dict[str, float]] = {}
        for name, params in self.server_params.items():
            info = self._info(name, "REWARDKIT_PARAMS")
            unknown = sorted(set(params) - set(info.params))
            if unknown:
                raise ValueError(
                    f"REWARDKIT_PARAMS: reward {name!r} has no parameter(s) {', '.join(unknown)}; "
                    f"parameters: {', '.join(sorted(info.params)) or 'none'}"
                )
            for param, value in params.items():  # the operator's files are read once, here
                declared = info.caller_params.get(param)
                if declared is not None and declared.inline_file:
                    params[param] = read_if_file(value)
        for name, table in (caps or {}).items():
            info = self._info(name, "REWARDKIT_CAPS")
            for param, cap in table.items():
                if param not in info.caller_params:
                    raise ValueError(
                        f"REWARDKIT_CAPS: {name}.{param} is not a parameter callers may set, so it has no cap"
                    )
                if not finite_number(cap) or cap < 0:
                    raise ValueError(f"REWARDKIT_CAPS: {name}.{param} must be a non-negative number")
            self.caps[name] = dict(table)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RemotePolicy:
        """The operator's policy from ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG`` and ``REWARDKIT_CAPS``."""
        env = os.environ if environ is None else environ
        caps = (
            params_table(_json(env["REWARDKIT_CAPS"], "REWARDKIT_CAPS"), "REWARDKIT_CAPS")
            if env.get("REWARDKIT_CAPS")
            else {}
        )
        return cls(load_params_table(env), caps)

    def _info(self, name: str, source: str) -> Any:
        try:
            return registry.info(name)
        except RewardError as exc:
            raise ValueError(f"{source}: {exc}") from None

    def cap(self, name: str, param: str) -> float | None:
        """The cap on a caller's value of ``name.param`` on this server (``None``: no cap)."""
        if param in self.caps.get(name, {}):
            return self.caps[name][param]
        declared: CallerParam | None = registry.info(name).caller_params.get(param)
        return declared.cap if declared is not None else None

    @property
    def table(self) -> Mapping[str, Mapping[str, Any]]:
        """This server's policy table, ``{reward: describe(reward)}``: what ``GET /rewards`` publishes and
        what :func:`rewardkit.spec.check` checks a caller's spec against (read from the registry as it is
        now, so rewards registered later are in it)."""
        return _Table(self)

    def build(self, name: str, params: Mapping[str, Any] | None = None) -> Reward:
        """A reward configured for a remote caller: the caller's spec checked against this server's table
        (:func:`rewardkit.spec.check`, the check clients run on the table they fetch), then remote defaults,
        server settings and the caller's parameters merged, nested specs built the same way. Rewards nested
        in the operator's settings or in a reward's defaults (cosine's ``accuracy="math"``) are built without
        the caller checks: a judge the operator routes to keeps the remote defaults (no server files), a
        math reward the operator's workers.

        Raises ``UnknownRewardError`` or ``PolicyError`` naming the parameter (and the value and the cap, for
        a value over its cap)."""
        spec = check(self.table, RewardSpec(name, dict(params or {})))
        return self._build(spec.name, spec.params, caller=True)

    def _build(self, name: str, params: Mapping[str, Any], *, caller: bool) -> Reward:
        info = registry.info(name)
        if caller:
            for param, value in params.items():
                validate = info.caller_params[param].check
                if validate is not None:  # checks the table cannot publish ("an inline template")
                    try:
                        validate(value)
                    except ValueError as exc:
                        message = clip(str(exc))
                        raise PolicyError(f"reward {name!r}: parameter {param!r}: {message}") from None
        merged = {**info.remote_defaults, **self.server_params.get(name, {}), **params}
        for param, declared in info.caller_params.items():
            value = merged.get(param, info.params.get(param))
            by_caller = caller and param in params
            if declared.reward_spec and value is not None:
                merged[param] = self._nested(value, f"reward {name!r}", by_caller)
            elif declared.reward_spec_map and isinstance(value, Mapping):
                merged[param] = {k: self._nested(v, f"reward {name!r}", by_caller) for k, v in value.items()}
        return registry.get(name, **merged)

    def _nested(self, value: Any, owner: str, caller: bool) -> Reward:
        if isinstance(value, Reward):  # built already (an operator's Reward object)
            return value
        spec = RewardSpec.nested(value, owner)
        reward = self._build(spec.name, spec.params, caller=caller)
        if spec.columns is not None:
            try:
                reward.configure(columns=spec.columns)
            except ValueError as exc:
                raise PolicyError(f"reward {spec.name!r}: {clip(str(exc))}") from None
        return reward

    def describe(self, name: str) -> dict[str, dict[str, Any]]:
        """Per parameter: ``default`` (the server's effective value), ``settable`` (by a caller), ``cap``,
        and ``inline_file`` / ``reward_spec`` where they apply. What ``GET /rewards`` publishes."""
        info = registry.info(name)
        server = {**info.remote_defaults, **self.server_params.get(name, {})}
        out: dict[str, dict[str, Any]] = {}
        for param, default in info.params.items():
            declared: CallerParam | None = info.caller_params.get(param)
            entry: dict[str, Any] = {"settable": declared is not None}
            if declared is not None:
                entry["default"] = _public(server.get(param, default))
                entry["cap"] = self.cap(name, param)
                if declared.inline_file:
                    entry["inline_file"] = True
                if declared.reward_spec:
                    entry["reward_spec"] = True
                if declared.reward_spec_map:
                    entry["reward_spec_map"] = True
            out[param] = entry
        return out


def _public(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


class _Table(Mapping[str, Mapping[str, Any]]):
    """A policy's table, read lazily: one reward's entry is :meth:`RemotePolicy.describe`."""

    def __init__(self, policy: RemotePolicy) -> None:
        self._policy = policy

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        try:
            return self._policy.describe(name)
        except UnknownRewardError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter([info.name for info in registry.list_rewards()])

    def __len__(self) -> int:
        return len(registry.list_rewards())
