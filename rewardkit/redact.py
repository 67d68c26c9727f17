"""What may be echoed: secrets in URLs are masked, and a caller's value is shown at most 200 characters long.

Every message that names a URL (a judge's ``base_url``, the access log's request line, the start-up report)
goes through :func:`redact_secrets`: the ``user:password@`` of a URL and the value of a query parameter
named like a secret (``token``, ``api-key``, ``sig``... in any case or percent-encoding) become ``***``.
Every error message that names what a caller sent goes through :func:`shown`, so a 20 MB name comes back
as 200 characters and a count, not as a 20 MB answer.

>>> redact_secrets("https://user:pw@judge.example/v1?api-key=s3cret&model=m")
'https://***@judge.example/v1?api-key=***&model=m'
>>> redact_secrets("GET /get_reward?%74oken=abc HTTP/1.1")
'GET /get_reward?%74oken=*** HTTP/1.1'
>>> shown("x" * 1000)[-40:]
"xxxxxxxxxxx'... (1000 characters in all)"
>>> shown("math")
"'math'"
"""

from __future__ import annotations

import difflib
import re
import reprlib
from collections.abc import Iterable
from urllib.parse import unquote_plus

__all__ = ["SECRET_NAMES", "SHOWN_CHARS", "clip", "closest", "did_you_mean", "redact_secrets", "shown"]

#: Query-parameter names whose values are secrets (compared lower-cased, ``-`` read as ``_``).
SECRET_NAMES = frozenset(
    {
        "token",
        "access_token",
        "id_token",
        "refresh_token",
        "api_key",
        "apikey",
        "key",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "authorization",
        "sig",
        "signature",
        "x_amz_signature",
        "x_goog_signature",
        "code",
    }
)

#: The most characters of a caller's value an error message shows.
SHOWN_CHARS = 200

# Both are linear: a scheme starts where no scheme character precedes it, and a parameter's name cannot
# span another "?", so a long run of either is not rescanned from each of its characters.
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s\"'?#]+@")
_QUERY_PARAM = re.compile(r"([?&;])([^=&;?\s\"'#]*)=([^&;\s\"'#]*)")


def _secret_name(raw: str) -> bool:
    return unquote_plus(raw).strip().lower().replace("-", "_") in SECRET_NAMES


def redact_secrets(text: str) -> str:
    """``text`` with every URL's ``user:password@`` and every secret-named query value replaced by ``***``.

    >>> redact_secrets("http://h/v1?model=m&TOKEN=t")
    'http://h/v1?model=m&TOKEN=***'
    """
    text = _USERINFO.sub(r"\1***@", text)

    def one(match: re.Match[str]) -> str:
        sep, name, _ = match.groups()
        return f"{sep}{name}=***" if _secret_name(name) else match.group(0)

    return _QUERY_PARAM.sub(one, text)


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` at most ``limit`` characters long, saying how long a cut string was (for errors).

    Never builds the full repr of a huge value: strings are cut before ``repr``, containers go through
    :mod:`reprlib`.

    >>> shown(["a", "b"]), shown(list(range(100)))[:22]
    ("['a', 'b']", '[0, 1, 2, 3, 4, 5, ...')
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} characters in all)"
    text = _REPR.repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def clip(text: str, limit: int = 2 * SHOWN_CHARS) -> str:
    """A message (an exception's text, which may quote a caller's value) cut to ``limit`` characters.

    >>> clip("bad value " + "x" * 500)[-30:]
    'xxx... (510 characters in all)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters in all)"


_REPR = reprlib.Repr()
_REPR.maxstring = SHOWN_CHARS
_REPR.maxother = SHOWN_CHARS


def closest(name: str, known: Iterable[str]) -> list[str]:
    """The names of ``known`` closest to ``name`` (case aside), best first, at most 3.

    >>> closest("Fromat", ["format", "math", "tag_count"])
    ['format']
    """
    by_case = {k.lower(): k for k in known}
    return [by_case[k] for k in difflib.get_close_matches(name.lower(), list(by_case), n=3, cutoff=0.7)]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` naming the closest of ``known`` to ``name``, or ``""`` when none is close.

    >>> did_you_mean("maht", ["math", "choice"]), did_you_mean("zzz", ["math"])
    ("; did you mean 'math'?", '')
    """
    near = closest(name, known) if isinstance(name, str) else []
    return f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
