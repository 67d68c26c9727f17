"""Items/s of the agentic and retrieval rewards (``tool_call``, ``json_schema``, ``qa_em``, ``qa_f1``) on
GRPO-shaped batches, in process and through the real service on loopback, same run.

    python bench/agentic_rewards.py [--groups 64] [--group-size 8] [--repeats 5] [--no-service] [--profile]

A batch is ``groups`` prompts x ``group-size`` completions (64 x 8 = 512 by default; ``--groups 128
--group-size 16`` is 2,048), each prompt's row repeated over its group, as a GRPO trainer calls a reward.
Every repeat scores a new batch (rows made afresh), so nothing is answered from a cache built by an earlier
repeat; within a batch the group's rows repeat, as in training. Completions are typical of each task: a
reasoning block of 100-300 words, then

- ``tool_call``: Hermes ``<tool_call>`` JSON (most), an OpenAI ``tool_calls`` message, BFCL's Python-call
  syntax; right, a wrong value, a missing parameter, no call; golds in BFCL's possible-answer form with the
  row's ``tools`` schemas (three functions);
- ``json_schema``: a fenced ``json`` object against the row's schema (seven properties, types, a pattern, an
  enum, a nested array; its property names differ per row); valid, wrong type, invalid JSON, no JSON;
- ``qa_em`` / ``qa_f1`` (and ``qa_em`` with ``substring``): a Search-R1 rollout (search, three retrieved
  documents of ~600 characters, answer) against one to three golds; right, wrong, with context, no answer.

Prints items/s (median of ``--repeats``) in process and through ``POST /score`` (JSON encoding and HTTP
included), the mean reward (a check that the batch is scored as built), and the load average before and
after. Every rewardkit figure here is measured, none estimated. ``--profile`` also runs each reward's
in-process batches once more under :mod:`cProfile` and prints the 15 functions with the most own time
(those runs are not in the figures).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from service_overhead import start_server  # noqa: E402  (bench/, beside this file)

import rewardkit  # noqa: E402

WORDS = (
    "the first we need to check which function fits the request so let me look at the tools given and "
    "compare their parameters carefully then decide what to call and with which values"
).split()
Batch = tuple[list[Any], dict[str, list[Any]], float]  # completions, columns, the expected mean reward


def think(rng: random.Random) -> str:
    return "<think>" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(100, 300))) + "</think>\n"


def _grpo(groups: int, size: int, rng: random.Random, row: Callable[[int], tuple[Any, ...]]) -> Batch:
    """``groups`` rows, each with ``size`` completions; ``row(i)`` gives (columns, [(completion, value)])."""
    completions: list[Any] = []
    columns: dict[str, list[Any]] = {}
    values: list[float] = []
    for i in range(groups):
        row_columns, candidates = row(i)
        for _ in range(size):
            completion, value = rng.choice(candidates)
            completions.append(completion)
            values.append(value)
            for name, value_ in row_columns.items():
                columns.setdefault(name, []).append(value_)
    return completions, columns, statistics.fmean(values)


# ---------------------------------------------------------------- tool_call


def _tools(tag: str) -> list[dict[str, Any]]:
    def fn(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        params = {"type": "object", "properties": props, "required": required}
        return {"type": "function", "function": {"name": name, "description": name, "parameters": params}}

    return [
        fn(
            f"get_weather_{tag}",
            {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            ["city"],
        ),
        fn(
            f"search_flights_{tag}",
            {"origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string"}},
            ["origin", "destination"],
        ),
        fn(f"add_{tag}", {"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
    ]


def tool_call_batch(groups: int, size: int, rng: random.Random) -> Batch:
    def row(i: int) -> tuple[Any, ...]:
        tag = f"{rng.randrange(10**9):x}"
        name, city = f"get_weather_{tag}", rng.choice(["Paris", "Berlin", "Tokyo", "Lima"])
        gold = [{name: {"city": [city], "unit": ["", "celsius"]}}]
        hermes = json.dumps({"name": name, "arguments": {"city": city, "unit": "celsius"}})
        message = [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"city": city})},
                    }
                ],
            }
        ]
        head = think(rng)
        candidates = [
            (f"{head}<tool_call>{hermes}</tool_call>", 1.0),
            (f"{head}<tool_call>{hermes}</tool_call>", 1.0),
            (message, 1.0),
            (f'{head}[{name}(city="{city}")]', 1.0),
            (f"{head}<tool_call>{hermes.replace(city, 'Rome')}</tool_call>", 0.0),
            (f'{head}<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>', 0.0),
            (f"{head}I cannot help with that.", 0.0),
        ]
        return {"solution": gold, "tools": _tools(tag)}, candidates

    return _grpo(groups, size, rng, row)


# ---------------------------------------------------------------- json_schema


def json_schema_batch(groups: int, size: int, rng: random.Random) -> Batch:
    def row(i: int) -> tuple[Any, ...]:
        k = f"{rng.randrange(10**9):x}"
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                f"name_{k}": {"type": "string", "minLength": 1},
                f"age_{k}": {"type": "integer", "minimum": 0, "maximum": 150},
                f"email_{k}": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9.]+$"},
                f"role_{k}": {"enum": ["admin", "user", "guest"]},
                f"tags_{k}": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
                f"score_{k}": {"type": "number"},
                f"active_{k}": {"type": "boolean"},
            },
            "required": [f"name_{k}", f"age_{k}", f"role_{k}"],
            "additionalProperties": False,
        }
        good = {
            f"name_{k}": "Ann",
            f"age_{k}": 34,
            f"email_{k}": "ann@example.org",
            f"role_{k}": "admin",
            f"tags_{k}": ["a", "b"],
            f"score_{k}": 0.5,
            f"active_{k}": True,
        }
        bad = {**good, f"age_{k}": "thirty-four"}
        head = think(rng)
        candidates = [
            (f"{head}```json\n{json.dumps(good, indent=2)}\n```", 1.0),
            (f"{head}```json\n{json.dumps(good, indent=2)}\n```", 1.0),
            (f"{head}{json.dumps(good)}", 1.0),
            (f"{head}```json\n{json.dumps(bad, indent=2)}\n```", 0.0),
            (f"{head}```json\n{json.dumps(good)[:-1]}\n```", 0.0),
            (f"{head}Here is the person: Ann, 34, admin.", 0.0),
        ]
        return {"schema": schema}, candidates

    return _grpo(groups, size, rng, row)


# ---------------------------------------------------------------- QA


def qa_batch(groups: int, size: int, rng: random.Random, mode: str) -> Batch:
    docs_words = "was born in the city of and later moved to where he wrote several books about".split()

    def row(i: int) -> tuple[Any, ...]:
        k = f"{rng.randrange(10**9):x}"
        gold = [f"Marie {k} Curie", f"M. {k} Curie"][: rng.randint(1, 2)]
        docs = "".join(
            f"Doc {d} (Title: {k}) " + " ".join(rng.choice(docs_words) for _ in range(100)) + "\n"
            for d in range(1, 4)
        )
        rollout = (
            f"{think(rng)}<search> who discovered {k} </search>\n\n<information>{docs}</information>\n\n"
            "<think>The documents say it.</think>\n"
        )
        context = 1.0 if mode == "sub" else (0.0 if mode == "em" else 2 * (3 / 4) / (3 / 4 + 1))
        candidates = [
            (f"{rollout}<answer> Marie {k} Curie </answer>", 1.0),
            (f"{rollout}<answer>marie {k} curie.</answer>", 1.0),
            (f"{rollout}<answer>Pierre {k}</answer>", 0.0 if mode != "f1" else 0.4),
            (f"{rollout}<answer>Dr. Marie {k} Curie</answer>", context),
            (rollout, 0.0),  # stopped after the retrieval: the final line is the think's close
        ]
        return {"solution": {"target": gold}}, candidates

    return _grpo(groups, size, rng, row)


# ---------------------------------------------------------------- running


BENCHES: dict[str, tuple[str, dict[str, Any], Callable[[int, int, random.Random], Batch]]] = {
    "tool_call": ("tool_call", {}, tool_call_batch),
    "json_schema": ("json_schema", {}, json_schema_batch),
    "qa_em": ("qa_em", {}, lambda g, s, r: qa_batch(g, s, r, "em")),
    "qa_em substring": ("qa_em", {"substring": True}, lambda g, s, r: qa_batch(g, s, r, "sub")),
    "qa_f1": ("qa_f1", {}, lambda g, s, r: qa_batch(g, s, r, "f1")),
}


def _body(spec: list[dict[str, Any]], batch: Batch) -> dict[str, Any]:
    return {"funcs": spec, "completions": batch[0], "columns": batch[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-service", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print where in-process time goes")
    args = parser.parse_args()
    n = args.groups * args.group_size
    names = {info.name for info in rewardkit.list_rewards()}
    print(
        f"{os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.2f}; batch {args.groups} x "
        f"{args.group_size} = {n}, median of {args.repeats}"
    )
    server = None if args.no_service else start_server(ready="/healthz", tries=600)
    try:
        print(f"{'reward':<18}{'in process':>14}{'service':>14}  mean reward (expected)")
        for label, (name, params, make) in BENCHES.items():
            if name not in names:
                print(f"{label:<18}not registered here: skipped")
                continue
            rng = random.Random(label)
            warm, *batches = [make(args.groups, args.group_size, rng) for _ in range(args.repeats + 2)]
            reward = rewardkit.get(name, **params)
            reward(warm[0], **warm[1])  # warm-up (imports, compiled patterns) on rows never measured
            times, means = [], []
            for completions, columns, _ in batches[:-1]:
                start = time.perf_counter()
                values = reward(completions, **columns)
                times.append(time.perf_counter() - start)
                means.append(statistics.fmean(v or 0.0 for v in values))
            local = n / statistics.median(times)
            if args.profile:
                profile = cProfile.Profile()
                for completions, columns, _ in batches[:-1]:
                    profile.runcall(reward, completions, **columns)
                print(f"-- {label}: the in-process batches under cProfile, by own time")
                pstats.Stats(profile).sort_stats("tottime").print_stats(15)
            remote = float("nan")
            if server is not None:
                _, url = server
                spec = [{"name": name, "params": params}]
                with httpx.Client(timeout=300) as client:
                    client.post(url + "/score", json=_body(spec, batches[-1])).raise_for_status()  # warm-up
                    wall = []
                    for batch in batches[:-1]:
                        start = time.perf_counter()
                        response = client.post(url + "/score", json=_body(spec, batch))
                        wall.append(time.perf_counter() - start)
                        response.raise_for_status()
                        remote_values = response.json()["scores"][name]
                        assert remote_values == reward(batch[0], **batch[1]), label
                remote = n / statistics.median(wall)
            expected = statistics.fmean(b[2] for b in batches[:-1])
            mean = statistics.fmean(means)
            print(f"{label:<18}{local:>12,.0f}/s{remote:>12,.0f}/s  {mean:.3f} ({expected:.3f})")
    finally:
        if server is not None:
            server[0].terminate()
            server[0].wait(timeout=30)
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
