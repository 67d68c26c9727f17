"""math -> judge fallback (``math_or_judge``) on real model outputs: how many items reach the judge, the
agreement with the sources' labels if the judge were right, and what a real judge would cost.

    python bench/judge_fallback.py [--dir ../shared/verdicts/real_outputs_dev] [--only NAME]
                                   [--also unclosed_think,...] [--max-judge-chars 8000] [--json FILE]

The judge is the loopback OpenAI-compatible server of the tests (``tests/support/fake_judge.py``, reached
through the real ``openai`` SDK), scripted from the labels: each row's question is ``SCORE:10`` when its label
is 1 and ``SCORE:0`` otherwise, and the verification template puts the question first, so the judge answers
``[[10]]`` / ``[[0]]`` as a judge that is always right would. What is measured is the *routing*: which items
the rule verifier leaves undecided, how many judge calls that takes, and the agreement ``math`` alone has
against the agreement the fallback would have with a perfect judge (an upper bound: a real judge errs too).

Cost: per 1,000 items, the judge calls actually sent (identical requests go once) times the prompt and reply
tokens, at ~4 characters a token. The prompt is the one the loopback server received (the verification
template, the fence, the gold answer and the completion's last ``max_judge_chars`` characters) with the
scripted question replaced by an average question: the files carry no question, so the MATH-500 problems'
mean length stands in (``../shared/bench/math500_answers.jsonl``). The reply is taken as one short sentence
and the score (``REPLY_CHARS``); a reasoning judge writes far more. The $ figures use an example price
(``--input-price`` / ``--output-price``, $ per 1M tokens), not a quote for any provider.

Halves: each file is split by problem (:func:`rewardkit.agreement.half`); the figures are given per half and
for both. The held-out half of the releases (``../shared/README.md``) is not on this machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rewardkit  # noqa: E402
from rewardkit.agreement import compare, half, read_labelled  # noqa: E402
from rewardkit.core import Reward, Scored  # noqa: E402
from rewardkit.judging.cache import verdicts  # noqa: E402
from rewardkit.rewards.fallback import UNDECIDED  # noqa: E402
from tests.support.fake_judge import FakeJudge  # noqa: E402

SHARED = ROOT.parent / "shared"
DEV_DIR = SHARED / "verdicts" / "real_outputs_dev"
QUESTIONS = SHARED / "bench" / "math500_answers.jsonl"
CHARS_PER_TOKEN = 4
REPLY_CHARS = (
    160  # "The response's final answer, 3/4, equals the reference 0.75.\n[[10]]", with room to spare
)
YES, NO = "SCORE:10", "SCORE:0"


def question_chars() -> float:
    """The mean length of the MATH-500 problems: the stand-in for a question the files do not carry."""
    if not QUESTIONS.is_file():
        return 200.0
    lengths = [len(json.loads(line)["problem"]) for line in QUESTIONS.open(encoding="utf-8")]
    return sum(lengths) / len(lengths)


def columns_for(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The columns the rewards read: the gold, the options (MathVista's ``choices``, MMLU-Pro's
    ``options``) where the file has them, and the scripted question."""
    columns: dict[str, Any] = {"solution": [r["solution"] for r in rows]}
    options = [r.get("choices") or r.get("options") for r in rows]
    if any(options):
        columns["choices"] = options
    columns["question"] = [YES if float(r["label"]) == 1.0 else NO for r in rows]
    return columns


@dataclass
class Part:
    """The raw figures of one half of one file (or a sum of them)."""

    rows: int = 0
    to_judge: int = 0
    calls: int = 0  # requests the judge received (identical ones go once)
    prompt_chars: float = 0.0  # of those requests, with the stand-in question
    math_agree: int = 0
    math_fp: int = 0
    fallback_agree: int = 0
    fallback_fp: int = 0
    negatives: int = 0  # rows labelled wrong
    routed: Counter[str] = field(default_factory=Counter)  # the rule's reasons of the routed items

    def add(self, other: Part) -> None:
        for name in ("rows", "to_judge", "calls", "prompt_chars", "math_agree", "math_fp"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("fallback_agree", "fallback_fp", "negatives"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.routed.update(other.routed)

    def as_dict(self, name: str, part: str) -> dict[str, Any]:
        return {"file": name, "half": part, **asdict(self), "routed": dict(self.routed)}

    def cost(self, price: tuple[float, float]) -> tuple[float, float, float]:
        """Prompt and reply tokens per 1,000 items, and their $ at ``price`` ($ per 1M tokens)."""
        n = max(self.rows, 1)
        prompt = self.prompt_chars / CHARS_PER_TOKEN / n * 1000
        reply = self.calls * REPLY_CHARS / CHARS_PER_TOKEN / n * 1000
        return prompt, reply, (prompt * price[0] + reply * price[1]) / 1e6

    def line(self, name: str, part: str, price: tuple[float, float]) -> str:
        n, negatives = max(self.rows, 1), max(self.negatives, 1)
        prompt, reply, dollars = self.cost(price)
        return (
            f"{name[:29]:<30}{part:>5}{self.rows:>6}{self.to_judge:>10}{self.to_judge / n:>7.1%}"
            f"{self.calls:>7}"
            f"{self.math_agree / n:>9.1%}/{self.math_fp / negatives:>5.1%}"
            f"{self.fallback_agree / n:>12.1%}/{self.fallback_fp / negatives:>5.1%}"
            f"{prompt:>15,.0f}{reply:>14,.0f}{dollars:>8.3f}"
        )


def rule_alone(scored: Scored) -> Scored:
    """What the rule verifier said on its own, in the same run: a judged item's ``rule_value``."""
    values = [
        d["rule_value"] if isinstance(d, dict) and "rule_value" in d else v
        for v, d in zip(scored.values, scored.details, strict=True)
    ]
    return Scored(values)


def measure_part(rows: list[dict[str, Any]], fallback: Reward, judge: FakeJudge, question: float) -> Part:
    """Score ``rows`` with ``math_or_judge`` (the judge's cache emptied first, so its calls are this part's
    own) and compare it, and the rule verifier's own verdicts of the same run, with the labels."""
    verdicts.clear()
    judge.reset()
    scored = fallback.score_detailed([r["completion"] for r in rows], **columns_for(rows))
    [alone] = compare(rows, rule_alone(scored), func="math", show=0)
    [both] = compare(rows, scored, func="math_or_judge", show=0)
    routed = [r.split(":")[1] for r in scored.reasons if r and r.startswith(("judged:", "judge_failed:"))]
    return Part(
        rows=len(rows),
        to_judge=len(routed),
        calls=len(judge.texts),
        prompt_chars=sum(len(text) - len(YES) + question for text in judge.texts),
        math_agree=alone.agree,
        math_fp=alone.false_positives,
        fallback_agree=both.agree,
        fallback_fp=both.false_positives,
        negatives=alone.n - alone.positives,
        routed=Counter(routed),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEV_DIR)
    parser.add_argument("--only", default=None, help="files whose name contains this")
    parser.add_argument("--also", default="", help="more rule reasons to send to the judge, comma-separated")
    parser.add_argument("--max-judge-chars", type=int, default=8000)
    parser.add_argument("--input-price", type=float, default=0.15, help="example $ per 1M prompt tokens")
    parser.add_argument("--output-price", type=float, default=0.60, help="example $ per 1M reply tokens")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args()
    logging.getLogger("rewardkit").setLevel(logging.ERROR)
    files = sorted(args.dir.glob("*.jsonl.gz"))
    if args.only:
        files = [f for f in files if args.only in f.name]
    undecided = [*UNDECIDED, *(r for r in args.also.split(",") if r)]
    question = question_chars()
    price = (args.input_price, args.output_price)

    judge = FakeJudge()
    os.environ["REWARDKIT_JUDGE_API_KEY"] = "sk-bench"
    spec = {"name": "llm_judge", "params": {"base_url": judge.url, "model": "scripted", "max_retries": 0}}
    fallback = rewardkit.get(
        "math_or_judge", judge=spec, undecided=undecided, max_judge_chars=args.max_judge_chars
    )
    print(
        f"undecided: {', '.join(undecided)}; max_judge_chars {args.max_judge_chars}; question stand-in "
        f"{question:.0f} chars; reply {REPLY_CHARS} chars; {CHARS_PER_TOKEN} chars a token; example price "
        f"${price[0]:.2f} / ${price[1]:.2f} per 1M prompt / reply tokens"
    )
    print(
        f"{'file':<30}{'half':>5}{'rows':>6}{'to judge':>10}{'share':>7}{'calls':>7}"
        f"{'math agree/FP':>16}{'fallback agree/FP':>19}{'prompt tok/1k':>15}{'reply tok/1k':>14}{'$/1k':>8}"
    )
    figures: list[dict[str, Any]] = []
    overall = {"A": Part(), "B": Part(), "all": Part()}
    started = time.perf_counter()
    try:
        for path in files:
            rows = [r for r in read_labelled(path) if r.get("label") is not None]
            name = path.name.removesuffix(".jsonl.gz")
            both = Part()
            for part in ("A", "B"):
                figures_of = measure_part([r for r in rows if half(r) == part], fallback, judge, question)
                both.add(figures_of)
                overall[part].add(figures_of)
                print(figures_of.line(name, part, price), flush=True)
                figures.append(figures_of.as_dict(name, part))
            overall["all"].add(both)
            print(both.line(name, "all", price))
            routed = ", ".join(f"{k} {v}" for k, v in both.routed.most_common()) or "none"
            print(f"{'':<30}routed: {routed}", flush=True)
            figures.append(both.as_dict(name, "all"))
        for part, figures_of in overall.items():
            print(figures_of.line("overall", part, price))
    finally:
        judge.close()
        fallback.close()
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
