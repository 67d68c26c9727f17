"""Multiple choice: options, letters and option texts, on both sides of a comparison.

A row's options come as a ``choices`` column: the option texts in letter order (``["Yes", "No"]``), or a
mapping from letters to texts (``{"A": "Yes", "B": "No"}``). An answer names an option by its letter
(``B``, ``(B)``, ``B.``, ``\\text{B}``, ``Option B``), by its letter and text (``(B) No``, ``B: No``) or by
its text alone (``No``); a gold is a letter or an option text. Both sides become a letter, so ``(B) No``
matches the gold ``No``. Option texts match after light normalisation (case, spacing, ``$``, a final
full stop), and numeric option texts by value (``3,628,800`` is option ``3628800``).

>>> options = read_choices(["Yes", "No"])
>>> answer_letter("(B) No", options), answer_letter("no.", options), gold_letter("No", options)
('B', 'B', 'B')
>>> answer_letter("The answer is (B)", None), answer_letter("C", {"A": "1", "B": "2"})
(None, None)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rewardkit.extract import QUALIFIED as _QUALIFIED
from rewardkit.jsontext import JSONTextError, read_json
from rewardkit.verify.fastpath import fast_verdict
from rewardkit.verify.normalise import canonical
from rewardkit.yesno import _HEDGE, _implied_yes_no, _leading_yes_no, _plain

__all__ = [
    "LETTERS",
    "answer_letter",
    "chosen_letter",
    "gold_letter",
    "is_letter",
    "printed_options",
    "read_choice",
    "read_choices",
]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MAX_OPTIONS = len(LETTERS)
MAX_OPTION_CHARS = 2_000
#: The longest ``choices`` column read as JSON text (26 options of MAX_OPTION_CHARS, escaped, fit many times).
MAX_CHOICES_CHARS = 1_000_000

# A letter alone or leading an option's text: "B", "(B)", "B.", "B)", "[B]", "\text{B}", "**B**",
# "Option B", "choice (B):", then what follows it.
_LETTER = re.compile(
    r"(?:(?:option|choice)\s*)?(?:\\(?:text|textbf|mathrm|mathbf)\s*\{\s*)?"
    r"[(\[]?\s*+([A-Z])(?=$|[\s.:),\]}])[ \t]*+[)\]]?\s*+\}?[.:)]?\s*+(.*)",
    re.IGNORECASE | re.DOTALL,
)
_MORE_LETTERS = re.compile(r"\s*+(?:[,;/&]|\band\b|\bor\b)\s*+[(\[]?[A-Z][)\]]?(?![A-Za-z])")
_LABELLED = re.compile(r"\s*[(\[][A-Z][)\]]|[A-Z][.:)]\s|[A-Z]\s+\(")


def read_choices(value: object) -> dict[str, str] | None:
    """The options of one row as ``{letter: text}``, or ``None`` when there are none (or they are not
    options: a bare string that is not a JSON list, more than 26, one that is not text or a number). JSON
    text is read within bounds (:func:`rewardkit.jsontext.read_json`: :data:`MAX_CHOICES_CHARS`, nesting)."""
    if isinstance(value, str):
        try:
            value = read_json(value, max_chars=MAX_CHOICES_CHARS)
        except JSONTextError:  # not JSON, too long, or nested too deep: no options
            return None
    if isinstance(value, Mapping):
        items = [(str(k).strip().upper(), v) for k, v in value.items()]
        if not all(len(k) == 1 and k in LETTERS for k, _ in items):
            return None
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = list(zip(LETTERS, value, strict=False))
        if len(value) > MAX_OPTIONS:
            return None
    else:
        return None
    options: dict[str, str] = {}
    for letter, text in items:
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            return None
        try:
            options[letter] = str(text)[:MAX_OPTION_CHARS]
        except ValueError:  # an integer with more digits than Python converts
            return None
    return options or None


def is_letter(text: str) -> bool:
    """A gold that is a lone option letter (``B``, ``(B)``)."""
    return re.fullmatch(r"\(?\s*[A-Z]\s*\)?", text.strip()) is not None


def _by_text(text: str, options: Mapping[str, str]) -> str | None:
    """The one letter whose option text ``text`` is (after normalisation, or as the same number)."""
    plain = _plain(text)
    if not plain:
        return None
    found = [letter for letter, option in options.items() if _plain(option) == plain]
    if not found:
        value = canonical(text)
        found = [
            letter
            for letter, option in options.items()
            if (other := canonical(option)).unit == value.unit and fast_verdict(value.text, other.text)
        ]
    return found[0] if len(found) == 1 else None


def answer_letter(answer: str, options: Mapping[str, str] | None) -> str | None:
    """The option an answer names, as a letter; ``None`` when it names none. Without ``options`` only a
    lone letter (``B``, ``(B)``, ``B.``) names one.

    >>> opts = {"A": "Yes", "B": "No"}
    >>> answer_letter("B", opts), answer_letter("(A) Yes", opts), answer_letter("(A) No", opts)
    ('B', 'A', None)
    """
    text = answer.strip().strip("*$").strip()
    match = _LETTER.fullmatch(text)
    if match is not None and match.group(1).isupper():  # capitals only: "a" is an article
        letter, rest = match.group(1), match.group(2).strip()
        if _MORE_LETTERS.match(rest):
            return None  # "A, B, C, D", "(A) or (B)": several options are no choice
        if options is None:  # "B", or a labelled option "(B) No", "B. No", "B (No)"
            return letter if not rest or _LABELLED.match(text) else None
        if letter in options:
            if not rest or _by_text(rest, {letter: options[letter]}) == letter:
                return letter
            other = _by_text(rest, options)
            return None if other is not None else letter  # "(A) No" when No is B: contradicts itself
    if options is None:
        return None
    return _by_text(text, options)


def gold_letter(gold: str, options: Mapping[str, str] | None) -> str | None:
    """The option a gold names: a lone letter among the options (any capital letter without options),
    else the option whose text it is; ``None`` when it names none."""
    text = gold.strip()
    if is_letter(text):
        letter = text.strip("() ").upper()
        return letter if options is None or letter in options else None
    return _by_text(text, options) if options is not None else None


# an option printed with its letter, in the question a completion restates or in its prose: "(A) f(-6)=0",
# "option (B) f(6)=-6 is not ...", "C. 12", "D) none of these"; its text runs to the next option, the line's
# end, a clause break or the verb that follows it
_PRINTED = re.compile(
    r"(?:^|(?<=\s))(?:[Oo]ption\s*)?(?:\(([A-J])\)|([A-J])[.:)])[ \t]+(.{1,80}?)"
    r"(?=[ \t]+(?:[Oo]ption\s*)?(?:\([A-J]\)|[A-J][.:)])[ \t]|[ \t]*$|[,;]|\.(?:\s|$)"
    r"|[ \t]+(?:is|are|was|must|which)\b)",
    re.MULTILINE,
)
MIN_PRINTED = 2  # options read from a text: at least two letters with their texts


def printed_options(text: str) -> dict[str, str] | None:
    """The options a text prints with their letters (a restated question, or prose that names options with
    their texts), the first text of each letter; ``None`` when fewer than :data:`MIN_PRINTED` letters are
    printed. Used where a gold is a letter and no ``choices`` came with the row.

    >>> printed_options("Only option (A) f(-6)=0 must hold; option (B) f(6)=-6 is not certain.")
    {'A': 'f(-6)=0', 'B': 'f(6)=-6'}
    >>> printed_options("So the answer is 12.") is None
    True
    """
    found: dict[str, str] = {}
    for match in _PRINTED.finditer(text[-20_000:]):
        letter = (match.group(1) or match.group(2)).upper()
        option = match.group(3).strip().strip("$").strip()
        if option and letter not in found:
            found[letter] = option
    return found if len(found) >= MIN_PRINTED else None


MAX_CHOICES_STATED = 2  # more distinct options stated as "the answer" is hedging, not answering
SEVERAL = "several_choices"  # the reason a completion that lists options chooses none


_NAMED = re.compile(
    r"(?<![A-Za-z0-9_\\])\(([A-Z])\)|\b(?:option|choice)[ \t]*\(?([A-Z])\b"
    r"|选项[ \t]*(?:是|为)?[ \t]*\(?([A-Z])"
    # a bare letter that ends the sentence as what it "is": "the equilibrium count is C."
    r"|(?:\b(?:is|are|be)|:)[ \t]+\(?([A-Z])\)?[ \t]*[.!。]?\s*$"
)
_LAST_SENTENCE = re.compile(r"[^.!?。\n]*[.!?。]?\s*$")
# A line that states nothing but an answer ("The answer is (H).", "**Answer: B**").
_ANSWER_ONLY_LINE = re.compile(
    r"[*#\s]*(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is\s*:?|:)\s*[*(\[]*(?-i:([A-Z]))[)\]*.\s]*",
    re.IGNORECASE,
)
MIN_ANSWER_RUN = 3  # this many answer-only lines in a row end a completion as a loop, not as a choice


_LONE_LETTER = re.compile(r"[(\[]?([A-Z])[)\]]?\.?")


def _named_in_final_sentence(text: str, options: Mapping[str, str]) -> str | None:
    """The one option the final sentence names: as ``(D)``, ``option D``, ``选项是D`` or a letter it ends on
    after "is" (``In the figure above, the greatest angle is (D).``, ``so the count is C.``); else the
    option whose text ends it (:func:`_option_ending`). A labelled option on the last line comes first
    (:func:`_labelled`). None when it names several or negates (``not (D)``).

    >>> options = read_choices(["soup", "water", "buns"])
    >>> [_named_in_final_sentence(t, options) for t in ("So the food is C.", "It is a bowl of soup.",
    ...                                                  "Not B) water", "It is not soup.")]
    ['C', 'A', None, None]
    """
    lines = [line.strip().strip("*").strip() for line in text.rstrip().split("\n") if line.strip()][-2:]
    if len(lines) > 1 and all(_LABELLED.match(line) for line in lines):
        return None  # "A) soup\nB) water\n...": the options listed, none chosen
    lone = _LONE_LETTER.fullmatch(lines[-1]) if lines else None
    if lone is not None and lone.group(1) in options:
        return lone.group(1)  # the reasoning, then the option's letter alone on the last line
    labelled = _labelled(lines[-1], options) if lines else None  # first: an option's text may say "not"
    if labelled is not None:
        return labelled
    sentence = _LAST_SENTENCE.search(text.rstrip()[-600:])
    if sentence is None or _HEDGE.search(sentence.group(0)):
        return None  # "Maybe it is D.", "It could be B or C."
    letters = {next(g for g in m.groups() if g) for m in _NAMED.finditer(sentence.group(0))}
    letters &= set(options)
    if letters:
        if _QUALIFIED.search(sentence.group(0)):
            return None  # "The answer is not (D)."
        return letters.pop() if len(letters) == 1 else None  # "(A), (B) and (C) are incorrect": none
    return _option_ending(sentence.group(0), options)


def _option_ending(sentence: str, options: Mapping[str, str]) -> str | None:
    """The option whose text ends the final sentence (``... is a bowl of soup.`` with an option ``soup``):
    the longest such text, when one option's is; options that are numbers or one character are left to
    the value readers."""
    plain = _plain(sentence)
    texts = {letter: _plain(option) for letter, option in options.items()}
    found: dict[str, list[str]] = {}
    for letter, text in texts.items():
        if len(text) < 2 or not any(c.isalpha() for c in text) or not plain.endswith(text):
            continue
        before = plain[: len(plain) - len(text)]
        if not before or not before[-1].isalnum():
            found.setdefault(text, []).append(letter)
    if not found:
        return _distinct_ending(plain, texts)
    longest = max(found, key=len)
    before = plain[: len(plain) - len(longest)]
    if _QUALIFIED.search(before):
        return None  # "It is not soup." (the option's own words may say "not")
    others = (text for text in texts.values() if text != longest)
    if any(len(o) > 1 and re.search(rf"(?<!\w){re.escape(o)}(?!\w)", before) for o in others):
        return None  # "(C) Yes (D) No": it lists the options
    letters = found[longest]
    return letters[0] if len(letters) == 1 else None


_INFLECTION = re.compile(r"(?:ing|ed|es|s|e|d)$")


def _stem(word: str) -> str:
    return _INFLECTION.sub("", word) if len(word) > 4 else word


def _distinct_ending(sentence: str, texts: Mapping[str, str]) -> str | None:
    """The option whose distinct part ends the sentence, when the options share their first words
    (``Adult spider population would decrease`` / ``... would increase``: the sentence ``the population of
    adult spiders would decrease`` ends with ``decrease``), a word's inflection aside (``decreases``); only
    a distinct part of letters, one option's, in a sentence that neither negates nor lists it.

    >>> _distinct_ending("so the number of adult spiders decreases",
    ...                  {"A": "the population would increase", "B": "the population would decrease"})
    'B'
    """
    split = {letter: text.split() for letter, text in texts.items()}
    if len(split) < 2 or any(not words for words in split.values()):
        return None
    shared = 0
    first = next(iter(split.values()))
    while all(len(w) > shared + 1 and _stem(w[shared]) == _stem(first[shared]) for w in split.values()):
        shared += 1
    if shared == 0:
        return None
    words = sentence.split()
    found = []
    for letter, option in split.items():
        tail = option[shared:]
        if not tail or not all(w.isalpha() for w in tail) or len(tail) > len(words):
            continue
        ending = words[len(words) - len(tail) :]
        if [_stem(w) for w in ending] == [_stem(w) for w in tail]:
            found.append(letter)
    if len(found) != 1 or _QUALIFIED.search(sentence):
        return None
    return found[0]


def _labelled(line: str, options: Mapping[str, str]) -> str | None:
    """The option ``line`` states as a labelled option whose text agrees (``B) Does Linda's ...``)."""
    match = _LETTER.match(line)
    if match is None or _LABELLED.match(line) is None or match.group(1) not in options:
        return None
    letter = match.group(1)
    return letter if _by_text(match.group(2), {letter: options[letter]}) == letter else None


# a letter named as an option ("(B)", "option B", "I pick B"), not as a label of the figure
# ("the largest is B")
_OPTION_NAMED = re.compile(
    r"\(\s*[A-Z]\s*\)|\b(?:option|choice|answer|pick|select|choose|choosing|selecting)\s*:?\s*\(?[A-Z]\b"
)


def _before_answer_loop(text: str) -> str:
    """``text`` up to the first of the answer-only lines that end it, when there are at least
    :data:`MIN_ANSWER_RUN` of them and the first answer comes back among them: a model that states its
    answer and then keeps writing "The answer is (H)." lines (the few-shot examples' answers, then its own
    again) chose the first, so such a loop pays no more than that one answer. Answer lines that never
    return to the first list options (left to the several-choices rule), and so do answers with reasoning
    between them."""
    lines = text.rstrip().split("\n")
    first, letters = len(lines), list[str]()
    for i in range(len(lines) - 1, -1, -1):
        if not lines[i].strip():
            continue
        match = _ANSWER_ONLY_LINE.fullmatch(lines[i])
        if match is None:
            break
        first = i
        letters.insert(0, match.group(1))
    looped = len(letters) >= MIN_ANSWER_RUN and letters[0] in letters[1:]
    return "\n".join(lines[: first + 1]) if looped else text


def chosen_letter(
    completion: str, options: Mapping[str, str] | None, *, mode: str = "standard"
) -> str | None:
    """The option a completion chooses (see :func:`read_choice`), or ``None``.

    >>> yes_no = read_choices(["Yes", "No"])
    >>> chosen_letter("Let me see... The answer is (B).", None), chosen_letter("(A) Yes, it is.", yes_no)
    ('B', 'A')
    """
    return read_choice(completion, options, mode=mode)[0]


def read_choice(
    completion: str, options: Mapping[str, str] | None, *, mode: str = "standard"
) -> tuple[str | None, str | None]:
    """``(letter, reason)``: the option a completion chooses, and why it chooses none.

    Its answer marker when it names one after any box ("... \\boxed{0.8}. The answer is (F)."), else its
    final answer (:func:`rewardkit.extract.answer_in`) read as a letter or an option text, else the one
    option its final sentence names, else its whole final text when that is short and names an option
    (``(A) Population will decrease.``). A completion that states more than two different options as its
    answer chooses none (``several_choices``: listing options is no answer).

    >>> read_choice("The answer is (A). The answer is (B). The answer is (C).", None)
    (None, 'several_choices')
    """
    from rewardkit.extract import BARE_CHARS, answer_in, final_segment, stated_answers

    text = final_segment(completion)
    if text is None:
        return None, None
    text = _before_answer_loop(text)
    found = stated_answers(text)
    stated = [answer_letter(value, options) for _, value in found]
    if len({letter for letter in stated if letter is not None}) > MAX_CHOICES_STATED:
        return None, SEVERAL
    answer = answer_in(text, mode=mode).answer
    boxed_at = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if (
        stated
        and stated[-1] is not None
        and found[-1][0] > boxed_at  # "The answer is (C)." then working that boxes 77: the box is the answer
        and answer is not None
        and answer_letter(answer, options) is None
    ):
        return stated[-1], None  # a letter stated after a boxed value: the value was the working
    if answer:
        letter = answer_letter(answer, options)
        if letter is not None:
            return letter, None
    if options is not None:
        # a reply that opens with Yes or No to a yes/no question has answered it: a letter its last sentence
        # names is a bar, a point or a shape of the figure ("No, Y is not the largest. The largest is B.")
        leading = _leading_yes_no(text, options)
        in_final = _named_in_final_sentence(text, options)
        if leading is not None and in_final is not None and _OPTION_NAMED.search(text.rstrip()[-300:]):
            leading = None  # "Yes, let's compare. ... so I pick (B).": the option it names is its answer
        named = leading or in_final or _implied_yes_no(text, options)
        if named is not None:
            return named, None
    if len(text.strip()) > BARE_CHARS:
        return None, None
    first = text.strip().split("\n", 1)[0].strip().strip("*")
    match = _LETTER.match(first)
    lone = re.fullmatch(r"[(\[]?[A-Z][)\]]?[.:]?", first) is not None
    if match is None or not match.group(1).isupper() or not (lone or _LABELLED.match(first)):
        return (_by_text(text, options) if options is not None else None), None  # "I think", "A cat"
    if _MORE_LETTERS.match(match.group(2)):
        return None, None
    letter = match.group(1)
    return (letter if options is None or letter in options else None), None
