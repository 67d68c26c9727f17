"""IFBench parity: our instruction checks against IFBench's published verdicts of its 294 sample outputs.

    python bench/ifbench_parity.py /work/.mirror/allenai+IFBench/repo [--commit c94da02]
    python bench/ifbench_parity.py path/to/IFBench-checkout

The path is a fetched IFBench snapshot: a bare git directory (files are read with ``git show COMMIT:path``) or
a checkout (files are read from disk, or with ``git show`` when ``--commit`` is given and it has a ``.git``).
It reads ``data/IFBench_test.jsonl`` (each prompt's instruction ids and keyword arguments),
``data/sample_output.jsonl`` (the responses) and ``eval/eval_results_{strict,loose}.jsonl`` (IFBench's
``follow_instruction_list`` for each), scores every (response, instruction) pair with ``rules="reference"``
strictly and loosely (IFEval's loose variants: first line, last line or both dropped, ``*`` removed, any one
passing) and prints, per instruction id, how many verdicts agree, the overall agreement, and every
disagreement. Then the robust rules against the reference rules on the same (honest) responses.

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

from rewardkit.instructions import TABLE, Context, read_args  # noqa: E402

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


def loose_variants(response: str) -> list[str]:
    """IFEval's loose variants of a response (``evaluation_lib.test_instruction_following_loose``)."""
    lines = response.split("\n")
    first = "\n".join(lines[1:]).strip()
    last = "\n".join(lines[:-1]).strip()
    both = "\n".join(lines[1:-1]).strip()
    plain = [response, first, last, both]
    return [response, response.replace("*", ""), first, last, both] + [v.replace("*", "") for v in plain[1:]]


def verdict(iid: str, kwargs: dict[str, Any], response: str, prompt: str, rules: str, loose: bool) -> bool:
    """One instruction's verdict on one response, the way IFBench's evaluation calls its checker: an empty
    (whitespace) response fails without being checked."""
    spec = TABLE[iid]
    args = read_args(spec, kwargs)
    ctx = Context(prompt=prompt, rules=rules)  # type: ignore[arg-type]
    for text in loose_variants(response) if loose else [response]:
        if text.strip() and spec.check(text, args, ctx):
            return True
    return False


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
    ours: dict[str, list[tuple[str, bool]]] = {}  # mode -> [(id, verdict)] in file order
    for mode in ("strict", "loose"):
        agree: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        wrong: list[str] = []
        for k, row in enumerate(data[mode]):
            test = tests[row["prompt"]]
            response = responses[row["prompt"]]
            for i, (iid, theirs) in enumerate(
                zip(row["instruction_id_list"], row["follow_instruction_list"], strict=True)
            ):
                mine = verdict(iid, test["kwargs"][i], response, row["prompt"], "reference", mode == "loose")
                calls += 1
                ours.setdefault(mode, []).append((iid, mine))
                agree[iid][1] += 1
                if mine == theirs:
                    agree[iid][0] += 1
                else:
                    wrong.append(f"  row {k} ({test['key']}) {iid}: ours {mine}, IFBench {theirs}")
        total = sum(n for _, n in agree.values())
        if total == 0:
            raise SystemExit(f"{mode}: zero verdicts to compare")
        same = sum(a for a, _ in agree.values())
        print(
            f"== {mode}: {same}/{total} instruction verdicts agree ({same / total:.2%}), "
            f"{len(agree)} instruction ids, {len(data[mode])} responses"
        )
        for iid in sorted(agree):
            a, n = agree[iid]
            print(f"  {iid:36s} {a:3d}/{n:<3d}" + ("" if a == n else "  <-"))
        print(f"-- {mode}: {len(wrong)} disagreements")
        print("\n".join(wrong))

    # robust vs reference on the same honest responses (strict)
    same = total = 0
    moved: list[str] = []
    for k, row in enumerate(data["strict"]):
        test = tests[row["prompt"]]
        response = responses[row["prompt"]]
        for i, iid in enumerate(row["instruction_id_list"]):
            ref = verdict(iid, test["kwargs"][i], response, row["prompt"], "reference", False)
            rob = verdict(iid, test["kwargs"][i], response, row["prompt"], "robust", False)
            calls += 2
            total += 1
            if ref == rob:
                same += 1
            else:
                moved.append(f"  row {k} ({test['key']}) {iid}: reference {ref}, robust {rob}")
    if total == 0:
        raise SystemExit("robust: zero verdicts to compare")
    print(f"== robust vs reference (strict, honest responses): {same}/{total} agree ({same / total:.2%})")
    print("\n".join(moved))
    elapsed = time.perf_counter() - started
    print(f"({calls} checks in {elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
