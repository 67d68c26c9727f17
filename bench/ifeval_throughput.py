"""ifeval throughput: responses/s in-process and through the service, and what language detection costs.

    python bench/ifeval_throughput.py [--prompts 64] [--group-size 16] [--runs 3] [--rules robust]
    python bench/ifeval_throughput.py --ifbench /work/.mirror/allenai+IFBench/repo   # + IFBench's outputs

The GRPO-shaped batches are our own: ``--prompts`` rows x ``--group-size`` completions, each row carrying one
to three instructions drawn (seeded) from the instruction ids and keyword arguments of the hack suite's
honest rows (``tests/golden/ifeval_hacks.jsonl``), each completion 500-3,000 characters of prose assembled
from our own sentences in the shapes chat models write (paragraphs, bullets, ``***`` dividers, sections,
titles, highlights, a P.S., all-capital or all-lower-case answers where the row asks for them). Three mixes:
IFEval ids only, IFBench ids only, both. With ``--ifbench``, IFBench's 294 sample outputs too (``git show`` of
``data/sample_output.jsonl`` and ``data/IFBench_test.jsonl`` at c94da02 from the fetched snapshot; nothing is
copied into the repository).

Each figure is the median of ``--runs`` runs, each on a batch of its own, the in-process and the service run
of a batch back to back, alternating which goes first; the text-keyed caches (sentences, tokens, language,
normalised views) are cleared before every in-process run, as a GRPO batch never repeats a completion.
IFBench's outputs are one batch, scored ``--runs`` times, each time from cold caches here and by a freshly
started service (whose caches the bench cannot clear). Both sides are warmed up first on every instruction.
The service is a real ``uvicorn service.app:create_app`` on loopback (``bench/service_overhead.py``'s
``start_server``), called with ``RewardClient``; its values are checked equal to the in-process ones.
Language detection: the time spent in ``langdetect`` (the instruction modules' ``language``, timed by a
wrapper) as a share of the in-process time, and the rate of the same batches with the three
language-detecting ids (``language:response_language``, ``change_case:english_capital``,
``change_case:english_lowercase``) removed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ifbench_parity import read_snapshot  # noqa: E402
from service_overhead import start_server  # noqa: E402

import rewardkit  # noqa: E402
from rewardkit.client import RewardClient  # noqa: E402
from rewardkit.instructions import ifeval_words, rlvr  # noqa: E402
from rewardkit.instructions import text as text_tools  # noqa: E402
from rewardkit.instructions.base import TABLE, BadKwargs, read_args  # noqa: E402
from rewardkit.spec import RewardSpec  # noqa: E402

SUITE = ROOT / "tests" / "golden" / "ifeval_hacks.jsonl"
LANGUAGE_IDS = frozenset(
    {"language:response_language", "change_case:english_capital", "change_case:english_lowercase"}
)
Batch = tuple[list[str], dict[str, list[Any]]]

# our own sentences, the raw material of the responses
SENTENCES = """
The river rises every spring when the snow melts in the mountains.
Good sleep matters more for memory than most people think.
A small team can ship a product faster when the goal is clear.
The recipe needs flour, water, salt and a little patience.
Solar panels work even on cloudy days, though they produce less power.
Many cities are planting trees to cool their streets in summer.
The library opens at nine and closes late on Thursdays.
Regular exercise lowers stress and improves the mood.
Early maps of the coast were drawn by sailors who measured the depth by hand.
A budget is a plan for money, not a punishment.
The committee will vote on the proposal next week.
Bees visit thousands of flowers to make a single spoon of honey.
Reading aloud to children builds their vocabulary and their curiosity.
The engine failed because the fuel line was blocked.
Most of the ocean floor has never been mapped in detail.
Clear writing starts with knowing what you want to say.
The old bridge was replaced with a wider one in the nineties.
Fresh vegetables taste better when they are picked in season.
Trains are often faster than planes for trips under five hundred kilometres.
Her speech was short, but everyone remembered it.
Why do some habits stick while others fade within a week?
Could the town council have acted sooner?
What a remarkable view it was from the top of the hill!
Rain is expected tomorrow, so the match may be moved indoors.
The museum keeps its oldest manuscripts in a dark, cool room.
Learning a language is easier with a little practice every day.
The data show a steady rise in visitors since the new station opened.
A good map leaves out almost everything, and that is its strength.
Volunteers cleaned the beach and collected two hundred bags of plastic.
Coffee was first traded widely through the ports of the Red Sea.
""".strip().splitlines()


def instruction_pool() -> list[tuple[str, dict[str, Any]]]:
    """(id, kwargs) of every honest row of the hack suite: valid arguments for each id it covers."""
    pool = []
    for line in SUITE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["note"].startswith("honest ") and not row.get("params"):
            pool.append((row["columns"]["instruction_id_list"][0], row["columns"]["kwargs"][0]))
    if not pool:
        raise SystemExit(f"{SUITE}: no honest rows")
    return pool


def response(rng: random.Random, ids: list[str]) -> str:
    """500-3,000 characters of prose in one of the shapes chat models write."""
    target = rng.randint(500, 3000)
    shape = rng.choice(["prose", "bullets", "sections", "dividers", "titled"])
    parts: list[str] = []
    size = 0
    while size < target:
        chunk = " ".join(rng.sample(SENTENCES, rng.randint(2, 5)))
        if shape == "bullets" and rng.random() < 0.6:
            chunk = "\n".join(f"* {s}" for s in rng.sample(SENTENCES, rng.randint(2, 4)))
        if rng.random() < 0.2:
            chunk = chunk.replace(" the ", " *the* ", 1)
        parts.append(chunk)
        size += len(chunk) + 2
    if shape == "sections":
        parts = [f"Section {i + 1}\n{p}" for i, p in enumerate(parts)]
    joiner = "\n***\n" if shape == "dividers" else "\n\n"
    body = joiner.join(parts)
    if shape == "titled":
        body = "<<A Short Report>>\n" + body
    if rng.random() < 0.2:
        body += "\n\nP.S. Thank you for reading."
    if "change_case:english_capital" in ids and rng.random() < 0.7:
        body = body.upper()
    elif "change_case:english_lowercase" in ids and rng.random() < 0.7:
        body = body.lower()
    return body[: target + 200]


def grpo_batch(rng: random.Random, pool: list[tuple[str, dict[str, Any]]], prompts: int, size: int) -> Batch:
    completions: list[str] = []
    columns: dict[str, list[Any]] = {"instruction_id_list": [], "kwargs": [], "prompt": []}
    for p in range(prompts):
        chosen: dict[str, dict[str, Any]] = {}
        for iid, kwargs in rng.sample(pool, rng.randint(1, 3)):
            chosen.setdefault(iid, kwargs)
        ids = list(chosen)
        prompt = f"Prompt {p}: write about a topic of your choice, following: {', '.join(ids)}."
        for _ in range(size):
            completions.append(response(rng, ids))
            columns["instruction_id_list"].append(ids)
            columns["kwargs"].append([chosen[i] for i in ids])
            columns["prompt"].append(prompt)
    return completions, columns


def without_language(batch: Batch) -> Batch:
    """The batch with the language-detecting instructions removed (rows left without one are dropped)."""
    completions, columns = batch
    keep_c: list[str] = []
    keep: dict[str, list[Any]] = {k: [] for k in columns}
    for i, completion in enumerate(completions):
        ids, kwargs = columns["instruction_id_list"][i], columns["kwargs"][i]
        kept = [(iid, kw) for iid, kw in zip(ids, kwargs, strict=True) if iid not in LANGUAGE_IDS]
        if not kept:
            continue
        keep_c.append(completion)
        keep["instruction_id_list"].append([iid for iid, _ in kept])
        keep["kwargs"].append([kw for _, kw in kept])
        keep["prompt"].append(columns["prompt"][i])
    return keep_c, keep


def cold() -> None:
    """Forget the text-keyed caches (sentences, tokens, language, normalised views): a GRPO batch never
    repeats a completion, so no timed run may be served by an earlier run's work."""
    t = text_tools
    for fn in (t._sentences, t._word_tokens, t._split_sentences, t.language, t.normalise):
        fn.cache_clear()


class LanguageClock:
    """Times every call of the instruction modules' ``language`` (langdetect) while installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._original: Callable[[str], str | None] = text_tools.language

    def _timed(self, s: str) -> str | None:
        start = time.perf_counter()
        try:
            return self._original(s)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1

    def __enter__(self) -> LanguageClock:
        ifeval_words.language = rlvr.language = self._timed  # type: ignore[assignment,attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        ifeval_words.language = rlvr.language = self._original  # type: ignore[assignment,attr-defined]


def ifbench_batch(path: Path) -> Batch:
    snap = read_snapshot(path, "c94da02")
    rows = {r["prompt"]: r for r in snap["test"]}
    completions: list[str] = []
    columns: dict[str, list[Any]] = {"instruction_id_list": [], "kwargs": [], "prompt": []}
    for out in snap["responses"]:
        row = rows[out["prompt"]]
        completions.append(out["response"])
        columns["instruction_id_list"].append(row["instruction_id_list"])
        columns["kwargs"].append(row["kwargs"])
        columns["prompt"].append(out["prompt"])
    if not completions:
        raise SystemExit("IFBench: no sample outputs")
    return completions, columns


def measure(label: str, batches: list[Batch], client: RewardClient | None, rules: str) -> dict[str, float]:
    reward = rewardkit.get("ifeval", rules=rules)
    spec = [RewardSpec("ifeval", params={"rules": rules})]
    local: list[float] = []
    remote: list[float] = []
    share: list[float] = []
    n = len(batches[0][0])
    seen: list[Batch] = []
    for run, batch in enumerate(batches):
        completions, columns = batch
        # the service keeps its own caches: it scores each distinct batch once (IFBench's one batch: once)
        service = client if client is not None and not any(b is batch for b in seen) else None
        seen.append(batch)
        order = ["local", "remote"] if run % 2 == 0 else ["remote", "local"]
        for side in order:
            if side == "local":
                cold()
                with LanguageClock() as clock:
                    start = time.perf_counter()
                    values = reward(completions, **columns)
                    elapsed = time.perf_counter() - start
                local.append(len(completions) / elapsed)
                share.append(clock.seconds / elapsed)
            elif service is not None:
                start = time.perf_counter()
                got = service.score(spec, completions, **columns)
                remote.append(len(completions) / (time.perf_counter() - start))
                remote_values = got.scores["ifeval"]
        if service is not None and remote_values != values:
            raise SystemExit(f"{label}: the service's values differ from the in-process ones")
    bare = []
    for completions, columns in (without_language(b) for b in batches):
        cold()
        start = time.perf_counter()
        reward(completions, **columns)
        bare.append(len(completions) / (time.perf_counter() - start))
    figures = {
        "local": statistics.median(local),
        "remote": statistics.median(remote) if remote else float("nan"),
        "share": statistics.median(share),
        "bare": statistics.median(bare),
    }
    if label:
        report(label, n, figures)
    return figures


def report(label: str, n: int, f: dict[str, float]) -> None:
    ratio = f["local"] / f["remote"]
    print(
        f"{label:<26}{n:>6}{f['local']:>12,.0f}/s{f['remote']:>12,.0f}/s{ratio:>9.2f}x{f['share']:>10.1%}"
        f"{f['bare']:>14,.0f}/s"
    )


def warm_up(client: RewardClient | None) -> None:
    """Every instruction once on both sides (imports, the tagger's lexicon, langdetect's profiles, Punkt)."""
    rows = instruction_pool()
    for iid, spec in TABLE.items():
        try:
            read_args(spec, {})
        except BadKwargs:
            continue
        rows.append((iid, {}))
    completions = ["Write a short answer. It has two sentences."] * len(rows)
    columns = {"instruction_id_list": [[i] for i, _ in rows], "kwargs": [[k] for _, k in rows]}
    rewardkit.get("ifeval")(completions, **columns)
    if client is not None:
        client.score(["ifeval"], completions, **columns)


def serving(no_service: bool) -> tuple[Any, RewardClient | None]:
    if no_service:
        return None, None
    server = start_server(ready="/healthz", tries=600)
    client = RewardClient(server[1], http_timeout_s=300)
    warm_up(client)
    return server, client


def stop(server: Any, client: RewardClient | None) -> None:
    if client is not None:
        client.close()
    if server is not None:
        server[0].terminate()
        server[0].wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rules", choices=["robust", "reference"], default="robust")
    parser.add_argument("--ifbench", type=Path, help="a fetched IFBench snapshot (bare git dir or checkout)")
    parser.add_argument("--no-service", action="store_true")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.prompts < 1 or args.group_size < 1:
        raise SystemExit("--runs, --prompts and --group-size must be positive")

    pool = instruction_pool()
    mixes = {
        "IFEval ids": [p for p in pool if TABLE[p[0]].source == "ifeval"],
        "IFBench ids": [p for p in pool if TABLE[p[0]].source == "ifbench"],
        "IFEval + IFBench ids": pool,
    }
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; rules={args.rules}; {args.prompts} "
        f"prompts x {args.group_size} completions of 500-3,000 characters; medians of {args.runs} runs"
    )
    warm_up(None)
    server, client = serving(args.no_service)
    try:
        print(
            f"{'batch':<26}{'rows':>6}{'in-process':>14}{'service':>14}{'ratio':>10}{'langdetect':>10}"
            f"{'no lang ids':>16}"
        )
        for label, mix in mixes.items():
            rng = random.Random(label)
            batches = [grpo_batch(rng, mix, args.prompts, args.group_size) for _ in range(args.runs)]
            measure(label, batches, client, args.rules)
    finally:
        stop(server, client)
    if args.ifbench is not None:
        # one batch: each run gets a fresh service (its caches would answer a repeat) and cold caches here
        batch = ifbench_batch(args.ifbench)
        runs = []
        for _ in range(args.runs):
            server, client = serving(args.no_service)
            try:
                runs.append(measure("", [batch], client, args.rules))
            finally:
                stop(server, client)
        middle = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        report("IFBench sample outputs", len(batch[0]), middle)
    print(
        "ratio = in-process rate / service rate (bar: <= 1.3x); langdetect = share of in-process time in "
        "language detection; no lang ids = the same batches without the three language-detecting ids"
    )
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
