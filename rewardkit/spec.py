"""What names a reward to score with, and the one check of such a spec against a server's policy.

A :class:`RewardSpec` is a registry name, its parameters, its weight in the summed reward, an alias (the key
of its results) and a column map. It is written four ways and :meth:`RewardSpec.parse` reads them all: a name
(``"math"``), the command line's ``NAME:key=value,...``, JSON (``{"name": "math", "params": {...}}``, what the
service takes) and a configured reward.

Which parameters a remote caller may set is the *policy table* a server publishes on ``GET /rewards``:
``{reward: {parameter: {"settable": ..., "cap": ..., "inline_file": ..., "reward_spec": ...,
"reward_spec_map": ...}}}``. :func:`check` checks a spec against such a table, recursively through the reward
specs nested in its parameters. The server calls it on its own table before building
(:class:`rewardkit.policy.RemotePolicy`), the client on the table it fetched, so a misconfigured run fails at
start-up with the server's own words.

>>> from rewardkit.spec import RewardSpec, check
>>> RewardSpec.parse('format:tags=["think","answer"],think_prefilled=true').params
{'tags': ['think', 'answer'], 'think_prefilled': True}
>>> table = {"math": {"timeout_s": {"settable": True, "cap": 60}, "workers": {"settable": False}}}
>>> check(table, RewardSpec.parse("math:timeout_s=2")).params
{'timeout_s': 2}
>>> check(table, RewardSpec("math", {"timeout_s": 3600}))
Traceback (most recent call last):
...
rewardkit.spec.PolicyError: reward 'math': parameter 'timeout_s' is 3600, over this server's cap of 60
>>> check(table, RewardSpec("math", {"workers": 8}), server="http://rk:8000")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rewardkit.spec.PolicyError: reward 'math': parameter 'workers' is a server setting on http://rk:8000; ...
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.core import Reward, RewardError, finite_number
from rewardkit.redact import did_you_mean, shown

__all__ = [
    "MAX_FUNCS",
    "MAX_SPECS",
    "MAX_SPEC_DEPTH",
    "MAX_SPEC_MAP",
    "MAX_WEIGHT",
    "CallerParam",
    "PolicyError",
    "RewardSpec",
    "UnknownRewardError",
    "check",
    "read_if_file",
]

MAX_WEIGHT = 1e6  # |weight|: larger ones are refused, so a weighted sum always stays a finite number
MAX_FUNCS = 64  # rewards in one service request (POST /score); in process there is no limit
MAX_SPEC_DEPTH = 4  # nested reward specs (a composite of a composite ...)
MAX_SPEC_MAP = 64  # rewards in one map of specs (routes)
MAX_SPECS = 256  # rewards one top-level spec names, nested ones included

SPEC_KEYS = frozenset({"name", "params", "weight", "alias", "columns"})
NESTED_KEYS = frozenset({"name", "params", "columns"})  # a nested reward has no weight or alias of its own


class PolicyError(RewardError):
    """A request set a parameter it may not set, or a value over the server's cap."""


class UnknownRewardError(PolicyError):
    """No reward is registered under the requested name."""


@dataclass(frozen=True)
class CallerParam:
    """A parameter that a remote caller may set (declared when a reward is registered).

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


@dataclass(frozen=True)
class RewardSpec:
    """One reward to score with: its registry name, parameters and weight in the summed reward; ``alias``
    keys its results (and is its ``__name__``), ``columns`` maps its columns to the caller's (see
    :func:`rewardkit.get`). ``RewardError`` for a weight that is not a finite number within +-1e6."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    alias: str | None = None
    columns: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        w = self.weight
        if not finite_number(w) or abs(w) > MAX_WEIGHT:
            raise RewardError(
                f"reward {shown(self.name)}: weight must be a finite number within +-{MAX_WEIGHT:g}, "
                f"got {shown(w)}"
            )

    @classmethod
    def parse(cls, value: str | Mapping[str, Any] | RewardSpec | Reward) -> RewardSpec:
        """A spec from any of its spellings.

        >>> RewardSpec.parse("countdown:format_score=0.1")
        RewardSpec(name='countdown', params={'format_score': 0.1}, weight=1.0, alias=None, columns=None)
        >>> RewardSpec.parse({"name": "math", "weight": 2, "columns": {"solution": "answer"}}).weight
        2
        """
        if isinstance(value, RewardSpec):
            return value
        if isinstance(value, Reward):
            return cls(value.reward_name, value.params(), alias=value._alias, columns=value._column_map)
        if isinstance(value, str):
            return _parse_text(value)
        if isinstance(value, Mapping) and isinstance(value.get("name"), str):
            unknown = sorted(set(value) - SPEC_KEYS)
            if unknown:
                raise RewardError(
                    f"a reward spec has {', '.join(sorted(SPEC_KEYS))}; not {', '.join(map(str, unknown))}"
                )
            params = value.get("params") or {}
            if not isinstance(params, Mapping):
                raise RewardError(
                    f"reward {shown(value['name'])}: params must be an object, got {shown(params)}"
                )
            return cls(
                value["name"],
                dict(params),
                value.get("weight", 1.0),
                value.get("alias"),
                value.get("columns"),
            )
        raise RewardError(
            f"a reward spec is a name or {{'name': ..., 'params': {{...}}}}, got {shown(value)}"
        )

    @classmethod
    def nested(cls, value: Any, owner: str) -> RewardSpec:
        """The spec of a reward named inside another's parameters (``cosine``'s ``accuracy``, ``route``'s
        routes): a name, or ``{"name", "params", "columns"}``. ``PolicyError`` naming ``owner`` otherwise."""
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping) and isinstance(value.get("name"), str):
            unknown = sorted(set(value) - NESTED_KEYS)
            params = value.get("params") or {}
            if unknown:  # a typo ("param") must not drop the settings silently
                raise PolicyError(
                    f"{owner}: a nested reward spec has name, params and columns; not "
                    f"{', '.join(map(str, unknown))}"
                )
            if isinstance(params, Mapping):
                return cls(value["name"], dict(params), columns=value.get("columns"))
        raise PolicyError(f"{owner}: {_NESTED_SHAPE}, got {shown(value)}")

    def replace(self, **changes: Any) -> RewardSpec:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The JSON object the service takes (``FuncRequest``)."""
        body: dict[str, Any] = {"name": self.name, "weight": self.weight, "params": dict(self.params)}
        if self.alias is not None:
            body["alias"] = self.alias
        if self.columns is not None:
            body["columns"] = dict(self.columns)
        return body


_NESTED_SHAPE = 'a nested reward is a name or {"name": ..., "params": {...}, "columns": {...}}'


def _parse_text(text: str) -> RewardSpec:
    """``NAME[:k=v,...]``; values are JSON (``0.1``, ``true``, ``["a","b"]``) or bare strings."""
    name, _, rest = text.partition(":")
    params: dict[str, Any] = {}
    if rest.strip():
        for item in _split_top_level(rest, ","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise RewardError(
                    f"bad --func {shown(text)}: expected NAME:key=value,... (got {shown(item)})"
                )
            params[key.strip()] = _param_value(value.strip())
    return RewardSpec(name.strip(), params)


def _split_top_level(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes (so ``tags=["a","b"]`` stays whole)."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def _param_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a bare word is a string


def read_if_file(value: Any) -> Any:
    """The text of the file ``value`` names, for parameters that take a text or a file (a judge template);
    ``value`` itself otherwise. A value with a ``{`` is text (a template), never a file name."""
    if isinstance(value, str) and "{" not in value and len(value) < 4096:
        path = Path(value)
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return value


#: ``{reward: {parameter: its policy}}``, as ``GET /rewards`` publishes it (``params`` of each reward)
PolicyTable = Mapping[str, Mapping[str, Any]]


def check(
    table: PolicyTable,
    spec: RewardSpec,
    *,
    server: str | None = None,
    inline: Callable[[Any], Any] | None = None,
) -> RewardSpec:
    """``spec`` checked against a server's policy table, recursively: every reward exists there, every
    parameter is one a caller may set, numbers are within their caps, maps of rewards hold at most
    :data:`MAX_SPEC_MAP`, specs nest at most :data:`MAX_SPEC_DEPTH` deep and name at most :data:`MAX_SPECS`
    rewards in all. Returns the spec with ``inline`` applied to ``inline_file`` parameters (a client reads a
    file it names; a server passes none: it reads no files for callers).

    Args:
        server: where the table comes from, for the messages (``None``: this server).

    Raises:
        UnknownRewardError: a reward the table does not have.
        PolicyError: anything else, saying what to change.
    """
    return spec.replace(params=_Check(table, server, inline).params(spec.name, spec.params, 0))


class _Check:
    """One walk over a spec and its nested specs, counting the rewards it names."""

    def __init__(self, table: PolicyTable, server: str | None, inline: Callable[[Any], Any] | None) -> None:
        self.table, self.server, self.inline = table, server, inline
        self.on = "" if server is None else f" on {server}"
        self.budget = MAX_SPECS

    def params(self, name: str, params: Mapping[str, Any], depth: int) -> dict[str, Any]:
        if depth > MAX_SPEC_DEPTH:
            raise PolicyError(f"reward specs nested deeper than {MAX_SPEC_DEPTH}")
        self.budget -= 1
        if self.budget < 0:
            raise PolicyError(f"one reward spec builds at most {MAX_SPECS} rewards (nested specs and routes)")
        table = self._entry(name)
        checked: dict[str, Any] = {}
        for param, value in params.items():
            policy = table.get(param)
            if policy is None:
                allowed = ", ".join(sorted(table)) or "none"
                raise PolicyError(
                    f"reward {shown(name)}{self.on} has no parameter {shown(param)}; parameters: {allowed}"
                )
            checked[param] = self._value(name, param, value, policy, depth)
        return checked

    def _entry(self, name: str) -> Mapping[str, Any]:
        try:
            return self.table[name]
        except KeyError:
            known = ", ".join(sorted(self.table)) or "none"
            if self.server is None:
                hint = did_you_mean(name, self.table)
                raise UnknownRewardError(
                    f"unknown reward {shown(name)}{hint}; registered rewards: {known}"
                ) from None
            raise UnknownRewardError(
                f"the service at {self.server} has no reward {shown(name)}{did_you_mean(name, self.table)}; "
                f"it has {known}"
            ) from None

    def _value(self, name: str, param: str, value: Any, policy: Any, depth: int) -> Any:
        if not isinstance(policy, Mapping) or "settable" not in policy:
            return value  # a server that publishes no policy: it judges for itself
        at = f"reward {shown(name)}: parameter {shown(param)}"
        if not policy["settable"]:
            raise PolicyError(
                f"{at} is a server setting{self.on}; a caller cannot set it "
                "(the operator sets it in REWARDKIT_PARAMS or REWARDKIT_CONFIG): drop it"
            )
        cap = policy.get("cap")
        if cap is not None and _over(value, cap):
            where = "this server's cap" if self.server is None else "the cap"
            raise PolicyError(f"{at} is {shown(value)}, over {where} of {cap:g}{self.on}")
        if policy.get("inline_file") and self.inline is not None:
            value = self.inline(value)
        if policy.get("reward_spec"):
            return self._nested(value, f"reward {shown(name)}: parameter {shown(param)}", depth)
        if policy.get("reward_spec_map"):
            if not isinstance(value, Mapping):
                raise PolicyError(
                    f"reward {shown(name)}: parameter {shown(param)} is a map of rewards, "
                    "an object of {key: reward name or spec}"
                )
            if len(value) > MAX_SPEC_MAP:
                raise PolicyError(f"{at} holds {len(value)} rewards; at most {MAX_SPEC_MAP}")
            return {
                key: self._nested(spec, f"reward {shown(name)}: route {shown(key)}", depth)
                for key, spec in value.items()
            }
        return value

    def _nested(self, value: Any, owner: str, depth: int) -> Any:
        if depth + 1 > MAX_SPEC_DEPTH:
            raise PolicyError(f"reward specs nested deeper than {MAX_SPEC_DEPTH}")
        spec = RewardSpec.nested(value, owner)
        params = self.params(spec.name, spec.params, depth + 1)
        return value if isinstance(value, str) else {**value, "params": params}


def _over(value: Any, cap: float) -> bool:
    """A number over ``cap`` (NaN is over every cap); other values are not numbers to cap."""
    return isinstance(value, int | float) and not isinstance(value, bool) and not value <= cap
