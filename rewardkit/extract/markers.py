"""Answer markers near the end of a text (step 3 of :mod:`rewardkit.extract`): ``#### x``, ``Answer: x``,
"the (final) answer (...) is x", a bold value on the final lines."""

from __future__ import annotations

import re

from rewardkit.extract.values import (
    _COMMAND,
    _WORD,
    NOT_A_LABEL,
    QUALIFIED,
    TAIL_CHARS,
    _tidy,
    _values,
    lenient_answer,
    value_like,
)
from rewardkit.extract.words import with_digits

# "#### 72" (GSM8K), at the start or the end of a line
_HASHES = re.compile(r"####[ \t]*([^\n]*)")
# "Answer: x" in the languages models answer in: French, Spanish, Portuguese, Italian, German, Russian,
# Persian, Arabic, Chinese, Japanese, Korean, Hindi
_ANSWER_WORD = (
    r"final[ \t]+answer|answer|a|r[ée]ponse(?:[ \t]+finale)?|respuesta(?:[ \t]+final)?"
    r"|resposta(?:[ \t]+final)?|risposta(?:[ \t]+finale)?|antwort|ответ|پاسخ|جواب|الإجابة"
    r"|答案|最终答案|정답|답|उत्तर"
)
_ANSWER_LINE = re.compile(
    rf"^[ \t*#]*(?:{_ANSWER_WORD})[ \t*]*[:：][ \t*]*(.*)$", re.MULTILINE | re.IGNORECASE
)
# "the (final) answer is x", with what models put between "answer" and "is": a short parenthetical
# ("the answer (arabic numerals) is"), a complement ("the answer to this problem is"), a hedge ("the answer
# should be"); or "Answer: x", "**Final Answer:** x", "the correct option is (C)", "the best response is B".
_ANSWER_PHRASE = re.compile(
    r"\b(?:answers?|(?:correct|best|right)[ \t]+(?P<noun>option|choice|response))\b"
    r"(?:[ \t]*\([^()\n]{1,40}\))?"
    r"(?:[ \t]+(?:to|for)[ \t]+[^.\n:=]{1,40}?)?"
    r"(?:[ \t]+(?:should|would|must|will|could|might|then|therefore|thus|here|now|finally|indeed|clearly"
    r"|simply|still|again|also|actually|obviously|definitely|probably|exactly|always))*"
    r"[ \t*]*(?:(?:\bis\b|\bbe\b|\bwas\b|\bequals\b)[ \t*]*:?|:|=|(?=\$|\\[(\[]))[ \t*]*"
    r"|答案[ \t]*(?:应该|应)?[ \t]*(?:是|为|:|：)[ \t]*",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"\.(?=\s|$)|。|\n")
_DISPLAY = re.compile(r"\\\[(.*?)\\\]|\$\$(.*?)\$\$", re.DOTALL)
_BOLD = re.compile(r"\*\*([^*\n]{1,60})\*\*")
BOLD_TAIL_CHARS = 300  # a bold value counts on the final lines only


def answer_phrase(text: str) -> str | None:
    """The value after the last answer marker near the end: ``#### x`` (at either end of a line), an
    ``Answer: x`` line, "the (final) answer (...) is x", a bold value on the final lines.

    >>> answer_phrase("the answer: 18 + 38 = 56, so\\nthe final answer is 56.")
    '56'
    >>> answer_phrase("so she makes $18 every day. #### 18")
    '18'
    >>> answer_phrase("Therefore, the answer (arabic numerals) is 26.")
    '26'
    >>> answer_phrase("The answer is:\\n\\n$(7, 6)$"), answer_phrase("so *n* = **5**.")
    ('(7, 6)', '5')
    """
    found = _marked_answer(text)
    return found[1] if found is not None else None


# Minerva's signed-off answer ("Final Answer: The final answer is x. I hope it is correct."), the format its
# few-shot prompt asks for: it closes the answer wherever it stands; what follows is notes or a loop
_SIGNED_OFF = re.compile(
    r"final answer is[ \t]*:?[ \t]*([^\n]{1,200}?)\.?[ \t]*I hope it is correct", re.IGNORECASE
)


def _marked_answer(text: str) -> tuple[int, str] | None:
    """``(position, value)`` of the last answer marker near the end of ``text`` that holds a value, or of a
    signed-off answer anywhere (:data:`_SIGNED_OFF`)."""
    tail_start = max(0, len(text) - TAIL_CHARS)
    best: tuple[int, str] | None = None
    for match in _SIGNED_OFF.finditer(text):
        value = _tidy(match.group(1), equation=True)
        if value:
            best = (match.start(), value)
    for pattern in (_HASHES, _ANSWER_LINE):
        for match in pattern.finditer(text, tail_start):
            value = _tidy(match.group(1), equation=True)
            if value and (best is None or match.start() > best[0]):
                best = (match.start(), value)
    for position, phrase in stated_answers(text):
        if best is None or position > best[0]:
            best = (position, phrase)
    last_line = text.rstrip().rfind("\n") + 1
    for match in _BOLD.finditer(text, max(0, len(text) - BOLD_TAIL_CHARS)):
        if best is not None and match.start() <= best[0]:
            continue
        if value_like(match.group(1)):
            value = _tidy(match.group(1), equation=True)
            if value:
                best = (match.start(), value)
        elif match.start() >= last_line:
            count = _bold_count(match.group(1))
            if count is not None:
                best = (match.start(), count)
    return best


_COUNT = re.compile(r"(?<![\w.,])-?\d+(?:\.\d+)?(?![\w.,]*\d)")
MAX_BOLD_WORDS = 6


def _bold_count(bold: str) -> str | None:
    """The one number of a short bold phrase on the last line (``So **4 cubes remain**``): at most
    :data:`MAX_BOLD_WORDS` words, one number, nothing that negates or bounds it."""
    numbers: list[str] = _COUNT.findall(bold)
    if len(numbers) != 1 or len(bold.split()) > MAX_BOLD_WORDS or QUALIFIED.search(bold):
        return None
    if bold.rstrip().endswith(":") or NOT_A_LABEL.match(bold.strip()):
        return None  # "**Step 3:**", "**Case 2**": a heading, not a statement
    return numbers[0]


def stated_answers(text: str) -> list[tuple[int, str]]:
    """Every ``(position, value)`` stated with an answer phrase in ``text``'s tail, in order (for
    multiple choice, where stating several options is no answer).

    >>> stated_answers("The answer is (A). No wait, the answer is (C).")
    [(4, '(A)'), (32, '(C)')]
    """
    found = []
    for match in _ANSWER_PHRASE.finditer(text, max(0, len(text) - TAIL_CHARS)):
        value = phrase_value(text, match.end())
        if not value:
            continue
        if _JUDGES_ANSWER.fullmatch(value) and _OWN_ANSWER.search(
            text, max(0, match.start() - 40), match.start()
        ):
            continue  # "So, our answer is correct.": a check of the answer, not one
        if not _names_a_choice(text, match):
            continue  # "The best option is to multiply both sides by 3.": a method, not a chosen option
        found.append((match.start(), value))
    return found


def _names_a_choice(text: str, phrase: re.Match[str]) -> bool:
    """Does an answer phrase name a value? "the best option/choice/response is" does only when an option or
    a value follows it (``(C)``, ``B (no)``, ``12 since ...``), never a course of action (``to multiply both
    sides by 3``); "the answer is" always does."""
    if phrase.group("noun") is None:
        return True
    rest = text[phrase.end() : phrase.end() + 200].strip()
    stop = _SENTENCE_END.search(rest)
    sentence = (rest[: stop.start()] if stop is not None else rest).strip().rstrip(".")
    return bool(_OPTION.fullmatch(sentence)) or _leading_value(sentence) is not None


# "So, our answer is correct.", "this answer is indeed right": a word about the reply's own answer, not one
# ("The answer is correct." alone may name an option "correct")
_OWN_ANSWER = re.compile(
    r"\b(?:our|my|this|that|your|the above|the previous)[ \t]+"
    r"(?:final[ \t]+|computed[ \t]+|calculated[ \t]+)?\Z",
    re.IGNORECASE,
)
_JUDGES_ANSWER = re.compile(
    r"(?:(?:indeed|definitely|certainly|probably|likely|also|still|now|then)\s+)*(?:not\s+)?"
    r"(?:correct|incorrect|right|wrong|verified|confirmed|consistent|valid|invalid|reasonable|plausible"
    r"|accurate|solid|sound|fine|good|ok|okay|unchanged)[.!]*",
    re.IGNORECASE,
)


def phrase_value(text: str, start: int) -> str | None:
    """The value an answer phrase ending at ``start`` introduces: a display (``\\[...\\]``, ``$$...$$``)
    that opens there, else the rest of the sentence (the next line when the phrase ends one)."""
    rest = text[start:].lstrip()
    display = _DISPLAY.match(rest)
    if display is not None:
        value = display.group(1) if display.group(1) is not None else display.group(2)
    else:
        stop = _SENTENCE_END.search(rest)
        value = rest[: stop.start()] if stop is not None else rest
    # numbers in words read as the digits they write, then the rules for digits: "twelve, which is more than
    # ten" states 12 as "12, which is more than 10" does; "twelve or thirteen" is a list as "12 or 13" is
    tidied = with_digits(_tidy(value, equation=True))
    if tidied and len(_WORD.findall(_COMMAND.sub(" ", tidied))) >= 2 and not value_like(tidied):
        leading = _leading_value(tidied)
        if leading is not None:  # "12, which is more than 10" -> 12; "8 since each side counts" -> 8
            return leading
        if QUALIFIED.search(tidied):
            return None  # "definitely not 1/2", "less than 7": no value is stated
        last = lenient_answer(tidied)  # "Final Answer: Jane started growing Sphere 3 hours ago." -> 3
        return last if last is not None else tidied
    return tidied or None


_TOKEN = re.compile(r"\$[^$]*\$|\\\(.*?\\\)|\S+")


def _leading_value(text: str) -> str | None:
    """The value a phrase value starts with, before the words that follow it (``12 apples, not 10`` ->
    ``12``), when it starts with one; ``None`` when it starts with words."""
    kept: list[str] = []
    end = 0
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if _WORD.search(_COMMAND.sub(" ", token.strip("$"))) and not token.startswith("$"):
            break
        kept.append(token)
        end = match.end()
    value = " ".join(kept).rstrip(",;:").strip()
    if not value or not value_like(value):
        return None
    if kept and _RUNS_ON.match(text, end):
        # "12 or 13 or 14 or 15", "3 apples, 4 pears and 5 figs": a run of values, each as much the answer
        # as the first; read as the list they are, which equals no single gold (no pay for listing)
        return ", ".join(found for _, _, found in _values(text))
    return _tidy(value)


# after a leading value: at most two words (a unit: "apples", "cm"), then "or", "and" or a comma, then another
# number: the phrase runs on through several values ("15 out of 20", "5 feet 3 inches" are one value each)
_RUNS_ON = re.compile(
    r"(?:[ \t]*[A-Za-z]+){0,2}[ \t]*(?:,|;|\bor\b|\band\b)[ \t]*(?:\bor\b|\band\b)?[ \t]*-?\d"
)


OPENING_CHARS = 300  # an answer stated first stands in the reply's opening sentence
_OPENING_END = re.compile(r"(?<=[.!?])\s|\n")


def opening_answer(text: str) -> str | None:
    """The answer a reply states first and then explains: an answer phrase in the opening sentence (``The
    answer is (A), yes. The ground cover is bamboo, which ...``), or the one bold value that ends the opening
    sentence's statement (``The maximum rating is **70**. It is reached in 2009; the others range from 20 to
    60.``), as chat models answer a question about a chart and then describe it. Only a value
    (:func:`value_like`) or an option counts, never prose; an opening that negates, bounds or hedges its
    value (``I think``, ``maybe``) states none, and so does any opening of a reply that later takes back or
    corrects something (``Actually``, ``Wait``, ``I made an error``, ``recalculating``): a guess first is
    not an answer. The explanation may be cut off (the answer came before it).

    :func:`first_answer` asks it before the final sentence for a short reply (answer, then explanation),
    :func:`rewardkit.extract.answer_in` after every other reader for a long one (where an early "the answer
    is" is more often a guess that the working replaces).

    >>> opening_answer("The answer is 0.\\n\\nExplanation: the bars are all above 0. The bars")
    '0'
    >>> opening_answer("The peak was in **2012**, at 80%. It fell to 75% in 2013 and stayed flat to 2016.")
    '2012'
    >>> opening_answer("The answer is not obvious. We count 3 and 4.") is None
    True
    >>> opening_answer("The answer is 12. Then 5 + 2 = 7. Actually I made an error: she has 7.") is None
    True
    """
    body = text.lstrip()
    end = _OPENING_END.search(body, 0, OPENING_CHARS)
    opening = body[: end.start() + 1 if end is not None else min(len(body), OPENING_CHARS)]
    if end is None and len(body) > OPENING_CHARS:
        return None
    if QUALIFIED.search(opening) or _GUESS.search(opening) or _REVISED.search(body, len(opening)):
        return None
    phrase = _ANSWER_PHRASE.search(opening)
    if phrase is not None:
        if not _names_a_choice(opening, phrase):
            return None
        value = phrase_value(opening, phrase.end())
        if value is not None and (value_like(value) or _OPTION.fullmatch(value)):
            return value
        return None
    bolds = [b.group(1) for b in _BOLD.finditer(opening)]
    if len(bolds) == 1 and value_like(bolds[0]) and re.search(r"\b(?:is|was|are|were)\b", opening):
        return _tidy(bolds[0], equation=True) or None
    return None


SHORT_REPLY_CHARS = 1500  # a reply this short that opens with its answer is an answer, then an explanation


def first_answer(text: str) -> str | None:
    """:func:`opening_answer` of a reply of at most :data:`SHORT_REPLY_CHARS`."""
    return opening_answer(text) if len(text.strip()) <= SHORT_REPLY_CHARS else None


# an opening that guesses ("I think the answer is 12", "Maybe it is 5?") states no answer
_GUESS = re.compile(
    r"\b(?:I think|I guess|I believe|I'd guess|maybe|perhaps|possibly|probably|might|could be|not sure"
    r"|let me|let's|first|guess)\b|\?",
    re.IGNORECASE,
)
# words with which a reply takes back what it said (rewardkit.yesno: a Yes/No it opened with)
TAKEN_BACK = r"actually|wait|however|on second thought|correction|let me (?:check|re-?check|reconsider)"
# a reply that takes back or corrects what it said: its opening was not its answer
_REVISED = re.compile(
    rf"\b(?:{TAKEN_BACK}|I made an? (?:error|mistake)|mistake|re-?calculat\w*|re-?comput\w*|re-?evaluat\w*"
    r"|double[- ]count\w*|let me redo|instead)\b",
    re.IGNORECASE,
)


_OPTION = re.compile(r"\(?[A-Z]\)?(?:[,:]?\s+\(?\w+\)?)?")
