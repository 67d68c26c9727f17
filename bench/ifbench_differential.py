"""Our reference rules against IFBench's and open-instruct's own checkers, on random responses.

    python bench/ifbench_differential.py /work/.mirror/allenai+IFBench/repo \
        /work/.mirror/allenai+open-instruct/repo

Reads IFBench's ``instructions.py`` (with ``instructions_util.py``, ``instructions_registry.py``) at
``--ifbench-commit`` (c94da02) and open-instruct's ``open_instruct/IFEvalG/`` at ``--oi-commit`` (HEAD) from
the two fetched git directories into a temporary folder, imports them there (nothing is copied into the
repository), and scores the same seeded random responses (built from words, marks, emoji, bullets, quotes,
CSV and template pieces) with their checkers and with ours under ``rules="reference"``. Their run-time
downloads are replaced by what ours use (NLTK's ``word_tokenize`` by
:func:`rewardkit.instructions.text.word_tokens`, the stop words by
:func:`~rewardkit.instructions.text.stopwords`); spaCy (loaded, never used by the 58 checks), absl logging
and immutabledict are stubbed. ``words:start_verb`` is left out: its tagger's data is in no package (see
``bench/README.md``). A response on which their checker raises is counted apart, not compared. Prints the
cases compared, and every id with a disagreement (with up to two examples). Zero cases compared is an error.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rewardkit.instructions import TABLE, Context, read_args  # noqa: E402
from rewardkit.instructions.text import stopwords, word_tokens  # noqa: E402

IFBENCH_ARGS: dict[str, list[dict[str, Any]]] = {
    "count:word_count_range": [{"min_words": 3, "max_words": 8}],
    "count:unique_word_count": [{"N": 4}],
    "ratio:stop_words": [{"percentage": 40}],
    "count:conjunctions": [{"small_n": 2}],
    "count:person_names": [{"N": 2}],
    "ratio:overlap": [{"reference_text": "the cat sat on the mat", "percentage": 50}],
    "count:numbers": [{"N": 2}],
    "count:words_japanese": [{"N": 2}],
    "words:repeats": [{"small_n": 1}],
    "sentence:keyword": [{"word": "cat", "N": 2}],
    "count:pronouns": [{"N": 2}],
    "sentence:increment": [{"small_n": 1}],
    "format:list": [{"sep": "-"}, {"sep": "SEPARATOR"}],
    "format:options": [
        {"options": "yes/no/maybe"},
        {"options": "I know or I don't know"},
        {"options": "a), b)"},
    ],
    "count:keywords_multiple": [
        {"keyword1": "cat", "keyword2": "dog", "keyword3": "a", "keyword4": "the", "keyword5": "I"}
    ],
    "words:keywords_specific_position": [{"keyword": "cat", "n": 2, "m": 2}],
    "words:words_position": [{"keyword": "cat"}],
    "repeat:repeat_change": [{"prompt_to_repeat": "Write a poem about cats."}],
    "repeat:repeat_span": [
        {"prompt_to_repeat": "Write a poem about the cats and dogs.", "n_start": 1, "n_end": 4}
    ],
}
REQUEST = {"prompt_to_repeat": "Write a poem about cats."}
TRAIN_ARGS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "copy:repeat_phrase": ("RepeatPhraseChecker", [{"phrase": "the quick brown fox jumps", "small_n": 2}]),
    "copy:copy": ("CopyChecker", [REQUEST]),
    "new:copy_span_idx": ("CopySpanIdxChecker", [{**REQUEST, "n_start": 2, "n_end": 12}]),
    "detectable_format:sentence_hyphens": ("SentenceHyphenChecker", [{}]),
    "keywords:no_adjacent_consecutive": ("AdjacentLetterChecker", [{}]),
    "detectable_format:square_brackets": ("SquareBracketChecker", [{}]),
    "keywords:word_once": ("KeywordFrequencyOnceChecker", [{"keyword": "cat"}]),
    "keywords:word_count_different_numbers": (
        "KeywordFrequencyCheckerDifferent",
        [{"keyword": "cat", "frequency": 2, "relation": "at least"}, {"keyword": "the", "frequency": 3,
                                                                        "relation": "less than"}],
    ),  # fmt: skip
    "keywords:exclude_word_harder": ("ExcludeWordHarderChecker", [{"keyword": "cat"}]),
    "paragraphs:paragraphs": ("ParagraphBasicChecker", [{}]),
    "paragraphs:paragraphs2": ("ParagraphBasicChecker2", [{}]),
    "first_word:first_word_sent": ("FirstWordSentChecker", [{"first_word": "the"}]),
    "first_word:first_word_answer": ("FirstWordAnswerChecker", [{"first_word": "the"}]),
    "last_word:last_word_sent": ("LastWordSentChecker", [{"last_word": "cat"}]),
    "last_word:last_word_answer": ("LastWordAnswerChecker", [{"last_word": "cat"}]),
    "detectable_format:bigram_wrapping": ("BiGramWrappingChecker", [{}]),
    "copy:copying_simple": ("CopyingSimpleChecker", [REQUEST]),
    "copy:copying_multiple": ("CopyingMultipleChecker", [{**REQUEST, "N": 2}]),
    "punctuation:punctuation_dot": ("PunctuationDotChecker", [{}]),
    "punctuation:punctuation_exclamation": ("PunctuationExclamationChecker", [{}]),
    "count:lowercase_counting": ("LowercaseCountingChecker", [{"N": 3}, {"N": 20}]),
    "letters:letter_counting": ("LetterCountingChecker", [{"N": 30, "relation": "less than"}]),
    "letters:letter_counting2": ("LetterFrequencyChecker", [{"letter": "e", "let_frequency": 3,
                                                             "let_relation": "at least"}]),
    "count:counting_composition": ("CountingCompositionChecker", [{"n_sent": 2, "n_words": 4}]),
    "count:count_unique": ("CountUniqueChecker", [{}]),
    "count:count_increment_word": ("CountIncrementWordChecker", [{"keyword1": "cat", "keyword2": "dog"}]),
    "keywords:palindrome": ("PalindromeBasicChecker", [{}]),
    "keywords:keyword_specific_position": ("KeywordSpecificPositionChecker",
                                           [{"keyword": "cat", "n": 2, "m": 2}]),
    "keywords:start_end": ("StartEndChecker", [{}]),
}  # fmt: skip

PIECES = (
    "the The cat Cat dog cats fox quick brown red jumps Write a poem about cats. and And, or so yet Emma "
    "Avalanche Mia 3.5 1,000 42 level radar civic kayak ( ) [ ] { } \" ' “ ” * - . ! ? ?! , ; : 😀 猫 ねこ "
    "I me she/her write <i>thesis</i> <em>x</em> My Answer: Conclusion: Future Outlook: yes No. maybe a) b) "
    "SEPARATOR Zimbabwe Zambia 14 21, eagle bald elgae dlab Reykjavik, Helsinki 1805-12-02 [x] [] <<I am>> "
    "<< >> *** ****** strengths Big bold bear Apple Banana"
).split(" ") + [
    "\n", "\n\n", "  ", "    indented", "- item", "* bullet", "Write a poem about cats.", "A cat sat.",
    "the quick brown fox jumps", "the quick red fox jumps", "It ran-It sat.", "Three four five six.",
    "ID,Country,City,Year,Count", "1,US,NYC,2000,5", "\t", "I know", "I don't know", "Question 1", "A. x",
]  # fmt: skip


def _git_show(git_dir: Path, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _stub(name: str, **attrs: Any) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules.setdefault(name, module)


def _load_theirs(ifbench: Path, ifbench_commit: str, oi: Path, oi_commit: str, tmp: Path) -> tuple[Any, Any]:
    for name in ("instructions.py", "instructions_util.py", "instructions_registry.py"):
        (tmp / name).write_text(_git_show(ifbench, ifbench_commit, name), encoding="utf-8")
    pkg = tmp / "open_instruct" / "IFEvalG"
    pkg.mkdir(parents=True)
    (tmp / "open_instruct" / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for name in ("instructions.py", "instructions_util.py"):
        (pkg / name).write_text(_git_show(oi, oi_commit, f"open_instruct/IFEvalG/{name}"), encoding="utf-8")

    import nltk

    nltk.download = lambda *a, **k: True
    nltk.data.find = lambda *a, **k: True
    nltk.word_tokenize = lambda s, *a, **k: word_tokens(s)
    _stub("spacy", load=lambda *a, **k: None)
    _stub("spacy.cli", download=lambda *a, **k: None)
    noop = lambda *a, **k: None  # noqa: E731
    _stub("absl")
    _stub("absl.logging", info=noop, warning=noop, error=noop, debug=noop)
    _stub("immutabledict", immutabledict=dict)
    sys.path.insert(0, str(tmp))
    import instructions_registry  # type: ignore[import-not-found]
    import instructions_util  # type: ignore[import-not-found]

    stop = stopwords()
    instructions_util.count_stopwords = lambda text: sum(
        1 for t in nltk.tokenize.RegexpTokenizer(r"\w+").tokenize(text) if t.lower() in stop
    )
    from open_instruct.IFEvalG import instructions as oi_instructions  # type: ignore[import-not-found]

    return instructions_registry.INSTRUCTION_DICT, oi_instructions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ifbench", type=Path, help="IFBench git directory")
    parser.add_argument("open_instruct", type=Path, help="open-instruct git directory")
    parser.add_argument("--ifbench-commit", default="c94da02")
    parser.add_argument("--oi-commit", default="HEAD")
    parser.add_argument("--per-args", type=int, default=1500, help="random responses per (id, kwargs)")
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        registry, oi = _load_theirs(
            opts.ifbench, opts.ifbench_commit, opts.open_instruct, opts.oi_commit, Path(tmp)
        )
        checkers: list[tuple[str, str, Any, list[dict[str, Any]]]] = [
            ("IFBench", iid, cls, IFBENCH_ARGS.get(iid, [{}]))
            for iid, cls in registry.items()
            if iid != "words:start_verb"
        ]
        checkers += [("open-instruct", iid, getattr(oi, name), a) for iid, (name, a) in TRAIN_ARGS.items()]
        rnd = random.Random(opts.seed)
        compared = {"IFBench": 0, "open-instruct": 0}
        raised = dict.fromkeys(compared, 0)
        wrong: dict[str, list[tuple[str, bool, bool]]] = {}
        for source, iid, cls, argsets in checkers:
            spec = TABLE[iid]
            for kwargs in argsets:
                for _ in range(opts.per_args):
                    text = rnd.choice([" ", "", "\n", " "]).join(
                        rnd.choice(PIECES) for _ in range(rnd.randint(1, 14))
                    )
                    if not text.strip():
                        continue  # their evaluation never calls a checker on an empty response
                    checker = cls(iid)
                    checker.build_description(**kwargs)
                    try:
                        theirs = bool(checker.check_following(text))
                    except Exception:  # noqa: BLE001  (their checker's crash is counted, not compared)
                        raised[source] += 1
                        continue
                    ours = spec.check(text, read_args(spec, kwargs), Context(rules="reference"))
                    compared[source] += 1
                    if ours != theirs:
                        wrong.setdefault(f"{source} {iid}", []).append((text, ours, theirs))
    for source, n in compared.items():
        if n == 0:
            raise SystemExit(f"{source}: zero cases compared")
        bad = sum(len(v) for k, v in wrong.items() if k.startswith(source))
        print(
            f"{source}: {n - bad}/{n} random cases agree ({(n - bad) / n:.2%}); {raised[source]} raised there"
        )
    for key, cases in sorted(wrong.items()):
        print(f"  {key}: {len(cases)} disagree, e.g. {cases[:2]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
