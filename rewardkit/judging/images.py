"""Images for a multimodal judge: every accepted form becomes a ``data:`` URL (or a passed-on http(s) URL),
decoded and re-encoded by Pillow with the longest side capped and the encoded size bounded; what a remote
caller may not make the server read is refused before anything is opened.

The JPEG of an image may not grow past :func:`encoded_limit` of what came in (four times its bytes, at least
1 MiB, at most ``max_bytes``): a 20 KB checkerboard PNG of 4096 x 4096 pixels would otherwise become a 9 MB
JPEG. An encoding that grows past the limit is cut off as it is written, and the image is encoded again
smaller (half the side, lower quality), twice at most, then refused (``encoded_too_large``). A
:class:`ByteBudget` shared by a batch's images (``MAX_BATCH_IMAGE_BYTES``) bounds their total: without it, a
batch of 2,000 PNGs of 2.8 KB (1350-pixel checkerboards) still encodes to 2 GB, each just under the 1 MiB
floor. The request deadline is checked before each step, so a batch of many images stops at its deadline.

>>> import io
>>> from PIL import Image
>>> png = io.BytesIO()
>>> Image.new("L", (40, 20), 128).save(png, "PNG")
>>> encode_image(png.getvalue(), 64).startswith("data:image/jpeg;base64,")
True
>>> encoded_limit(20_000, 4 << 20), encoded_limit(3 << 20, 4 << 20), encoded_limit(None, 4 << 20)
(1048576, 4194304, 4194304)
"""

from __future__ import annotations

import base64
import binascii
import io
import threading
from pathlib import Path
from typing import Any

from rewardkit.core import check_deadline

__all__ = [
    "MAX_BATCH_IMAGE_BYTES",
    "MAX_ENCODED_BYTES",
    "MIN_GROWTH_BYTES",
    "ByteBudget",
    "ImageRefused",
    "encode_image",
    "encoded_limit",
]

MAX_ENCODED_BYTES = 4 << 20  # one image's JPEG, whatever came in
MIN_GROWTH_BYTES = 1 << 20  # a small input may still encode to this much
MAX_BATCH_IMAGE_BYTES = 64 << 20  # a batch's images together (the ByteBudget a judge gives each batch)
GROWTH = 4  # an input may encode to this many times its own bytes
#: (reduction of the side, JPEG quality) tried in turn while the encoding is over the limit
ATTEMPTS = ((1, 90), (2, 75), (4, 60))


class ImageRefused(ValueError):
    """An image this judge will not read (a path or URL it may not follow, too many pixels, an encoding
    over its byte limit)."""


class ByteBudget:
    """The bytes a batch's encoded images may still take, shared by its threads.

    >>> budget = ByteBudget(10)
    >>> budget.take(6), budget.take(6), budget.left
    (True, False, 4)
    """

    def __init__(self, total: int) -> None:
        self.left = total
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        """Take ``size`` bytes if that many are left."""
        with self._lock:
            if size > self.left:
                return False
            self.left -= size
            return True


def encoded_limit(input_bytes: int | None, max_bytes: int) -> int:
    """The most bytes an image's JPEG may take: ``GROWTH`` times its input (at least ``MIN_GROWTH_BYTES``),
    never above ``max_bytes``; ``max_bytes`` for an input of unknown size (an in-process PIL image)."""
    if input_bytes is None:
        return max_bytes
    return min(max(GROWTH * input_bytes, MIN_GROWTH_BYTES), max_bytes)


def encode_image(
    item: Any,
    max_side: int,
    *,
    local_files: bool = True,
    image_urls: bool = True,
    max_pixels: int = 25_000_000,
    max_bytes: int = MAX_ENCODED_BYTES,
    budget: ByteBudget | None = None,
) -> str:
    """An image as a ``data:`` URL (decoded, RGB, longest side capped); ``http(s)`` URLs pass through.

    With ``local_files=False`` a string is never opened as a path: it must be a ``data:`` URL or base64,
    whether or not a file of that name exists. With ``image_urls=False`` URLs are refused. Images over
    ``max_pixels`` are refused from their header, before they are decoded. The JPEG stays within
    :func:`encoded_limit` and what is left of ``budget`` (smaller when needed, else ``encoded_too_large``).

    Raises:
        ImageRefused: the image is not read; its message is the reason.
        DeadlineExceeded: the request deadline passed before this image's work was done.
    """
    from PIL import Image

    check_deadline("llm_judge: encoding images")
    if isinstance(item, str) and item.startswith(("http://", "https://")):
        if not image_urls:
            raise ImageRefused("url_not_allowed")
        return item
    input_bytes: int | None = None
    if isinstance(item, Image.Image):
        image = item
    else:
        raw = _read(item, local_files)
        input_bytes = len(raw)
        image = Image.open(io.BytesIO(raw))
        if image.width * image.height > max_pixels:
            raise ImageRefused("too_many_pixels")
        image.load()
    limit = encoded_limit(input_bytes, max_bytes)
    if budget is not None:
        limit = min(limit, budget.left)
    check_deadline("llm_judge: encoding images")
    image = image.convert("RGB")
    if max(image.size) > max_side:
        image.thumbnail((max_side, max_side))
    jpeg = _jpeg_within(image, limit)
    if budget is not None and not budget.take(len(jpeg)):
        raise ImageRefused("encoded_too_large")
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def _read(item: Any, local_files: bool) -> bytes:
    """The encoded bytes of an image given as a ``data:`` URL, bytes, bare base64 or (in-process) a path."""
    if isinstance(item, str) and item.startswith("data:"):
        return base64.b64decode(item.split(",", 1)[-1], validate=False)
    if isinstance(item, bytes | bytearray):
        return bytes(item)
    if isinstance(item, str) and not local_files:
        try:  # bare base64; a file name is not opened, so no answer depends on whether it exists
            return base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError):
            raise ImageRefused("not_inline") from None
    if isinstance(item, str | Path) and local_files:
        return Path(item).read_bytes()
    raise ImageRefused(f"unsupported:{type(item).__name__}")


class _TooLarge(Exception):
    """An encoding went past its byte limit (raised while it is written, to stop it there)."""


class _CappedBuffer(io.BytesIO):
    """A buffer that refuses to hold more than ``limit`` bytes, so an oversized encoding stops early."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.limit:
            raise _TooLarge
        return super().write(data)


def _jpeg_within(image: Any, limit: int) -> bytes:
    """The image as a JPEG of at most ``limit`` bytes: as it is, then smaller (see ``ATTEMPTS``)."""
    for factor, quality in ATTEMPTS:
        check_deadline("llm_judge: encoding images")
        smaller = image if factor == 1 else image.reduce(factor)
        buffer = _CappedBuffer(limit)
        try:
            smaller.save(buffer, format="JPEG", quality=quality)
        except _TooLarge:
            continue
        return buffer.getvalue()
    raise ImageRefused("encoded_too_large")
