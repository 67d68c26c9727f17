"""rewardkit.instructions.text: the sentence, word, language and stop-word tools the instruction checks share,
and the robust rules' view of a text. Expected splits are NLTK's (English Punkt + Treebank) and IFEval's own
regex splitter, worked out by hand from their rules."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.instructions import text


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        # abbreviations Punkt's English model knows do not end a sentence
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        ("It costs $3.50 in the U.S. today. Buy it.", ["It costs $3.50 in the U.S. today.", "Buy it."]),
        # question and exclamation marks end sentences; newlines alone do not
        ("Really? Yes! Fine.", ["Really?", "Yes!", "Fine."]),
        ("one line\nsecond line. Next.", ["one line\nsecond line.", "Next."]),
        ("", []),
        ("no final period", ["no final period"]),
    ],
)
def test_sentences_follow_english_punkt(s: str, expected: list[str]) -> None:
    assert text.sentences(s) == expected


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("Don't stop.", ["Do", "n't", "stop", "."]),
        ('He said "hi," then left.', ["He", "said", "``", "hi", ",", "''", "then", "left", "."]),
        ("I can't. You won't!", ["I", "ca", "n't", ".", "You", "wo", "n't", "!"]),
        ("Cost: $5 (approx).", ["Cost", ":", "$", "5", "(", "approx", ")", "."]),
    ],
)
def test_word_tokens_follow_nltk_word_tokenize(s: str, expected: list[str]) -> None:
    assert text.word_tokens(s) == expected


@pytest.mark.parametrize(
    ("s", "n"),
    [("Hello, world -- it's 3pm.", 5), ("", 0), ("snake_case counts once", 3), ("naïve café", 2), ("...", 0)],
)
def test_count_words_is_runs_of_word_characters(s: str, n: int) -> None:
    assert text.count_words(s) == n


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("It is 3.5 m long. Is it?", ["It is 3.5 m long.", "Is it?"]),
        (
            "Mr. Li met Dr. Ng at example.com... Then? Yes!",
            ["Mr. Li met Dr. Ng at example.com...", "Then?", "Yes!"],
        ),
        # a closing quote moves before the full stop; newlines are spaces
        ('She said "go." He went.\nDone', ['She said "go".', "He went.", "Done"]),
        # the U.S. acronym followed by a sentence starter ends a sentence
        ("He lives in the U.S. He likes it.", ["He lives in the U.S.", "He likes it."]),
        ("", []),
    ],
)
def test_split_sentences_is_ifevals_splitter(s: str, expected: list[str]) -> None:
    assert text.split_sentences(s) == expected


def test_language_is_detected_deterministically_and_none_when_undetectable() -> None:
    assert text.language("This is plainly an English sentence about the weather today.") == "en"
    assert text.language("Das ist ein ganz normaler deutscher Satz über das Wetter heute.") == "de"
    assert text.language("Это обычное русское предложение о погоде на сегодня.") == "ru"
    assert text.language("") is None
    assert text.language("12345 !!! ---") is None
    # a short ambiguous text: the seeded detector gives one answer every time, also in a fresh process
    short = "ok si"
    first = text.language(short)
    text.language.cache_clear()
    assert {text.language(short) for _ in range(5)} == {first}
    code = "from rewardkit.instructions.text import language; print(language('ok si'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(first)


@pytest.mark.parametrize(
    "s",
    [
        "Plain English text, with punctuation; and digits 123.",
        "ALL CAPITALS HERE, then Mixed CASE words and iPhone NASA's plan.",
        "Ceci est une phrase en français.  Double  spaces,\ttabs\nand lines.",
        "Visit https://example.com/a?b=1 or write to a.b@example.org today",
        "Tiếng Việt có dấu: Tiê\u0301ng, and ș ț in Română; 日本語のテキスト, 中文, 한국어, العربية ی",
        "a",
        " leading and trailing spaces ",
        "x" * 12_000,
    ],
)
def test_language_detectors_text_and_ngrams_are_langdetects_own(s: str) -> None:
    # language() feeds langdetect's seeded trials with text and n-grams computed in fewer steps: they must be
    # exactly the detector's own
    detector = text._detector_factory().create()
    detector.append(s)
    ours = text._detector_text(text._detector_factory().create(), s)
    assert ours == detector.text
    detector.cleaning_text()
    assert text._ngrams(detector.text, detector.word_lang_prob_map) == detector._extract_ngrams()


def test_language_from_many_threads_agrees_with_one_thread() -> None:
    texts = [f"The {n} quick brown foxes jumped over the lazy dog number {n}." for n in range(40)]
    texts += [f"Le renard brun numéro {n} saute par-dessus le chien paresseux." for n in range(40)]
    text.language.cache_clear()
    serial = [text.language(t) for t in texts]
    text.language.cache_clear()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(text.language, texts))
    assert threaded == serial
    assert set(serial) == {"en", "fr"}


def test_stopwords_are_nltks_english_lists() -> None:
    assert len(text.stopwords()) == 198 and len(text.stopwords(179)) == 179
    assert text.stopwords(179) < text.stopwords()
    assert {"the", "and", "shouldn't", "y"} <= text.stopwords(179)
    assert "they're" in text.stopwords() and "they're" not in text.stopwords(179)
    with pytest.raises(ValueError, match="179 or 198"):
        text.stopwords(100)


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("plain ascii", "plain ascii"),
        ("k\u0435yword", "keyword"),  # Cyrillic e
        ("key\u200bword", "keyword"),  # zero-width space
        ("key\u00adwo\u2060rd\ufeff", "keyword"),  # soft hyphen, word joiner, BOM
        ("\uff4b\uff45\uff59", "key"),  # full-width letters
        ("\U0001d424\U0001d41e\U0001d432", "key"),  # mathematical bold letters
        ("\u03bf\u0440\u0435n \u0421\u0410T", "open CAT"),  # Greek omicron, Cyrillic r/e/C/A, Latin T
        ("\ufb01ne", "fine"),  # ligature
        ("caf\u00e9", "caf\u00e9"),  # accents stay
        # a Russian word stays Russian (it has letters with no Latin twin); a word spelt in look-alikes folds
        ("\u043c\u0435\u0442\u043e\u0434 \u0441\u0440\u0435\u0435", "\u043c\u0435\u0442\u043e\u0434 cpee"),
    ],
)
def test_normalise_folds_lookalikes_and_drops_invisibles(s: str, expected: str) -> None:
    assert text.normalise(s) == expected


def test_normalise_without_folding_keeps_other_scripts() -> None:
    assert (
        text.normalise("\u043f\u0440\u0438\u0432\u0435\u0442\u200b", fold=False)
        == "\u043f\u0440\u0438\u0432\u0435\u0442"
    )


def test_nothing_is_downloaded_or_read_from_nltk_data(tmp_path: Path) -> None:
    """The tools run with NLTK pointed at an empty data directory (nothing installed, nothing to download)."""
    code = (
        "import nltk, nltk.downloader\n"
        f"nltk.data.path[:] = [{str(tmp_path)!r}]\n"
        "def refuse(*a, **k): raise SystemExit('download attempted')\n"
        "nltk.download = nltk.downloader.download = refuse\n"
        "from rewardkit.instructions import text\n"
        "print(text.sentences('A b. C d.'), text.word_tokens('x y.'),\n"
        "      text.language('hello world, how are you'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['A b.', 'C d.'] ['x', 'y', '.'] en"
