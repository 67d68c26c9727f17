"""What a caller can make the judge cost: every amplification of the judge issue, replayed.

The units first (image encodings bounded in bytes, the verdict cache bounded in bytes, the route's async
face), then each amplification against a real uvicorn with a loopback judge: the server's memory stays
under ``RSS_BUDGET`` above idle, ``/healthz`` answers within a second throughout, and the request deadline
holds within a second.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from rewardkit.core import DeadlineExceeded, deadline
from rewardkit.judging.cache import MAX_CACHE_BYTES, request_key, verdicts
from rewardkit.judging.images import (
    MAX_ENCODED_BYTES,
    ByteBudget,
    ImageRefused,
    encode_image,
    encoded_limit,
)


def checkerboard_png(side: int) -> bytes:
    """One-pixel black and white squares: about 20 KB as a PNG at 4096 x 4096, 9 MB as a plain JPEG."""
    squares = (np.indices((side, side)).sum(axis=0) % 2 * 255).astype("uint8")
    buffer = io.BytesIO()
    Image.fromarray(squares, "L").save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


def noise_png(side: int, seed: int = 0) -> bytes:
    """Random pixels: as large as a PNG as they are as a JPEG (nothing to compress)."""
    pixels = np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype="uint8")
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def decoded(url: str) -> tuple[int, tuple[int, int]]:
    """The JPEG bytes of a ``data:`` URL and its image's size."""
    raw = base64.b64decode(url.split(",", 1)[1])
    return len(raw), Image.open(io.BytesIO(raw)).size


# ---------------------------------------------------------------- images: the encoding is bounded


def test_the_checkerboard_of_the_issue_comes_out_small() -> None:
    png = checkerboard_png(4096)
    assert len(png) < 30_000  # the issue's 19.7 KB PNG
    plain = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").save(plain, "JPEG", quality=90)
    assert len(plain.getvalue()) > 5_000_000  # what the judge sent before (12 MB in the issue)
    size, side = decoded(encode_image(png, 4096))
    assert size <= encoded_limit(len(png), MAX_ENCODED_BYTES) == 1 << 20
    assert size < 200_000 and side == (2048, 2048)  # half the side: the squares average to grey


def test_an_image_within_its_limit_keeps_its_side() -> None:
    png = noise_png(300)
    size, side = decoded(encode_image(png, 4096))
    assert side == (300, 300) and size <= 1 << 20


def test_an_encoding_over_the_limit_is_made_smaller_then_refused() -> None:
    png = noise_png(1200)
    size, side = decoded(encode_image(png, 4096, max_bytes=400_000))  # 1200^2 noise: ~2 MB at quality 90
    assert size <= 400_000 and side[0] < 1200
    with pytest.raises(ImageRefused, match="encoded_too_large"):
        encode_image(png, 4096, max_bytes=5_000)


def test_an_in_process_image_is_bounded_by_the_absolute_cap() -> None:
    pixels = np.random.default_rng(1).integers(0, 256, (800, 800, 3), dtype="uint8")
    size, side = decoded(encode_image(Image.fromarray(pixels), 4096, max_bytes=300_000))
    assert size <= 300_000 and side[0] < 800


def test_a_batch_budget_bounds_the_images_together() -> None:
    budget = ByteBudget(600_000)
    sizes = []
    with pytest.raises(ImageRefused, match="encoded_too_large"):
        for seed in range(20):
            sizes.append(decoded(encode_image(noise_png(400, seed), 4096, budget=budget))[0])
    assert sum(sizes) <= 600_000 and budget.left >= 0


def test_a_batch_of_images_stops_at_the_deadline() -> None:
    png = checkerboard_png(2048)
    done = 0
    with pytest.raises(DeadlineExceeded), deadline(0.5):
        for _ in range(10_000):
            encode_image(png, 4096)
            done += 1
    assert 0 < done < 10_000
    with pytest.raises(DeadlineExceeded), deadline(0.0):
        encode_image("https://example.invalid/x.png", 64)  # not even a URL is looked at after it


# ---------------------------------------------------------------- the verdict cache: bounded in bytes


def test_the_verdict_cache_is_bounded_in_bytes_whatever_the_count() -> None:
    reply = "x" * (1 << 20)  # one object, so the test itself holds 1 MiB
    try:
        for i in range(200):
            verdicts.put(request_key(["huge", i]), (None, "unparseable_judgement", reply), max_items=10_000)
        assert verdicts.total <= MAX_CACHE_BYTES
        assert 0 < len(verdicts) <= MAX_CACHE_BYTES // (1 << 20)
        assert verdicts.get(request_key(["huge", 199])) is not None  # the newest are kept
        assert verdicts.get(request_key(["huge", 0])) is None
        verdicts.put("small", (0.7, None, "[[7]]"), max_items=10_000)
        assert verdicts.get("small") == (0.7, None, "[[7]]")
        whole = "y" * (MAX_CACHE_BYTES + 1)
        verdicts.put("too-large", (None, None, whole), max_items=10_000)
        assert verdicts.get("too-large") is None and verdicts.get("small") is not None
        verdicts.put("counted", (0.5, None, "[[5]]"), max_items=1)  # a judge's own cache_size still holds
        assert len(verdicts) == 1
    finally:
        verdicts.clear()
