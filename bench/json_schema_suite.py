"""The ``json_schema`` reward against the official JSON-Schema-Test-Suite, read from a local snapshot.

    python bench/json_schema_suite.py PATH [--drafts 2020-12,2019-09,7,6,4] [--list]

``PATH`` is a copy of json-schema-org/JSON-Schema-Test-Suite (its ``tests/`` folder inside): a clone, or
the copy ``jsonschema``'s sdist carries under ``json/`` (``pip download --no-deps --no-binary :all:
jsonschema`` and unpack it). Nothing is copied into this repository and nothing is fetched.

Every test case of every file of ``tests/draft<N>/`` (and ``tests/draft<N>/optional/``, counted apart) runs
twice: through the engine (``rewardkit.structured``: the schema read and compiled as the reward does it, the
instance validated as data) and through the reward itself (``rewardkit.get("json_schema")``, the instance
written as the whole answer, so the answer's JSON reading is on the path too; the draft is the folder's,
given as ``default_draft``). A case passes when a valid instance scores 1.0 and an invalid one 0.0.

Not counted as passed or failed, and listed with ``--list``: ``optional/format/`` (skipped: format assertions
are optional in every draft), and the cases the reward refuses because their schema needs a resource from the
suite's ``remotes/`` (``http://localhost:1234/...``, by a ``$ref`` or as a custom meta-schema in ``$schema``):
the reward never fetches one, so such a case is ``None`` (``unresolvable_ref``, ``unsupported_draft``). Only
a case whose schema names ``localhost:1234`` and that is refused so counts as refused: one that merely uses
it as a base URI resolves locally and must pass. A case is never skipped for failing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rewardkit  # noqa: E402
from rewardkit.structured import compile_schema, read_schema  # noqa: E402

FOLDERS = {"2020-12": "draft2020-12", "2019-09": "draft2019-09", "7": "draft7", "6": "draft6", "4": "draft4"}


#: a ``$ref``, or a ``$schema`` (a custom meta-schema), that only a fetch could resolve
_REFUSED = ("unresolvable_ref", "unsupported_draft")


def _remote(schema: Any) -> bool:
    return "localhost:1234" in json.dumps(schema)


def run_draft(root: Path, draft: str, listing: bool) -> dict[str, Counter[str]]:
    """Counts per part (``required``, ``optional``) of passed, failed and skipped tests for one draft."""
    reward = rewardkit.get("json_schema", default_draft=draft, max_schema_chars=1_000_000)
    folder = root / "tests" / FOLDERS[draft]
    counts: dict[str, Counter[str]] = {"required": Counter(), "optional": Counter()}
    for path in sorted(folder.rglob("*.json")):
        relative = path.relative_to(folder).as_posix()
        part = "optional" if relative.startswith("optional/") else "required"
        for group in json.loads(path.read_text(encoding="utf-8")):
            skip = "optional format" if relative.startswith("optional/format/") else None
            for test in group["tests"]:
                name = f"{draft} {relative}: {group['description']} / {test['description']}"
                if skip:
                    counts[part][f"skipped: {skip}"] += 1
                    if listing:
                        print(f"SKIP ({skip}) {name}")
                    continue
                scored = reward.score_detailed([json.dumps(test["data"])], schema=[group["schema"]])
                if scored.reasons[0] in _REFUSED and _remote(group["schema"]):
                    counts[part]["refused: a remote ref (never fetched)"] += 1
                    if listing:
                        print(f"REFUSED (remote ref) {name}")
                    continue
                text, why = read_schema(group["schema"], 1_000_000)
                compiled = compile_schema(text, draft) if text is not None else None
                engine = None
                if compiled is not None and compiled.validator is not None:
                    engine = compiled.first_error(test["data"]) is None
                got = scored.values[0]
                want = 1.0 if test["valid"] else 0.0
                ok_engine = engine is test["valid"]
                ok_reward = got == want
                counts[part]["engine passed" if ok_engine else "engine failed"] += 1
                counts[part]["reward passed" if ok_reward else "reward failed"] += 1
                if not (ok_engine and ok_reward):
                    reason = why or (compiled.reason if compiled else None)
                    print(f"FAIL engine={engine} reward={got} want valid={test['valid']} ({reason}) {name}")
    return counts


def main() -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("path", type=Path, help="a JSON-Schema-Test-Suite snapshot (holding tests/)")
    parser.add_argument("--drafts", default=",".join(FOLDERS), help="comma-separated: " + ", ".join(FOLDERS))
    parser.add_argument("--list", action="store_true", help="print every skipped case")
    args = parser.parse_args()
    if not (args.path / "tests").is_dir():
        parser.error(f"{args.path} holds no tests/ folder: give a JSON-Schema-Test-Suite snapshot")
    failed = 0
    print(f"{'draft':8} {'part':9} {'tests':>6} {'engine ok':>10} {'reward ok':>10} {'skipped':>8}  seconds")
    for draft in args.drafts.split(","):
        started = time.perf_counter()
        counts = run_draft(args.path, draft.strip(), args.list)
        seconds = time.perf_counter() - started
        for part, c in counts.items():
            ran = c["engine passed"] + c["engine failed"]
            skipped = sum(v for k, v in c.items() if k.startswith(("skipped", "refused")))
            failed += c["engine failed"] + c["reward failed"]
            print(
                f"{draft:8} {part:9} {ran:6} {c['engine passed']:10} {c['reward passed']:10} {skipped:8}"
                f"  {seconds:.1f}"
            )
            for key in sorted(k for k in c if k.startswith(("skipped", "refused"))):
                print(f"{'':18} {key}: {c[key]}")
    if failed:
        print(f"{failed} failures (engine and reward counted apart)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
