"""tool_call against BFCL's own AST checker, on BFCL's data (bfcl-eval from PyPI, never copied here).

    python -m venv /tmp/bfcl-venv && /tmp/bfcl-venv/bin/pip install --no-deps bfcl-eval
    .venv/bin/python bench/tool_call_parity.py --bfcl /tmp/bfcl-venv/lib/python3.11/site-packages

``--bfcl`` is a directory holding the ``bfcl_eval`` package (a site-packages, or the unzipped wheel). Only
BFCL's checker and data are used: its ``ast_checker`` module, ``type_mappings``, ``enums`` and the type
converters, unchanged. ``bfcl_eval.constants.model_config`` imports every provider SDK (bfcl-eval pins
numpy 1.26.4 and pulls sentence-transformers, faiss-cpu, ... which this venv cannot take); the checker
reads one flag from it (whether a model writes ``.`` as ``_``), so a stand-in answering "no" for the model
name used here is put in its place.

Two measures:

1. every gold answer of BFCL's AST categories (python: simple, multiple, parallel, parallel_multiple and
   their live_ versions; irrelevance and live_irrelevance; simple_java and simple_javascript, read as JSON
   values) written in each completion format (OpenAI ``tool_calls`` message, Hermes ``<tool_call>``,
   Llama-3.1 JSON, Mistral ``[TOOL_CALLS]``, BFCL Python calls, with and without a ``<think>`` block) must
   score 1.0;
2. mutations of the python categories' golds (wrong value, missing required, extra parameter, a schema
   parameter the gold does not accept, wrong type, int for float, swapped parallel order, wrong function,
   an extra and a missing call, case/space changes of strings) are judged by BFCL's checker and by
   ``tool_call`` (Python-call syntax and Hermes JSON): the share of verdicts that agree, and every
   disagreement listed by kind (``--list``).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import random
import sys
import types
from pathlib import Path
from typing import Any

import rewardkit

PY_CATEGORIES = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
]
OTHER_CATEGORIES = ["simple_java", "simple_javascript"]
IRRELEVANCE = ["irrelevance", "live_irrelevance"]
MODEL = "rewardkit-parity"


def load_bfcl(site: Path) -> tuple[Any, Any, Path]:
    sys.path.insert(0, str(site))
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    config = types.SimpleNamespace(underscore_to_dot=False)
    stand_in.MODEL_CONFIG_MAPPING = {MODEL.replace("_", "/"): config}  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stand_in
    checker = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    enums = importlib.import_module("bfcl_eval.constants.enums")
    return checker, enums.Language, site / "bfcl_eval" / "data"


def rows(data: Path, category: str) -> list[tuple[dict[str, Any], Any]]:
    questions = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").open()]
    answer_file = data / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = {}
    if answer_file.exists():
        answers = {r["id"]: r["ground_truth"] for r in map(json.loads, answer_file.open())}
    return [(q, answers.get(q["id"])) for q in questions]


def first(options: list[Any]) -> Any:
    """The first accepted value, dicts (and lists of dicts) of accepted values made concrete."""
    value = next(o for o in options if o != "")
    if isinstance(value, dict):  # BFCL's dict answers: one level of accepted lists
        return {k: _pick(v) for k, v in value.items() if _given(v)}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [{k: _pick(o) for k, o in v.items() if _given(o)} for v in value]
    return value


def _given(options: Any) -> bool:
    return not isinstance(options, list) or any(o != "" for o in options)


def _pick(options: Any) -> Any:
    return next(o for o in options if o != "") if isinstance(options, list) else options


def concrete(gold: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for item in gold:
        ((name, params),) = item.items()
        calls.append((name, {p: first(v) for p, v in params.items() if any(o != "" for o in v)}))
    return calls


def py_value(value: Any) -> str:
    return repr(value)


def render(calls: list[tuple[str, dict[str, Any]]], form: str) -> Any:
    objs = [{"name": n, "arguments": a} for n, a in calls]
    if form == "openai":
        tool_calls = [
            {"type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for n, a in calls
        ]
        return [{"role": "assistant", "content": "", "tool_calls": tool_calls}]
    if form == "hermes":
        return "I will call the tools.\n" + "\n".join(
            f"<tool_call>\n{json.dumps(o)}\n</tool_call>" for o in objs
        )
    if form == "llama":
        objs = [{"name": n, "parameters": a} for n, a in calls]
        return json.dumps(objs[0] if len(objs) == 1 else objs)
    if form == "mistral":
        return "[TOOL_CALLS]" + json.dumps(objs)
    if form == "python":
        body = ", ".join(f"{n}({', '.join(f'{k}={py_value(v)}' for k, v in a.items())})" for n, a in calls)
        return f"[{body}]"
    if form == "think+python":
        return "<think>The user wants this.</think>\n" + render(calls, "python")
    if form == "think+hermes":
        return "<think>I should call it.</think>" + render(calls, "hermes")
    raise ValueError(form)


FORMS = ["openai", "hermes", "llama", "mistral", "python", "think+python", "think+hermes"]


def wrong_value(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v + 1.5
    if isinstance(v, str):
        return v + " extra"
    if isinstance(v, list):
        return v[:-1] if v else ["extra"]
    if isinstance(v, dict):
        return {**v, "extra_key": "x"}
    return "other"


def wrong_type(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, str):
        return 12345
    if isinstance(v, list):
        return json.dumps(v)
    return [v]


def mutations(
    calls: list[tuple[str, dict[str, Any]]],
    functions: list[dict[str, Any]],
    gold: list[Any],
    rng: random.Random,
) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    out: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = []
    by_name = {f["name"]: f for f in functions}

    def edit(kind: str, i: int, new: tuple[str, dict[str, Any]]) -> None:
        out.append((kind, calls[:i] + [new] + calls[i + 1 :]))

    for i, (name, args) in enumerate(calls):
        schema = by_name.get(name, {}).get("parameters", {})
        props, required = schema.get("properties", {}), schema.get("required", [])
        for p, v in args.items():
            edit("wrong_value", i, (name, {**args, p: wrong_value(v)}))
            edit("wrong_type", i, (name, {**args, p: wrong_type(v)}))
            if isinstance(v, str) and v:
                edit("case_space", i, (name, {**args, p: f" {v.upper()} "}))
            if props.get(p, {}).get("type") == "float" and isinstance(v, float) and v.is_integer():
                edit("int_for_float", i, (name, {**args, p: int(v)}))
        for p in required:
            if p in args:
                edit("missing_required", i, (name, {k: v for k, v in args.items() if k != p}))
                break
        optional = [p for p in args if p not in required]
        if optional:
            p = rng.choice(optional)
            edit("missing_optional", i, (name, {k: v for k, v in args.items() if k != p}))
        edit("extra_param", i, (name, {**args, "extra_param_xyz": 1}))
        unaccepted = [p for p in props if p not in args]
        if unaccepted:
            p = rng.choice(unaccepted)
            sample = {
                "string": "abc",
                "integer": 3,
                "float": 2.5,
                "boolean": True,
                "array": ["a"],
                "dict": {},
            }
            edit("schema_param_not_in_gold", i, (name, {**args, p: sample.get(props[p].get("type"), "abc")}))
        others = [f["name"] for f in functions if f["name"] != name]
        edit("wrong_function", i, (rng.choice(others) if others else name + "_v2", args))
    if len(calls) > 1:
        out.append(("swapped_order", calls[::-1]))
        out.append(("missing_call", calls[:-1]))
    out.append(("extra_call", calls + [calls[0]]))
    return out


def ours(reward: Any, completion: Any, gold: Any, functions: Any) -> tuple[bool, str | None]:
    scored = reward.score_detailed([completion], solution=[gold], tools=[functions])
    return scored.values[0] == 1.0, scored.reasons[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bfcl", type=Path, required=True, help="a directory holding the bfcl_eval package")
    parser.add_argument("--list", action="store_true", help="print every disagreement")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    checker, language, data = load_bfcl(args.bfcl)
    reward = rewardkit.get("tool_call")
    rng = random.Random(args.seed)

    print("1. BFCL's gold answers written in each format (must all score 1.0)")
    gold_fail: list[str] = []
    total_gold = rejected_too = 0
    for category in PY_CATEGORIES + OTHER_CATEGORIES:
        n = fails = 0
        for question, gold in rows(data, category):
            calls = concrete(gold)
            bfcl = None
            if category in PY_CATEGORIES:
                decoded = [{name: a} for name, a in calls]
                bfcl = checker.ast_checker(
                    question["function"], decoded, gold, language.PYTHON, category, MODEL
                )
            for form in FORMS:
                ok, why = ours(reward, render(calls, form), gold, question["function"])
                n += 1
                if not ok:
                    fails += 1
                    rejected_too += bfcl is not None and not bfcl["valid"]
                    verdict = (
                        "n/a" if bfcl is None else ("rejects it too" if not bfcl["valid"] else "passes it")
                    )
                    gold_fail.append(f"{question['id']} {form}: {why} (BFCL's checker: {verdict})")
        total_gold += n
        print(f"   {category:24s} {n:6d} completions, {n - fails:6d} score 1.0")
    for category in IRRELEVANCE:
        n = fails = 0
        for question, _ in rows(data, category):
            for completion in (
                "I cannot help with that using these tools.",
                "<think>none fit</think>No tool fits.",
            ):
                ok, why = ours(reward, completion, [], question["function"])
                n += 1
                fails += not ok
                if not ok:
                    gold_fail.append(f"{question['id']}: {why}")
        total_gold += n
        print(f"   {category:24s} {n:6d} completions, {n - fails:6d} score 1.0")
    print(
        f"   all: {total_gold - len(gold_fail)} / {total_gold} score 1.0; of the rest, BFCL's own checker "
        f"rejects {rejected_too} (the gold disagrees with its schema)"
    )
    for line in gold_fail if args.list else gold_fail[:20]:
        print("     ", line)

    print("\n2. Mutations: tool_call against BFCL's ast_checker")
    agree = total = crashed = 0
    by_kind: collections.Counter[str] = collections.Counter()
    by_kind_total: collections.Counter[str] = collections.Counter()
    differences: list[str] = []
    for category in PY_CATEGORIES:
        for question, gold in rows(data, category):
            functions = question["function"]
            calls = concrete(gold)
            cases = [("gold", calls), *mutations(calls, functions, gold, rng)]
            for kind, mutated in cases:
                decoded = [{n: a} for n, a in mutated]
                try:
                    theirs = checker.ast_checker(functions, decoded, gold, language.PYTHON, category, MODEL)[
                        "valid"
                    ]
                except Exception as exc:  # BFCL's checker fails on some inputs: counted apart
                    crashed += 1
                    differences.append(f"BFCL raised {type(exc).__name__} {question['id']} {kind}")
                    continue
                for form in ("python", "hermes"):
                    mine, why = ours(reward, render(mutated, form), gold, functions)
                    total += 1
                    by_kind_total[kind] += 1
                    if mine == theirs:
                        agree += 1
                    else:
                        by_kind[kind] += 1
                        differences.append(
                            f"{question['id']} {kind} {form}: BFCL {theirs}, tool_call {mine} ({why})"
                        )
    print(
        f"   agreement: {agree} / {total} = {100 * agree / total:.2f}% (BFCL's checker raised on {crashed})"
    )
    for kind in sorted(by_kind_total):
        print(f"   {kind:26s} {by_kind_total[kind]:6d} verdicts, {by_kind[kind]:4d} differ")
    for line in differences if args.list else differences[:15]:
        print("     ", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
