"""Answer containers: the last ``<answer>`` block, the final boxes (an answer set), and the special tokens a
trainer may leave at the end of a completion. Reading only: no judging."""

from __future__ import annotations

import re

#: end-of-turn tokens a trainer may leave in a decoded completion (OpenRLHF keeps special tokens): ChatML and
#: Llama 3 style ``<|...|>``, DeepSeek's full-width ``<｜...｜>``, and the classic ``</s>``, ``<eos>``, ...
_SPECIAL_TAIL = re.compile(
    r"(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</s>|<eos>|<end_of_turn>|<pad>|<[A-Z][A-Z_]{2,30}>)\Z"
)


def strip_special_tail(text: str) -> str:
    """``text`` without the special tokens (and white space) it ends with.

    >>> strip_special_tail("<answer>4</answer><|im_end|>\\n<|endoftext|>")
    '<answer>4</answer>'
    >>> strip_special_tail("<answer>4</answer></s>")
    '<answer>4</answer>'
    """
    end = len(text.rstrip())
    while True:  # move the end back token by token; one slice at the end (linear in what is stripped)
        match = _SPECIAL_TAIL.search(text, max(0, end - 48), end)  # a token is short: look at the end only
        if match is None:
            return text[:end]
        end = match.start()
        while end and text[end - 1].isspace():
            end -= 1


def last_tag_block(text: str, tag: str = "answer") -> str | None:
    """The content of the last complete ``<tag>...</tag>`` block, or ``None`` when there is none.

    The block ends at the first closing tag after the last opening tag that has one, so
    ``<answer>a</answer> junk </answer>`` gives ``"a"`` and ``<answer>a<answer>b</answer>`` gives ``"b"``.
    Linear in the text's length, whatever it holds.

    >>> last_tag_block("<answer>1</answer> then <answer>\\n2\\n</answer>")
    '\\n2\\n'
    >>> last_tag_block("no tags here") is None
    True
    """
    opening, closing = f"<{tag}>", f"</{tag}>"
    last_close = text.rfind(closing)
    if last_close < 0:
        return None
    start = text.rfind(opening, 0, last_close)
    if start < 0:
        return None
    start += len(opening)
    end = text.find(closing, start)
    return text[start:end]


_BOX_NAMES = ("\\boxed", "\\fbox")
MAX_SET_ITEMS = 32  # boxes read as one answer set


def last_boxed(text: str) -> str | None:
    """The content of the last brace-balanced ``\\boxed{...}`` (or ``\\fbox{...}``), or ``None``.

    Nested braces are kept whole; an unclosed box is skipped for the one before it. Linear in the text:
    a box before an unclosed one can only close before it, so each character is scanned once.

    >>> last_boxed("first \\\\boxed{18}, then \\\\boxed{\\\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> last_boxed("\\\\boxed{1} and an unclosed \\\\boxed{2")
    '1'
    >>> last_boxed("no box") is None
    True
    """
    found = _last_box(text, len(text))
    return found[2] if found is not None else None


def _last_box(text: str, stop: int) -> tuple[int, int, str] | None:
    """``(start, end, content)`` of the last complete box that closes before ``stop``. The box commands are
    found from the end backwards (one ``rfind`` per command, each resumed where it stopped), so the time
    is linear in what lies between ``stop`` and the box found, not in the text before it."""
    end = stop
    found = {name: text.rfind(name, 0, stop) for name in _BOX_NAMES}
    while True:
        name = max(found, key=found.__getitem__)  # the later of the last \boxed and the last \fbox
        start = found[name]
        if start < 0:
            return None
        brace = start + len(name)
        while brace < end and text[brace] == " ":
            brace += 1
        if brace < end and text[brace] == "{":
            content = _balanced(text, brace, end)
            if content is not None:
                return start, brace + len(content) + 2, content
        end = start
        found[name] = text.rfind(name, 0, start)  # the other command's last place is before it already


def unclosed_box(text: str) -> bool:
    """The text's last box command opens a box that never closes (``... so \\boxed{42`` : the output
    stopped inside the box, and what it held may be the start of 420). Such a text has no answer, whatever
    it boxed or stated before; a box inside a complete ``<answer>`` block before it is not looked at.

    >>> unclosed_box("so \\\\boxed{42"), unclosed_box("so \\\\boxed{42}")
    (True, False)
    >>> unclosed_box("\\\\boxed{1} then \\\\fbox{2")
    True
    >>> unclosed_box("<answer>\\\\boxed{4}</answer>"), unclosed_box("no box at all")
    (False, False)
    """
    start = max(text.rfind(name) for name in _BOX_NAMES)
    if start < 0 or start < text.rfind("</answer>"):
        return False
    brace = start + len("\\boxed" if text.startswith("\\boxed", start) else "\\fbox")
    while brace < len(text) and text[brace] == " ":
        brace += 1
    if brace >= len(text) or text[brace] != "{":
        return False
    return _balanced(text, brace, len(text)) is None


# What may stand between the boxes of one final answer: commas, "and"/"or", spacing, \text{} of those words.
_SET_GAP = re.compile(
    r"(?:\s|,|;|\$|\\[,;:! ()\[\]]|\\q?quad\b|\band\b|\bor\b|\\text\s*\{\s*(?:,|and|or)?\s*\})*",
    re.IGNORECASE,
)


def final_boxes(text: str) -> list[str] | None:
    """The boxes of the final answer, in order: the last box, and the boxes before it that are joined to it
    only by commas, "and"/"or", ``\\quad`` and the like (an answer set), labelled boxes among them
    (``y_1 = \\boxed{a}`` and ``y_2 = \\boxed{b}``). A box earlier in the reasoning,
    with other words between, is an intermediate result. ``None`` when there is no box.

    >>> final_boxes("The integers are \\\\boxed{-2} and \\\\boxed{1}.")
    ['-2', '1']
    >>> final_boxes("first \\\\boxed{18}, which gives \\\\boxed{210}")
    ['210']
    """
    found = _last_box(text, len(text))
    if found is None:
        return None
    start, _, content = found
    items = [content]
    while len(items) < MAX_SET_ITEMS:
        previous = _last_box(text, start)
        if previous is None or not _joins(_unlabelled(text, previous[0], previous[1], start)):
            break
        start, _, content = previous
        items.insert(0, content)
    return items


# "y_1 = \\boxed{a} and y_2 = \\boxed{b}": a name and "=" before a box (y_2, x_{2}, f(x), a)
_LABEL = re.compile(r"(?<![\\\w])[A-Za-z](?:_\{?\w{1,3}\}?)?(?:\([A-Za-z]\))?\s*=\s*$")
LABEL_LOOKBACK = 24


def _unlabelled(text: str, box_start: int, box_end: int, next_start: int) -> str:
    """The gap between two boxes without the label of the second, when both are labelled (``y_1 =
    \\boxed{a} \\) and \\( y_2 = \\boxed{b}``: two answers named, one answer set)."""
    gap = text[box_end:next_start]
    label = _LABEL.search(gap)
    if label is None or _LABEL.search(text[max(0, box_start - LABEL_LOOKBACK) : box_start]) is None:
        return gap
    return gap[: label.start()]


_GAP_MARKUP = re.compile(r"\\text\s*\{|[{}$]|\\[()\[\],;:! ]|\\q?quad\b")
_GAP_JOINER = re.compile(r"(?:,|;|\band|\bor)\s*$", re.IGNORECASE)
MAX_GAP_CHARS = 40


def _joins(gap: str) -> bool:
    """Two boxes with ``gap`` between them belong to one answer: only commas, "and", ``\\quad`` and the
    like, or a short label ending in "and"/"or"/a comma (``\\text{ for part (a) and }``), no sentence end."""
    if _SET_GAP.fullmatch(gap):
        return True
    if len(gap) > MAX_GAP_CHARS:
        return False
    words = _GAP_MARKUP.sub(" ", gap)
    return not re.search(r"[.!?:=]|\n\s*\n", words) and bool(_GAP_JOINER.search(words))


def _balanced(text: str, open_at: int, stop: int) -> str | None:
    """The content of the brace group opening at ``open_at`` if it closes before ``stop``, else ``None``."""
    depth = 0
    for brace in _BRACE.finditer(text, open_at, stop):  # from brace to brace
        if brace.group() == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : brace.start()]
    return None


_BRACE = re.compile(r"[{}]")
