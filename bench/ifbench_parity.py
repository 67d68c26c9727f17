"""IFBench parity: the ``ifeval`` reward against IFBench's published verdicts of its 294 sample outputs.

    python bench/ifbench_parity.py /work/.mirror/allenai+IFBench/repo [--commit c94da02]
    python bench/ifbench_parity.py path/to/IFBench-checkout

The path is a fetched IFBench snapshot: a bare git directory (files are read with ``git show COMMIT:path``) or
a checkout (files are read from disk, or with ``git show`` when ``--commit`` is given and it has a ``.git``).
It reads ``data/IFBench_test.jsonl`` (each prompt's instruction ids and keyword arguments),
``data/sample_output.jsonl`` (the responses) and ``eval/eval_results_{strict,loose}.jsonl`` (IFBench's
``follow_instruction_list`` for each). Every response is scored through the ``ifeval`` reward as a trainer
calls it (the responses as completions; ``instruction_id_list``, ``kwargs`` and ``prompt`` as columns;
``mode="fraction"`` for the per-instruction details) with ``rules="reference"``, strictly and with
``loose=True`` (IFEval's loose variants: first line, last line or both dropped, ``*`` removed, any one
passing). Prints, per instruction id, how many verdicts agree with IFBench's, the overall agreement, and every
disagreement; then the robust rules against the reference rules on the same (honest) responses.

Nothing from IFBench is copied into the repository: the snapshot is read at run time. A figure over zero rows
is an error. Differences that remain are explained in ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rewardkit  # noqa: E402

FILES = {
    "test": "data/IFBench_test.jsonl",
    "responses": "data/sample_output.jsonl",
    "strict": "eval/eval_results_strict.jsonl",
    "loose": "eval/eval_results_loose.jsonl",
}


def read_snapshot(path: Path, commit: str | None) -> dict[str, list[dict[str, Any]]]:
    """Each of :data:`FILES` as a list of JSON rows, from a bare git directory, or a checkout."""
    bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
    out: dict[str, list[dict[str, Any]]] = {}
    for key, name in FILES.items():
        if bare or (commit and (path / ".git").exists()):
            git = ["git", f"--git-dir={path}"] if bare else ["git", "-C", str(path)]
            text = subprocess.run(
                [*git, "show", f"{commit or 'HEAD'}:{name}"], check=True, capture_output=True, text=True
            ).stdout
        else:
            text = (path / name).read_text(encoding="utf-8")
        out[key] = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not out[key]:
            raise SystemExit(f"{name}: no rows")
    return out


def verdicts(
    rows: list[dict[str, Any]],
    tests: dict[str, dict[str, Any]],
    responses: dict[str, str],
    rules: str,
    loose: bool,
) -> list[list[bool]]:
    """Each row's per-instruction verdicts from the ``ifeval`` reward, called as a trainer would: the
    responses as the batch's completions; ``instruction_id_list``, ``kwargs`` and ``prompt`` as columns."""
    reward = rewardkit.get("ifeval", rules=rules, loose=loose, mode="fraction")
    scored = reward.score_detailed(
        [responses[row["prompt"]] for row in rows],
        instruction_id_list=[row["instruction_id_list"] for row in rows],
        kwargs=[tests[row["prompt"]]["kwargs"] for row in rows],
        prompt=[row["prompt"] for row in rows],
    )
    out = []
    for row, value, reason, detail in zip(rows, scored.values, scored.reasons, scored.details, strict=True):
        if value is None or not isinstance(detail, list):
            raise SystemExit(f"{row['prompt'][:60]!r}: not judged ({reason})")
        out.append([bool(d["followed"]) for d in detail])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="IFBench git directory or checkout")
    parser.add_argument("--commit", default="c94da02", help="commit to read from a git directory")
    opts = parser.parse_args(argv)
    data = read_snapshot(opts.path, opts.commit)
    tests = {row["prompt"]: row for row in data["test"]}
    responses = {row["prompt"]: row["response"] for row in data["responses"]}

    started = time.perf_counter()
    calls = 0
    for mode in ("strict", "loose"):
        agree: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        wrong: list[str] = []
        ours = verdicts(data[mode], tests, responses, "reference", mode == "loose")
        for k, (row, mine) in enumerate(zip(data[mode], ours, strict=True)):
            theirs = row["follow_instruction_list"]
            for iid, a, b in zip(row["instruction_id_list"], mine, theirs, strict=True):
                calls += 1
                agree[iid][1] += 1
                if a == b:
                    agree[iid][0] += 1
                else:
                    wrong.append(f"  row {k} ({tests[row['prompt']]['key']}) {iid}: ours {a}, IFBench {b}")
        total = sum(n for _, n in agree.values())
        if total == 0:
            raise SystemExit(f"{mode}: zero verdicts to compare")
        same = sum(a for a, _ in agree.values())
        print(
            f"== {mode}: {same}/{total} instruction verdicts agree ({same / total:.2%}), "
            f"{len(agree)} instruction ids, {len(data[mode])} responses"
        )
        for iid in sorted(agree):
            hits, n = agree[iid]
            print(f"  {iid:36s} {hits:3d}/{n:<3d}" + ("" if hits == n else "  <-"))
        print(f"-- {mode}: {len(wrong)} disagreements")
        print("\n".join(wrong))

    # robust vs reference on the same honest responses
    for mode in ("strict", "loose"):
        reference = verdicts(data["strict"], tests, responses, "reference", mode == "loose")
        robust = verdicts(data["strict"], tests, responses, "robust", mode == "loose")
        same = total = 0
        moved: list[str] = []
        for k, (row, ref_row, rob_row) in enumerate(zip(data["strict"], reference, robust, strict=True)):
            for iid, ref, rob in zip(row["instruction_id_list"], ref_row, rob_row, strict=True):
                calls += 2
                total += 1
                if ref == rob:
                    same += 1
                else:
                    moved.append(
                        f"  row {k} ({tests[row['prompt']]['key']}) {iid}: reference {ref}, robust {rob}"
                    )
        if total == 0:
            raise SystemExit("robust: zero verdicts to compare")
        print(f"== robust vs reference ({mode}, honest responses): {same}/{total} agree ({same / total:.2%})")
        print("\n".join(moved))
    elapsed = time.perf_counter() - started
    print(f"({calls} verdicts in {elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
