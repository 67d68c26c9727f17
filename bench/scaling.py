"""How the math reward scales with its worker count, against a naive process pool of ms-swift's `accuracy`.

    python bench/scaling.py [--workers 1,2,4,8,16] [--ref PATH] [--warm 3] [--out DIR]

For each worker count it starts a fresh verifier (``rewardkit.get("math", workers=N)``, its pools up and
``ready()``) in a process of its own and scores, on the shared GRPO workload (500 problems x 16):

* ``as-is``: the 8,000 rows as they are (verdict cache emptied before each run; golds stay parsed);
* ``new-problems``: each problem's gold and its completions' answers multiplied by a factor of the problem's
  own, new at every step (``k \\cdot (x)``): pairs repeat within a group, never across steps, as in training;
* ``no-repeats``: every row's pair multiplied by a factor of its own, so no cache answers anything (500 rows
  a worker, at most the 8,000, taken evenly across the workload).

Each variant starts on a fresh pool: its first batch, then ``--warm`` batches (the median is the figure).
``--ref`` names a copy of another rewardkit tree (``git archive <commit> rewardkit | tar -x -C DIR``) run the
same way in the same run, worker count by worker count. The peer is ms-swift 4.6's ``accuracy`` logic
(its extraction, Math-Verify's ``parse`` and ``verify``), written out here, in a ``multiprocessing.Pool(N)``
mapping over the rows (250 a worker as they are, 100 without repeats: it has no cache). It prints rates,
parallel efficiency (rate / (N x the 1-worker rate)), CPU seconds a batch by role (this process, the worker
host, its workers) and every item whose value or reason differs between the trees.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from math_throughput import DEFAULT_WORKLOAD, load  # noqa: E402  (bench/, beside this file)

VARIANTS = ("as-is", "new-problems", "no-repeats")
GROUP = 16


# ---------------------------------------------------------------- the workload's variants


_NUMBER = re.compile(r"[\d.,\\! ]+")
_DEFINED = re.compile(r"\s*[a-zA-Z]\s*=(?!=)")
_UNIT = re.compile(r"\\(?:text|mbox)\{[^{}]*\}\s*$")


def times(x: str, k: int) -> str:
    """``x`` multiplied by ``k``, in LaTeX, keeping what the verdict rules read around a value: a number as
    written (``12,345``), the value of ``x = 4``, a unit after it (``6\\text{ units}``).
    """
    if _NUMBER.fullmatch(x):
        return f"{k}\\cdot {x}"
    defined = _DEFINED.match(x)
    if defined:
        return x[: defined.end()] + times(x[defined.end() :], k)
    unit = _UNIT.search(x)
    if unit and unit.start() > 0:
        return times(x[: unit.start()], k) + x[unit.start() :]
    return f"{k}\\cdot\\left({x}\\right)"


def variant(rows: list[dict[str, Any]], name: str, step: int, limit: int) -> dict[str, list[Any]]:
    """Completions, solutions and labels of one batch of ``name`` at ``step``."""
    if name == "no-repeats":
        stride = max(1, len(rows) // limit)
        chosen = [(i, rows[i]) for i in range(0, len(rows), stride)][:limit]
    else:
        chosen = list(enumerate(rows))
    completions, solutions, labels = [], [], []
    for i, row in chosen:
        completion, gold = row["completion"], row["gold"]
        if name != "as-is":
            k = 2 + (i // GROUP + 1000 * step if name == "new-problems" else 100_000 + i + len(rows) * step)
            answer = row["final_answer"] or ""
            at = completion.rfind(answer) if answer else -1
            if answer and at >= 0:
                completion = completion[:at] + times(answer, k) + completion[at + len(answer) :]
            gold = times(gold, k)
        completions.append(completion)
        solutions.append("\\boxed{" + gold + "}")
        labels.append(row["label"])
    return {"completions": completions, "solutions": solutions, "labels": labels}


# ---------------------------------------------------------------- one tree, one worker count (a child)


def role_cpu() -> dict[str, float]:
    """CPU seconds so far of this process, its worker host and the host's descendants (the workers)."""
    import psutil

    def cpu(p: psutil.Process) -> float:
        try:
            t = p.cpu_times()
            return float(t.user + t.system)
        except psutil.NoSuchProcess:
            return 0.0

    me = psutil.Process()
    out = {"caller": cpu(me), "host": 0.0, "workers": 0.0}
    for host in me.children():
        if "rewardkit.verify" in host.cmdline():
            out["host"] += cpu(host)
            out["workers"] += sum(cpu(p) for p in host.children(recursive=True))
    return out


def measure(args: argparse.Namespace) -> None:
    """Child: score every variant with ``args.workers`` workers; one JSON line a batch on stdout."""
    tree, _, how = args.tree.partition(":")
    sys.path.insert(0, str(Path(tree).resolve()))
    # math_throughput (imported above, for the workload) imported this checkout's rewardkit: forget it, so
    # that the tree measured is the one named (its worker host runs the package its parent imported)
    for module in [m for m in sys.modules if m == "rewardkit" or m.startswith("rewardkit.")]:
        del sys.modules[module]
    import rewardkit
    from rewardkit.verify import get_verifier

    measured = Path(rewardkit.__file__).resolve().parents[1]
    if measured != Path(tree).resolve():
        raise SystemExit(f"measuring {measured}, not {tree}")

    if how == "whole":  # the rows of a batch all read before any pair goes to the workers (for a tree
        from rewardkit.rewards import math_equivalence  # that streams its batches; others read them whole)

        setattr(math_equivalence, "PART_ROWS", 10**9)  # noqa: B010 - absent from trees that do not stream

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    rows = load(args.workload)
    reward = rewardkit.get("math", workers=args.workers)
    for name in args.variants.split(","):
        verifier = get_verifier(args.workers)
        begin = time.perf_counter()
        assert verifier.ready(300), "the pools did not start"
        started = time.perf_counter() - begin
        limit = min(len(rows), args.rows_per_worker * args.workers)
        idle: dict[str, float] = {}
        for step in range(args.warm + 1):
            batch = variant(rows, name, step, limit)
            verifier._cache.clear()
            if step and args.gap:  # between two steps of training: the trainer generates, the pool idles
                before = role_cpu()
                time.sleep(args.gap)
                idle = {role: v - before[role] for role, v in role_cpu().items()}
            stats, cpu = dict(verifier.stats), role_cpu()
            begin = time.perf_counter()
            scored = reward.score_detailed(batch["completions"], solution=batch["solutions"])
            seconds = time.perf_counter() - begin
            after = role_cpu()
            record = {
                "workers": args.workers,
                "variant": name,
                "step": step,
                "rows": len(batch["labels"]),
                "seconds": seconds,
                "start_s": started,
                "cpu": {role: after[role] - cpu[role] for role in cpu},
                "gap_cpu": idle,
                "stats": {k: v - stats.get(k, 0) for k, v in verifier.stats.items()},
                "agree": sum(
                    (v or 0.0) == lab for v, lab in zip(scored.values, batch["labels"], strict=True)
                ),
            }
            if step <= 1:
                record["verdicts"] = list(zip(scored.values, scored.reasons, strict=True))
            print(json.dumps(record), flush=True)
        rewardkit.get("math", workers=args.workers).close()


# ---------------------------------------------------------------- the peer: ms-swift's accuracy, Pool(N)


def swift_accuracy(content: str, solution: str) -> float:
    """ms-swift 4.6's ``accuracy`` for one completion (swift/rewards/orm.py ``MathAccuracy``), as it runs:
    the last ``<answer>`` block else the whole completion, Math-Verify's ``parse`` of both (``first_match``)
    and ``verify``, with Math-Verify's default (signal) timeouts."""
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import LatexExtractionConfig, parse, verify

    answer = re.search(r"<answer>(.*?)</answer>", content, re.DOTALL)
    gold = re.search(r"<answer>(.*?)</answer>", solution, re.DOTALL)
    gold_parsed = parse(gold.group(1).strip() if gold else solution, extraction_mode="first_match")
    if not gold_parsed:
        return 0.0
    if answer is not None:
        parsed = parse(answer.group(1).strip(), extraction_mode="first_match")
    else:
        config = NormalizationConfig(
            nits=False, malformed_operators=False, basic_latex=True, boxed=True, units=True
        )
        extraction = LatexExtractionConfig(
            normalization_config=config, boxed_match_priority=0, try_extract_without_anchor=False
        )
        parsed = parse(content, extraction_config=[extraction], extraction_mode="first_match")
    try:
        return float(verify(gold_parsed, parsed))
    except Exception:
        return 0.0


def _swift_row(pair: tuple[str, str]) -> float:
    return swift_accuracy(*pair)


def peer(args: argparse.Namespace) -> None:
    """Child: ``multiprocessing.Pool(N).map`` of :func:`swift_accuracy` over the rows (a fork pool, the
    default start method of Python 3.12 on Linux), three runs a variant; one JSON line each."""
    import multiprocessing

    import math_verify  # noqa: F401  (imported before the fork, as a trainer has it)

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    rows = load(args.workload)
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        pool.map(_swift_row, [("\\boxed{1}", "\\boxed{1}")] * (4 * args.workers))  # every worker started
        for name, per_worker in (("as-is", 250), ("no-repeats", 100)):
            limit = min(len(rows), per_worker * args.workers)
            for step in range(3):
                batch = variant(rows, name, step + 1, limit)  # no-repeats: ``limit`` rows taken evenly
                stride = max(1, len(batch["labels"]) // limit)  # as-is: the same, here
                pairs = list(zip(batch["completions"], batch["solutions"], strict=True))[::stride][:limit]
                labels = batch["labels"][::stride][:limit]
                begin = time.perf_counter()
                values = pool.map(_swift_row, pairs)
                seconds = time.perf_counter() - begin
                agree = sum(v == lab for v, lab in zip(values, labels, strict=True))
                record = {"workers": args.workers, "variant": name, "step": step, "rows": len(pairs)}
                print(json.dumps({**record, "seconds": seconds, "agree": agree}), flush=True)


# ---------------------------------------------------------------- the driver


def child(mode: str, tree: str, workers: int, args: argparse.Namespace, log: Any) -> list[dict[str, Any]]:
    command = [sys.executable, __file__, f"--{mode}", tree, "--workers", str(workers)]
    command += [
        "--workload",
        str(args.workload.resolve()),
        "--warm",
        str(args.warm),
        "--variants",
        args.variants,
    ]
    command += ["--rows-per-worker", str(args.rows_per_worker), "--gap", str(args.gap)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # in the tree's folder: its worker host is started with ``python -m``, which imports from there first
    cwd = ROOT if mode == "peer" else Path(tree.partition(":")[0]).resolve()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=3600)
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for record in records:
        record["tree"] = "peer" if mode == "peer" else tree
        log.write(json.dumps(record) + "\n")
    log.flush()
    if proc.returncode:
        print(f"  {mode} {tree} x{workers} failed: {proc.stderr[-2000:]}", flush=True)
    return records


def resolved(tree: str) -> str:
    """``PATH[:how]`` with PATH made absolute."""
    path, colon, how = tree.partition(":")
    return str(Path(path).resolve()) + colon + how


def warm_rate(records: list[dict[str, Any]], tree: str, variant: str, workers: int) -> float | None:
    mine = [r for r in records if (r["tree"], r["variant"], r["workers"]) == (tree, variant, workers)]
    warm = [r["rows"] / r["seconds"] for r in mine if r["step"] >= (0 if tree == "peer" else 1)]
    return statistics.median(warm) if warm else None


def first_rate(records: list[dict[str, Any]], tree: str, variant: str, workers: int) -> float | None:
    for r in records:
        if (r["tree"], r["variant"], r["workers"], r["step"]) == (tree, variant, workers, 0):
            return float(r["rows"] / r["seconds"])
    return None


def report(records: list[dict[str, Any]], trees: list[str], counts: list[int]) -> None:
    for name in VARIANTS:
        print(f"\n{name}: completions/s, warm median (efficiency); first batch on a fresh pool; peer Pool(N)")
        for n in counts:
            cells = []
            for tree in trees:
                warm, first = warm_rate(records, tree, name, n), first_rate(records, tree, name, n)
                one = warm_rate(records, tree, name, 1)
                if warm is None or first is None:
                    cells.append(f"{'-':>28}")
                    continue
                efficiency = f"({warm / (n * one):4.0%})" if one else ""
                cells.append(f"{warm:8,.0f} {efficiency:>6} {first:8,.0f} {warm / first:4.2f}x")
            base = warm_rate(records, "peer", name, n)
            ours = warm_rate(records, trees[-1], name, n)
            ratio = f"{base:7,.0f}  {ours / base:5.1f}x" if base and ours else ""
            print(f"  {n:>3} workers  " + "  |  ".join(cells) + f"  |  {ratio}")
        for tree in trees:
            for n in counts:
                mine = [r for r in records if (r["tree"], r["variant"], r["workers"]) == (tree, name, n)]
                steps = [r for r in mine if r["step"] >= 1]
                if not steps:
                    continue
                cpu = {role: statistics.median(r["cpu"][role] for r in steps) for role in steps[0]["cpu"]}
                spilled = [r["stats"].get("spilled", 0) for r in mine]
                gap = [r.get("gap_cpu", {}).get("workers") for r in steps]
                idle = "; workers' CPU s in the gaps " + ", ".join(f"{g or 0:.2f}" for g in gap)
                idle = "" if None in gap else idle
                agree = statistics.median(r["agree"] / r["rows"] for r in mine)
                print(
                    f"    {Path(tree).name or tree} x{n}: CPU s a warm batch "
                    + ", ".join(f"{role} {s:.2f}" for role, s in cpu.items())
                    + f"; spilled {spilled}; agreement {agree:.2%}; start {mine[0]['start_s']:.1f} s{idle}"
                )
    if len(trees) >= 2:
        differ = 0
        for a in records:
            if a["tree"] != trees[0] or "verdicts" not in a:
                continue
            for b in records:
                if (
                    b["tree"] == trees[-1]
                    and "verdicts" in b
                    and (b["variant"], b["workers"], b["step"])
                    == (
                        a["variant"],
                        a["workers"],
                        a["step"],
                    )
                ):
                    pairs = zip(a["verdicts"], b["verdicts"], strict=True)
                    changed = [(x, y) for x, y in pairs if x != y]
                    differ += len(changed)
                    if changed:
                        print(f"  {a['variant']} x{a['workers']} step {a['step']}: {changed[:5]}")
        print(f"\nitems whose (value, reason) differ between the trees: {differ}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--ref", help="a copy of another rewardkit tree, measured in the same run")
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rows-per-worker", type=int, default=500, help="no-repeats rows a worker")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds idle before each warm batch (a step)")
    parser.add_argument("--also", nargs="*", default=[], help="more trees, e.g. PATH:whole (no streaming)")
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--out", type=Path, default=Path("."), help="where records.jsonl is written")
    parser.add_argument(
        "--report", nargs="+", type=Path, help="print the tables of saved records.jsonl files"
    )
    parser.add_argument("--measure", metavar="TREE", help=argparse.SUPPRESS)
    parser.add_argument("--peer", metavar="TREE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure or args.peer:
        args.tree = args.measure or args.peer
        args.workers = int(args.workers)
        (measure if args.measure else peer)(args)
        return
    counts = [int(n) for n in args.workers.split(",")]
    # absolute: each child runs in its tree's folder
    trees = [resolved(t) for t in ([args.ref] if args.ref else []) + args.also] + [str(ROOT)]
    if args.report:
        saved = [json.loads(line) for path in args.report for line in path.read_text().splitlines() if line]
        found = [t for t in dict.fromkeys(r["tree"] for r in saved) if t != "peer"]
        report(saved, sorted(found, key=lambda t: t == str(ROOT)), counts)
        return
    records: list[dict[str, Any]] = []
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} CPUs; workload {args.workload}; trees {trees}", flush=True)
    with open(args.out / "records.jsonl", "a") as log:
        for n in counts:
            for tree in trees:
                begin = time.perf_counter()
                records += child("measure", tree, n, args, log)
                print(f"  {Path(tree).name} x{n}: {time.perf_counter() - begin:.0f} s", flush=True)
            if not args.no_peer:
                records += child("peer", "peer", n, args, log)
    report(records, trees, counts)


if __name__ == "__main__":
    main()
