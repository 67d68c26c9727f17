"""One registry of rewards, read by every adapter (Python API, CLI, service, ms-swift plugin).

Register a plain function with the reward contract, or a :class:`~rewardkit.core.Reward` subclass:

>>> import rewardkit
>>> @rewardkit.register("length_penalty", columns=[])
... def length_penalty(completions, *, limit: int = 100, **kwargs):
...     '''Penalise completions longer than ``limit`` characters.'''
...     return [0.0 if len(c) <= limit else -1.0 for c in completions]
>>> reward = rewardkit.get("length_penalty", limit=3)
>>> reward.__name__, reward(["abc", "abcd"])
('length_penalty', [0.0, -1.0])
>>> rewardkit.registry.unregister("length_penalty")

Third-party packages add rewards through the entry-point group ``rewardkit.rewards``: the entry point names
a module (whose ``@register`` decorators run on import) or a function or ``Reward`` subclass, which is then
registered under the entry point's name.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, TypeVar, cast

from rewardkit.core import Completion, Reward, RewardError, Verdict, missing_column
from rewardkit.redact import clip, did_you_mean, shown
from rewardkit.spec import CallerParam, UnknownRewardError
from rewardkit.trainer_names import note_trainer_name

__all__ = [
    "ENTRY_POINT_GROUP",
    "FunctionReward",
    "RewardInfo",
    "UnknownRewardError",
    "get",
    "info",
    "named",
    "list_rewards",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "rewardkit.rewards"
#: keyword arguments of :func:`get` that configure any reward, so no reward may take them as parameters
RESERVED_PARAMS = frozenset({"alias", "columns"})
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")

T = TypeVar("T")


@dataclass(frozen=True)
class RewardInfo:
    """What the registry knows about one reward."""

    name: str
    columns: tuple[str, ...]
    optional_columns: tuple[str, ...]
    params: Mapping[str, Any]
    description: str
    source: str
    #: the parameters a remote caller may set (see :mod:`rewardkit.spec`); the rest are server settings
    caller_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: values that apply when the reward is built for a remote caller, under the operator's settings
    remote_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: the parameters it cannot be built without (``cosine``'s ``max_len``): its defaults build nothing
    required_params: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view (what ``rewardkit list --json`` and ``GET /rewards`` show)."""
        return {
            "name": self.name,
            "columns": list(self.columns),
            "optional_columns": list(self.optional_columns),
            "params": {k: _jsonable(v) for k, v in self.params.items()},
            "description": self.description,
        }


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class _Entry:
    info: RewardInfo
    factory: Callable[..., Reward]


_registry: dict[str, _Entry] = {}
_lock = threading.RLock()
_entry_points_loaded = False


def _first_line(doc: str | None) -> str:
    for line in inspect.cleandoc(doc or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


class FunctionReward(Reward):
    """A registered plain function, bound to its parameters. Picklable when the function is importable."""

    def __init__(
        self,
        func: Callable[..., Sequence[float | None]],
        name: str,
        columns: tuple[str, ...] = (),
        optional_columns: tuple[str, ...] = (),
        **params: Any,
    ) -> None:
        self._func = func
        self._name = name
        self._columns = columns
        self._optional = optional_columns
        self._params = params

    @property
    def reward_name(self) -> str:
        return self._name

    @property
    def required_columns(self) -> tuple[str, ...]:
        return self._columns

    @property
    def optional(self) -> tuple[str, ...]:
        return self._optional

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> Sequence[Verdict | float | None]:
        # Column checks already ran; the function sees the caller's completions untouched (the contract).
        result = self._func(list(completions), **columns, **self._params)
        if isinstance(result, str | bytes) or not isinstance(result, Sequence):
            raise RewardError(f"reward {self._name!r} returned {type(result).__name__}, expected a list")
        return list(result)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_function_reward,
            (self._func, self._name, self._columns, self._optional, self._params),
            {"_alias": self._alias, "_column_map": self._column_map},
        )


def _rebuild_function_reward(
    func: Callable[..., Any],
    name: str,
    columns: tuple[str, ...],
    optional_columns: tuple[str, ...],
    params: dict[str, Any],
) -> FunctionReward:
    return FunctionReward(func, name, columns, optional_columns, **params)


def _function_signature(
    name: str, func: Callable[..., Any], columns: Sequence[str] | None
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Check a function against the contract; return (required columns, parameters with defaults)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot register {name!r}: its signature cannot be read ({exc})") from None
    params = list(sig.parameters.values())
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        raise ValueError(
            f"cannot register {name!r}: a reward must accept **kwargs (trainers pass extra columns); "
            f"signature is {func.__name__}{sig}"
        )
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise ValueError(f"cannot register {name!r}: the first parameter must take the completions")
    rest = [p for p in params[1:] if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    required = [p.name for p in rest if p.default is p.empty]
    if columns is None:
        columns = required
    missing = [r for r in required if r not in columns]
    if missing:
        raise ValueError(
            f"cannot register {name!r}: parameter(s) {', '.join(missing)} have no default and are not "
            f"declared columns (columns={list(columns)})"
        )
    defaults = {p.name: p.default for p in rest if p.default is not p.empty and p.name not in columns}
    return tuple(columns), defaults


def _class_params(cls: type[Reward]) -> dict[str, Any]:
    if dataclasses.is_dataclass(cast(Any, cls)):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cast(Any, cls)):
            if not f.init:
                continue
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
            else:
                raise ValueError(f"cannot register {cls.__name__}: parameter {f.name!r} needs a default")
        return out
    sig = inspect.signature(cls)
    return {p.name: p.default for p in sig.parameters.values() if p.default is not p.empty}


def register(
    name: str,
    *,
    columns: Sequence[str] | None = None,
    optional_columns: Sequence[str] = (),
    description: str | None = None,
    caller_params: Mapping[str, CallerParam] | Sequence[str] = (),
    remote_defaults: Mapping[str, Any] | None = None,
    required_params: Sequence[str] = (),
) -> Callable[[T], T]:
    """Register a reward under ``name``; use as a decorator. Returns the object unchanged.

    Args:
        name: the registry name (letters, digits, ``_ . -``; starts with a letter).
        columns: the required dataset columns. For a function, ``None`` means the parameters after
            ``completions`` that have no default.
        optional_columns: columns used when present.
        description: one line for listings; defaults to the docstring's first line.
        caller_params: the parameters a remote caller (a service request) may set, by name or as
            ``{name: CallerParam(cap=...)}``; every other parameter is a server setting. In-process
            :func:`get` takes every parameter.
        remote_defaults: parameter values for rewards built for remote callers (under the operator's).
        required_params: the parameters without which the reward cannot be built (a service reports such
            a reward as needing parameters, not as unavailable).

    Raises:
        ValueError: duplicate name, bad name, or a callable that breaks the contract (no ``**kwargs``,
            a required parameter that is not a column).
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"invalid reward name {name!r}: use letters, digits, '_', '.', '-' and start with a letter"
        )

    def decorator(obj: T) -> T:
        cls: type[Reward] | None = None
        if inspect.isclass(obj):
            if not issubclass(obj, Reward):
                raise ValueError(f"cannot register {name!r}: {obj.__name__} is not a rewardkit.Reward")
            if "name" in vars(obj) and obj.name:  # the class carries its name: one class, one entry
                raise ValueError(
                    f"cannot register {name!r}: {obj.__qualname__} is already registered as {obj.name!r}; "
                    "subclass it to register it under another name"
                )
            cls = obj
            required = tuple(columns if columns is not None else cls.columns)
            optional = tuple(optional_columns) or cls.optional_columns
            params = _class_params(cls)
            factory: Callable[..., Reward] = cls
        elif callable(obj):
            required, params = _function_signature(name, obj, columns)
            optional = tuple(optional_columns)
            factory = functools.partial(FunctionReward, obj, name, required, optional)
        else:
            raise ValueError(f"cannot register {name!r}: {obj!r} is neither a function nor a Reward class")
        reserved = sorted(set(params) & RESERVED_PARAMS)
        if reserved:
            raise ValueError(
                f"cannot register {name!r}: {', '.join(reserved)} is reserved (rewardkit.get(..., alias=..., "
                "columns=...) names a configured reward and maps its columns); rename the parameter"
            )
        callers = _caller_params(name, caller_params, params)
        defaults = dict(remote_defaults or {})
        if set(defaults) - set(params):
            raise ValueError(f"cannot register {name!r}: remote_defaults names unknown parameters")
        if set(required_params) - set(params):
            raise ValueError(f"cannot register {name!r}: required_params names unknown parameters")
        info = RewardInfo(
            name,
            required,
            optional,
            params,
            description or _first_line(obj.__doc__),
            _source(obj),
            callers,
            defaults,
            tuple(required_params),
        )
        with _lock:
            if name in _registry:
                raise ValueError(
                    f"a reward named {name!r} is already registered (from {_registry[name].info.source}); "
                    "pick another name or unregister it first"
                )
            if cls is not None:  # only now that nothing can fail: the class carries its registration
                cls.name, cls.columns, cls.optional_columns = name, required, optional
            _registry[name] = _Entry(info, factory)
        return obj

    return decorator


def _caller_params(
    name: str, declared: Mapping[str, CallerParam] | Sequence[str], params: Mapping[str, Any]
) -> dict[str, CallerParam]:
    table = dict(declared) if isinstance(declared, Mapping) else {p: CallerParam() for p in declared}
    unknown = sorted(set(table) - set(params))
    if unknown:
        raise ValueError(f"cannot register {name!r}: caller_params names unknown parameter(s) {unknown}")
    return table


def named(key: str) -> Callable[[T], T]:
    """Give a reward's public function its registry key as ``__name__``: trainers log a reward under its
    ``__name__`` (TRL: ``rewards/format/mean``), so ``rewardkit.format_tags`` and ``get("format")`` log alike.
    ``__qualname__`` stays, so the function still pickles by reference. A column the function requires and
    the call leaves out raises :class:`~rewardkit.core.ColumnError` naming it, as a registered reward does.

    >>> import rewardkit
    >>> rewardkit.countdown(["<answer>1 + 2</answer>"], target=[3])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    rewardkit.core.ColumnError: reward 'countdown': required column 'nums' is missing ...
    """

    def decorator(func: T) -> T:
        params = list(inspect.signature(cast(Callable[..., Any], func)).parameters.values())
        columns = [
            (index, p.name)
            for index, p in enumerate(params)
            if index > 0 and p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]

        @functools.wraps(cast(Callable[..., Any], func))
        def checked(*args: Any, **kwargs: Any) -> Any:
            note_trainer_name(kwargs, key, checked)
            kwargs.pop("trainer_state", None)  # noted here, not again by a reward the function calls
            for index, name in columns:
                if index >= len(args) and name not in kwargs:
                    completions = args[0] if args else kwargs.get("completions", ())
                    n = len(completions) if hasattr(completions, "__len__") else 0
                    raise missing_column(key, name, n, [k for k in kwargs if k != "completions"])
            return cast(Callable[..., Any], func)(*args, **kwargs)

        checked.__name__ = key
        return cast(T, checked)

    return decorator


def _source(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def unregister(name: str) -> None:
    """Remove a reward from the registry (tests, notebooks); unknown names raise UnknownRewardError."""
    with _lock:
        if name not in _registry:
            raise UnknownRewardError(_unknown_message(name))
        del _registry[name]


def _load_entry_points() -> None:
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                obj = ep.load()
                if ep.name in _registry or inspect.ismodule(obj):
                    continue
                if callable(obj):
                    register(ep.name)(obj)
            except Exception as exc:  # a broken plugin must not take the built-ins down with it
                warnings.warn(
                    f"rewardkit: could not load reward plugin {ep.name!r} ({ep.value}): {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )


def reload_entry_points() -> None:
    """Look at the ``rewardkit.rewards`` entry points again (after installing a plugin at run time)."""
    global _entry_points_loaded
    with _lock:
        _entry_points_loaded = False
    _load_entry_points()


def _unknown_message(name: str) -> str:
    known = ", ".join(sorted(_registry)) or "none"
    return f"unknown reward {shown(name)}{did_you_mean(name, _registry)}; registered rewards: {known}"


def _entry(name: str) -> _Entry:
    _load_entry_points()
    with _lock:
        entry = _registry.get(name)
    if entry is None:
        raise UnknownRewardError(_unknown_message(name))
    return entry


def info(name: str) -> RewardInfo:
    """The registry's description of one reward."""
    return _entry(name).info


def get(
    name: str, *, alias: str | None = None, columns: Mapping[str, str] | None = None, **params: Any
) -> Reward:
    """A configured reward: a callable with the reward contract whose ``__name__`` is ``name`` (or ``alias``).

    Args:
        alias: the name trainers log it under (``__name__``; TRL's ``rewards/<alias>/mean``), so two
            configurations of one reward log apart.
        columns: where the reward's columns are in the caller's data, ``{reward's column: caller's column}``;
            ``{"solution": "answer"}`` scores GSM8K-style data whose gold column is ``answer``.
        **params: the reward's parameters.

    Raises:
        UnknownRewardError: no such reward (the message lists the registered ones).
        RewardError: an unknown parameter or a bad parameter value (both are ``ValueError``).

    >>> import rewardkit
    >>> rewardkit.get("countdown", format_score=0.1).__name__
    'countdown'
    >>> strict = rewardkit.get("math", alias="gsm8k_acc", columns={"solution": "answer"})
    >>> strict.__name__, strict(["#### 42", "#### 41"], answer=["42", "42"])
    ('gsm8k_acc', [1.0, 0.0])
    >>> rewardkit.get("countdown", format_score=7)
    Traceback (most recent call last):
    ...
    rewardkit.core.RewardError: countdown: format_score must be a number in [0, 1], got 7
    """
    entry = _entry(name)
    unknown = sorted(set(params) - set(entry.info.params))
    if unknown:
        allowed = ", ".join(sorted(entry.info.params)) or "none"
        listed = shown(", ".join(unknown))
        raise RewardError(f"reward {shown(name)} has no parameter(s) {listed}; parameters: {allowed}")
    try:
        reward = entry.factory(**params)
        if alias is not None or columns is not None:
            reward.configure(alias=alias, columns=columns)
        return reward
    except RewardError:
        raise
    except ValueError as exc:  # the reward's own validation; one exception type for every adapter
        raise RewardError(str(exc)) from exc
    except OverflowError:  # a number too large for a float (JSON allows any integer)
        raise RewardError(f"reward {shown(name)}: a parameter is a number too large to use") from None
    except TypeError as exc:
        raise RewardError(f"reward {shown(name)}: bad parameters: {clip(str(exc))}") from None


def list_rewards() -> list[RewardInfo]:
    """Every registered reward, sorted by name."""
    _load_entry_points()
    with _lock:
        return [_registry[k].info for k in sorted(_registry)]
