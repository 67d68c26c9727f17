"""Comparing calls with the expected ones (step 3 of :mod:`rewardkit.toolcalls`), by BFCL's AST-checker rules.

One call against one expected call (:func:`check_call`), in BFCL's order; the first failure is the reason:

1. the function's name (``wrong_function:<name>``); a name written with ``_`` for each ``.`` of the
   expected one is accepted (OpenAI-style APIs allow no dot: BFCL accepts it so for such models), unless
   the row offers a function of exactly that name;
2. every required parameter is given (the tool schema's ``required``; without tools, every expected
   parameter not marked optional): ``missing_param:<p>``;
3. each parameter given is expected (in the schema when the row has tools, and among the expected call's
   parameters): ``unexpected_param:<p>``;
4. its type is the schema's (without a schema: the accepted values' type): an ``int`` where a float is
   expected passes; a ``bool`` is no integer; a tuple is an array; arrays' items are checked one level
   deep; a value of the accepted values' own type passes where they differ from the schema's (BFCL's
   variables): ``wrong_type:<p>``;
5. its value is one of the accepted ones; strings compared as BFCL normalises them (lower case, without
   spaces and ``,./-_*^``, ``'`` read as ``"``), in lists and dicts too; dicts key by key (a key not
   accepted, or an accepted one missing that is not optional, fails): ``wrong_value:<p>``;
6. every expected parameter not marked optional was given: ``missing_param:<p>``.

Several calls (:func:`check_calls`): the counts must be equal (``wrong_count``); then with ``order="any"``
(BFCL's parallel and parallel-multiple) the calls are matched to the expected ones one to one in any order
(a maximum matching, where BFCL's checker takes the first call that fits each expected one: see
``bench/README.md``), with ``order="given"`` pairwise in order. A row expecting no call (irrelevance)
passes with no call.

The dense score (:func:`partial_score`, ``mode="partial"``): 0 unless every call names a function the row
offers (its tools, else its expected calls). A call's score against an expected call of the same function
is ``right / |K|``, where ``K`` is the parameters the call gives together with the expected call's
required ones (the schema's and those not marked optional) and ``right`` counts the parameters given that
pass steps 3-5; a different function scores 0; a function without parameters called without any scores 1.
Calls are paired greedily, best pair first; the completion's score is the pairs' sum over the larger of
the two counts, so an extra or a missing call costs its share. The right function with every argument
wrong scores 0; a call that passes scores 1.

>>> from rewardkit.toolcalls.gold import read_gold
>>> gold = read_gold([{"f": {"city": ["Paris"], "unit": ["", "C"]}}])
>>> check_calls([("f", {"city": "paris"})], gold, {}), check_calls([("f", {"city": "Rome"})], gold, {})
(None, 'wrong_value:city')
>>> partial_score([("f", {"city": "paris", "unit": "K"})], gold, {})
0.5
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rewardkit.toolcalls.gold import TYPES, GoldCall, Tool
from rewardkit.toolcalls.parse import Call

__all__ = ["UnsupportedType", "check_call", "check_calls", "name_matches", "partial_score", "standardize"]

_PUNCT = re.compile(r"[ ,./\-_*^]")


def standardize(text: str) -> str:
    """A string as BFCL compares it: without spaces and ``,./-_*^``, lower case, ``'`` as ``"``.

    >>> standardize("April 1, 2024"), standardize("New_York")
    ('april12024', 'newyork')
    """
    return _PUNCT.sub("", text).lower().replace("'", '"')


def name_matches(name: str, expected: str, tools: Mapping[str, Tool]) -> bool:
    """Whether a call's function name is the expected one (dots written as underscores accepted)."""
    if name == expected:
        return True
    return "." in expected and name == expected.replace(".", "_") and name not in tools


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _first_type(accepted: list[Any]) -> type | None:
    return next((type(a) for a in accepted if a != ""), None)


def _type_ok(value: Any, want: type, item: type | None, accepted: list[Any]) -> tuple[bool, bool]:
    """(passes, is_variable) by BFCL's type checker: exact types, a list's items one level deep."""
    seen = _first_type(accepted)
    variable = seen is not None and seen is not want
    items: Any = value
    if type(value) is want:
        if item is None:
            return True, variable
        for option in accepted:
            if type(option) is not list or all(type(v) is item for v in items):
                return True, variable
    if seen is not None and type(value) is seen:  # a value of the accepted values' own type
        return True, True
    return False, variable


def _dict_ok(value: dict[str, Any], accepted: list[Any]) -> bool:
    for option in accepted:
        if option == "" or not isinstance(option, Mapping):
            continue
        if all(
            key in option and isinstance(option[key], list) and _std(v) in [_std(a) for a in option[key]]
            for key, v in value.items()
        ) and all(key in value or (isinstance(option[key], list) and "" in option[key]) for key in option):
            return True
    return False


def _list_dict_ok(value: list[Any], accepted: list[Any]) -> bool:
    return any(
        isinstance(option, list)
        and len(option) == len(value)
        and all(isinstance(v, Mapping) and _dict_ok(dict(v), [o]) for v, o in zip(value, option, strict=True))
        for option in accepted
    )


class UnsupportedType(ValueError):
    """A schema type the checker does not know (the reward's ``None``, ``unsupported_type:<t>``)."""


def _param_reason(param: str, value: Any, accepted: list[Any], tool: Tool | None) -> str | None:
    """``None`` when ``value`` passes the type and value checks (steps 4-5), else the reason."""
    names = tool.types(param) if tool is not None else ()
    item_names = tool.item_types(param) if tool is not None else ()
    item = TYPES.get(item_names[0]) if item_names else None
    wants: list[type | None]
    if names:
        unknown = [n for n in names if n not in TYPES]
        if unknown:
            raise UnsupportedType(unknown[0][:40])
        wants = [TYPES[n] for n in names]
    else:  # no schema: the accepted values' type (an int accepts a float's int too)
        seen = _first_type(accepted)
        names, wants = ("inferred",), [float if seen is int else seen]
        option = next((a for a in accepted if a != ""), None)
        if seen is list and option and all(isinstance(o, Mapping) for o in option):
            item = dict
    for name, want in zip(names, wants, strict=True):
        if want is None:  # no schema and only optional markers: compared as it is
            return None if value in accepted else f"wrong_value:{param}"
        given = value
        if type(given) is tuple and name in ("tuple", "inferred"):
            given = list(given)
        if want is float and type(given) is int:
            given = float(given)
        ok, variable = _type_ok(given, want, item if want is list else None, accepted)
        if not ok:
            continue
        if variable:
            return None if given in accepted else f"wrong_value:{param}"
        if want is dict:
            return None if _dict_ok(given, accepted) else f"wrong_value:{param}"
        if want is list and item is dict:
            return None if _list_dict_ok(given, accepted) else f"wrong_value:{param}"
        if want is str:
            good = [standardize(a) for a in accepted if type(a) is str]
            return None if standardize(given) in good else f"wrong_value:{param}"
        if want is list:
            lists = [[_std(a) for a in option] for option in accepted if isinstance(option, list)]
            if "" in accepted:  # BFCL reads the optional marker as an empty list: [] is leaving it out
                lists.append([])
            return None if [_std(v) for v in given] in lists else f"wrong_value:{param}"
        return None if given in accepted else f"wrong_value:{param}"
    return f"wrong_type:{param}"


def check_call(call: Call, gold: GoldCall, tools: Mapping[str, Tool]) -> str | None:
    """``None`` when ``call`` passes against ``gold`` (steps 1-6 above), else the first reason."""
    name, args = call
    if not name_matches(name, gold.name, tools):
        return f"wrong_function:{name[:80]}"
    tool = tools.get(gold.name)
    required = tool.required if tool is not None else [p for p in gold.params if not gold.optional(p)]
    for param in required:
        if param not in args:
            return f"missing_param:{param[:80]}"
    for param, value in args.items():
        if (tool is not None and not tool.has(param)) or param not in gold.params:
            return f"unexpected_param:{param[:80]}"
        reason = _param_reason(param[:80], value, gold.params[param], tool)
        if reason is not None:
            return reason
    for param in gold.params:
        if param not in args and not gold.optional(param):
            return f"missing_param:{param[:80]}"
    return None


def _matching(fits: list[list[bool]]) -> list[int]:
    """For each expected call (rows), the call matched to it (``-1``: none), maximum one-to-one (Kuhn)."""
    n_calls = len(fits[0]) if fits else 0
    owner = [-1] * n_calls

    def augment(row: int, seen: list[bool]) -> bool:
        for col in range(n_calls):
            if fits[row][col] and not seen[col]:
                seen[col] = True
                if owner[col] < 0 or augment(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    for row in range(len(fits)):
        augment(row, [False] * n_calls)
    matched = [-1] * len(fits)
    for col, row in enumerate(owner):
        if row >= 0:
            matched[row] = col
    return matched


def check_calls(
    calls: list[Call], golds: list[GoldCall], tools: Mapping[str, Tool], order: str = "any"
) -> str | None:
    """``None`` when the calls are the expected ones, else the reason (``wrong_count`` or one call's)."""
    if len(calls) != len(golds):
        return "wrong_count"
    if order == "given":
        return next((r for c, g in zip(calls, golds, strict=True) if (r := check_call(c, g, tools))), None)
    reasons = [[check_call(c, g, tools) for c in calls] for g in golds]
    matched = _matching([[r is None for r in row] for row in reasons])
    for row, col in enumerate(matched):
        if col < 0:  # why: a call left over, of that function if there is one (none of them fits it)
            left = [i for i in range(len(calls)) if i not in matched]
            same = [i for i in left if name_matches(calls[i][0], golds[row].name, tools)]
            pick = (same or left)[0]
            return reasons[row][pick]
    return None


def _call_score(call: Call, gold: GoldCall, tools: Mapping[str, Tool]) -> float:
    name, args = call
    if not name_matches(name, gold.name, tools):
        return 0.0
    tool = tools.get(gold.name)
    keys = set(args) | {p for p in gold.params if not gold.optional(p)}
    if tool is not None:
        keys |= set(tool.required)
    if not keys:
        return 1.0
    right = 0
    for param, value in args.items():
        if (tool is None or tool.has(param)) and param in gold.params:
            right += _param_reason(param, value, gold.params[param], tool) is None
    return right / len(keys)


def partial_score(
    calls: list[Call], golds: list[GoldCall], tools: Mapping[str, Tool], order: str = "any"
) -> float:
    """The dense score of the module's docstring (0 to 1; 1 exactly when :func:`check_calls` passes)."""
    if not golds or not calls:
        return float(not golds and not calls)
    known = set(tools) or {g.name for g in golds}
    if any(not any(name_matches(c[0], k, tools) for k in known) for c in calls):
        return 0.0
    if check_calls(calls, golds, tools, order) is None:
        return 1.0
    if order == "given":
        pairs = [_call_score(c, g, tools) for c, g in zip(calls, golds, strict=False)]
        return sum(pairs) / max(len(calls), len(golds))
    scored = sorted(
        ((_call_score(c, g, tools), -gi, -ci) for gi, g in enumerate(golds) for ci, c in enumerate(calls)),
        reverse=True,
    )
    used_g: set[int] = set()
    used_c: set[int] = set()
    total = 0.0
    for score, gi, ci in scored:
        if -gi in used_g or -ci in used_c:
            continue
        used_g.add(-gi)
        used_c.add(-ci)
        total += score
    # a pass is 1.0 above; a score that rounds to 1 otherwise would read as one
    return min(total / max(len(calls), len(golds)), 0.99)
