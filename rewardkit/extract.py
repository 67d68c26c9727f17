"""Finding the answer in a completion: extraction only, no judging (that is each reward's compare step)."""

from __future__ import annotations

__all__ = ["last_tag_block"]


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
