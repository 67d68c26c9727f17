"""What a service client is made with, checked when it is made: the service's URL and the HTTP keywords.

Nothing is retried for a setting that cannot work: a URL without ``http://`` fails here, not after the
retries, and a keyword of an older release names its new name.
"""

from __future__ import annotations

from collections.abc import Sequence

#: what importing the client says where httpx is missing: the extra that brings it, and nothing of the server
NEEDS_HTTPX = (
    "the rewardkit client needs httpx: pip install '/path/to/rewardkit[client]' (the client alone, nothing "
    "of the server, for a trainer's venv)"
)

try:
    import httpx
except ImportError:  # a venv without the client extra (a trainer's with [math] only, say)
    raise ImportError(NEEDS_HTTPX, name="httpx") from None

__all__ = ["HTTP_OPTIONS", "NEEDS_HTTPX", "check_http_options", "service_url"]

HTTP_OPTIONS = ("http_timeout_s", "http_max_retries", "http_backoff_s", "http_max_backoff_s", "max_batch")
_RENAMED = {name.removeprefix("http_"): name for name in HTTP_OPTIONS if name.startswith("http_")}


def service_url(url: str) -> str:
    """``url`` without its trailing slash; ``ValueError`` unless it is an ``http(s)://host`` URL (nothing
    is retried for a URL that cannot work).

    >>> service_url("http://127.0.0.1:8000/")
    'http://127.0.0.1:8000'
    >>> service_url("127.0.0.1:8000")
    Traceback (most recent call last):
    ValueError: the reward service URL '127.0.0.1:8000' has no scheme: use 'http://127.0.0.1:8000'
    """
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        if "://" not in str(url):
            raise ValueError(f"the reward service URL {url!r} has no scheme: use 'http://{url}'")
        raise ValueError(f"the reward service URL {url!r} is not http(s)://HOST[:PORT]")
    return url.rstrip("/")


def check_http_options(owner: str, options: Sequence[str]) -> None:
    """``TypeError`` for a keyword that is not one of :data:`HTTP_OPTIONS`, naming the new name of one that
    was renamed (``timeout_s`` is ``http_timeout_s``: a reward has a ``timeout_s`` of its own)."""
    for key in options:
        if key in _RENAMED:
            raise TypeError(
                f"{owner}: the keyword {key!r} was renamed to {_RENAMED[key]!r} (the client's HTTP settings "
                f"are named http_*, apart from a reward's own parameters such as the math reward's timeout_s)"
            )
        if key not in HTTP_OPTIONS:
            raise TypeError(
                f"{owner} got an unexpected keyword argument {key!r}; its HTTP settings are "
                + ", ".join(HTTP_OPTIONS)
            )
