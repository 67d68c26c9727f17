"""Images for a multimodal judge: every accepted form becomes a ``data:`` URL (or a passed-on http(s) URL),
decoded and re-encoded by Pillow with the longest side capped; what a remote caller may not make the server
read is refused before anything is opened."""

from __future__ import annotations

import base64
import binascii
import io
from pathlib import Path
from typing import Any

__all__ = ["ImageRefused", "encode_image"]


class ImageRefused(ValueError):
    """An image this judge will not read (a path or URL it may not follow, too many pixels)."""


def encode_image(
    item: Any,
    max_side: int,
    *,
    local_files: bool = True,
    image_urls: bool = True,
    max_pixels: int = 25_000_000,
) -> str:
    """An image as a ``data:`` URL (decoded, RGB, longest side capped); ``http(s)`` URLs pass through.

    With ``local_files=False`` a string is never opened as a path: it must be a ``data:`` URL or base64,
    whether or not a file of that name exists. With ``image_urls=False`` URLs are refused. Images over
    ``max_pixels`` are refused from their header, before they are decoded.
    """
    from PIL import Image

    if isinstance(item, str) and item.startswith(("http://", "https://")):
        if not image_urls:
            raise ImageRefused("url_not_allowed")
        return item
    if isinstance(item, Image.Image):
        image = item
    else:
        if isinstance(item, str) and item.startswith("data:"):
            raw = base64.b64decode(item.split(",", 1)[-1], validate=False)
        elif isinstance(item, bytes | bytearray):
            raw = bytes(item)
        elif isinstance(item, str) and not local_files:
            try:  # bare base64; a file name is not opened, so no answer depends on whether it exists
                raw = base64.b64decode(item, validate=True)
            except (binascii.Error, ValueError):
                raise ImageRefused("not_inline") from None
        elif isinstance(item, str | Path) and local_files:
            raw = Path(item).read_bytes()
        else:
            raise ImageRefused(f"unsupported:{type(item).__name__}")
        image = Image.open(io.BytesIO(raw))
        if image.width * image.height > max_pixels:
            raise ImageRefused("too_many_pixels")
        image.load()
    image = image.convert("RGB")
    if max(image.size) > max_side:
        image.thumbnail((max_side, max_side))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
