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
rewardkit.policy.PolicyError: reward 'math': parameter 'workers' is a server setting; ...
>>> policy.build("math", {"timeout_s": 3600})
Traceback (most recent call last):
...
rewardkit.policy.PolicyError: reward 'math': parameter 'timeout_s' is 3600, over this server's cap of 60
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit.core import Reward, RewardError

__all__ = [
    "CallerParam",
    "PolicyError",
    "RemotePolicy",
    "load_params_table",
    "read_if_file",
]


class PolicyError(RewardError):
    """A request set a parameter it may not set, or a value over the server's cap."""


@dataclass(frozen=True)
class CallerParam:
    """A parameter that a remote caller may set.

    Args:
        cap: the default upper bound on a caller's value (numbers that size work: time limits, lengths,
            concurrency); the operator may change it (``REWARDKIT_CAPS``). ``None``: no cap.
        check: validates a caller's value further (raises ``ValueError``), e.g. "an inline template".
        inline_file: clients read a file named by this parameter and send its text inline.
        reward_spec: the value names another reward (``"math"`` or ``{"name": ..., "params": {...}}``, with
            an optional ``"columns"`` map); it is checked by the same policy, recursively, and passed on
            built.
        reward_spec_map: the value maps keys to such specs (the ``route`` reward's routes), at most
            :data:`MAX_SPEC_MAP` of them; each is checked and built the same way.
    """

    cap: float | None = None
    check: Callable[[Any], None] | None = None
    inline_file: bool = False
    reward_spec: bool = False
    reward_spec_map: bool = False


MAX_SPEC_DEPTH = 4  # nested reward specs (a composite of a composite ...)
MAX_SPEC_MAP = 64  # rewards in one map of specs (routes)
MAX_SPECS = 256  # rewards one top-level spec builds, nested ones included


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


def read_if_file(value: Any) -> Any:
    """The text of the file ``value`` names, for parameters that take a text or a file (a judge template);
    ``value`` itself otherwise. A value with a ``{`` is text (a template), never a file name."""
    if isinstance(value, str) and "{" not in value and len(value) < 4096:
        path = Path(value)
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return value


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
        from rewardkit import registry

        self._registry = registry
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
                if not _is_number(cap) or not _finite(cap) or cap < 0:
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
            return self._registry.info(name)
        except RewardError as exc:
            raise ValueError(f"{source}: {exc}") from None

    def cap(self, name: str, param: str) -> float | None:
        """The cap on a caller's value of ``name.param`` on this server (``None``: no cap)."""
        if param in self.caps.get(name, {}):
            return self.caps[name][param]
        declared: CallerParam | None = self._registry.info(name).caller_params.get(param)
        return declared.cap if declared is not None else None

    def check(
        self, name: str, params: Mapping[str, Any], *, _depth: int = 0, _budget: list[int] | None = None
    ) -> dict[str, Any]:
        """The caller's parameters for ``name``, checked, with nested reward specs built.

        Raises PolicyError naming the parameter (and the value and the cap, for a value over its cap)."""
        info = self._registry.info(name)
        checked: dict[str, Any] = {}
        for param, value in params.items():
            if param not in info.params:
                allowed = ", ".join(sorted(info.params)) or "none"
                raise PolicyError(f"reward {name!r} has no parameter {param!r}; parameters: {allowed}")
            declared: CallerParam | None = info.caller_params.get(param)
            if declared is None:
                raise PolicyError(
                    f"reward {name!r}: parameter {param!r} is a server setting; a caller cannot set it "
                    "(the operator sets it in REWARDKIT_PARAMS or REWARDKIT_CONFIG)"
                )
            cap = self.cap(name, param)
            if cap is not None and _is_number(value) and not value <= cap:  # NaN is over every cap
                raise PolicyError(
                    f"reward {name!r}: parameter {param!r} is {value!r}, over this server's cap of {cap:g}"
                )
            if declared.check is not None:
                try:
                    declared.check(value)
                except ValueError as exc:
                    raise PolicyError(f"reward {name!r}: parameter {param!r}: {exc}") from None
            if declared.reward_spec:
                value = self._nested(value, _depth, _budget)
            elif declared.reward_spec_map:
                value = self._nested_map(value, _depth, _budget)
            checked[param] = value
        return checked

    def _nested_map(
        self, value: Any, depth: int, budget: list[int] | None, trusted: bool = False
    ) -> dict[str, Reward]:
        if not isinstance(value, Mapping):
            raise PolicyError("a map of rewards is an object of {key: reward name or spec}")
        if len(value) > MAX_SPEC_MAP and not trusted:
            raise PolicyError(f"a map of rewards holds at most {MAX_SPEC_MAP} rewards, got {len(value)}")
        return {key: self._nested(spec, depth, budget, trusted) for key, spec in value.items()}

    def _nested(self, value: Any, depth: int, budget: list[int] | None, trusted: bool = False) -> Reward:
        if isinstance(value, Reward):  # built already (an operator's Reward object)
            return value
        if depth >= MAX_SPEC_DEPTH:
            raise PolicyError(f"reward specs nested deeper than {MAX_SPEC_DEPTH}")
        if isinstance(value, str):
            return self.build(value, {}, _depth=depth + 1, _budget=budget, _trusted=trusted)
        if isinstance(value, Mapping) and isinstance(value.get("name"), str):
            params = value.get("params") or {}
            if not isinstance(params, Mapping) or set(value) - {"name", "params", "columns"}:
                raise PolicyError(_NESTED_SHAPE)
            reward = self.build(value["name"], params, _depth=depth + 1, _budget=budget, _trusted=trusted)
            if value.get("columns") is not None:
                try:
                    reward.configure(columns=value["columns"])
                except ValueError as exc:
                    raise PolicyError(f"reward {value['name']!r}: {exc}") from None
            return reward
        raise PolicyError(_NESTED_SHAPE)

    def build(
        self,
        name: str,
        params: Mapping[str, Any] | None = None,
        *,
        _depth: int = 0,
        _budget: list[int] | None = None,
        _trusted: bool = False,
    ) -> Reward:
        """A reward configured for a remote caller: remote defaults, then server settings, then the caller's
        checked parameters. Rewards nested in the operator's settings or in a reward's defaults (cosine's
        ``accuracy="math"``) are built the same way, without the caller checks: a judge the operator routes to
        keeps the remote defaults (no server files), a math reward the operator's workers."""
        info = self._registry.info(name)
        budget = [MAX_SPECS] if _budget is None else _budget  # rewards one top-level spec may build
        budget[0] -= 1
        if budget[0] < 0:
            raise PolicyError(f"one reward spec builds at most {MAX_SPECS} rewards (nested specs and routes)")
        caller = (
            dict(params or {}) if _trusted else self.check(name, params or {}, _depth=_depth, _budget=budget)
        )
        merged = {**info.remote_defaults, **self.server_params.get(name, {}), **caller}
        for param, declared in info.caller_params.items():
            if param in caller and not _trusted:
                continue  # the caller's: built by check()
            value = merged.get(param, info.params.get(param))
            if declared.reward_spec and value is not None:
                merged[param] = self._nested(value, _depth, budget, trusted=True)
            elif declared.reward_spec_map and value:
                merged[param] = self._nested_map(value, _depth, budget, trusted=True)
        return self._registry.get(name, **merged)

    def describe(self, name: str) -> dict[str, dict[str, Any]]:
        """Per parameter: ``default`` (the server's effective value), ``settable`` (by a caller), ``cap``,
        and ``inline_file`` / ``reward_spec`` where they apply. What ``GET /rewards`` publishes."""
        info = self._registry.info(name)
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


_NESTED_SHAPE = 'a nested reward is a name or {"name": ..., "params": {...}, "columns": {...}}'


def _public(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
