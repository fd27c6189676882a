"""Keep API keys out of everything LiTS prints or writes.

Servers echo keys in error bodies and users paste ``user:KEY@host`` URLs, so
every message that may carry text from a server or a URL passes through
:func:`redact_text` before it reaches stderr, ``execution.log`` or an
exception: the key values in the environment and any URL userinfo become
``***``, and an http(s) URL is shown as :func:`safe_url` shows it.  What a run
records of a URL is :func:`safe_url` too: scheme, host, port and path, never its
userinfo, query string or fragment (however its names are spelled or
percent-encoded), and a path segment that looks like a key becomes ``***``.
"""

from __future__ import annotations

import os
import re
from typing import Iterable
from urllib.parse import unquote, urlsplit

#: Where LiTS reads API keys from; their current values are always redacted.
KEY_ENV_VARS = ("OPENAI_API_KEY", "LITS_API_KEY")
#: Keys that hosted backends' SDKs read (Anthropic, AWS); never sent by LiTS itself, always redacted too.
SDK_KEY_ENV_VARS = ("ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
#: Shorter values ("EMPTY", "none") are placeholders, and replacing them would mangle ordinary words.
MIN_SECRET_LENGTH = 8
MASK = "***"

# scheme://userinfo@ -- userinfo runs to the last '@' before the path, query or fragment.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#'\"<>]*@")


# A query parameter whose name says it is a credential (api-key=, key=, token=, sig=, ...): its value.
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;](?:[\w.\-]*(?:key|token|secret|password|passwd|pwd|auth|credential|signature)[\w.\-]*"
    r"|sig|code|access_token))=(?P<value>[^&#\s'\"<>]+)",
    re.IGNORECASE,
)


def query_secrets(url: str) -> list[str]:
    """The values of a URL's credential-looking query parameters (``?api-key=...``)."""
    return [m.group("value") for m in _QUERY_SECRET.finditer(url) if m.group("value") != MASK]


def secret_values(extra: Iterable[str | None] = ()) -> list[str]:
    """The key values to hide: the environment's keys plus ``extra``, longest first."""
    found = {os.environ.get(name) for name in (*KEY_ENV_VARS, *SDK_KEY_ENV_VARS)} | set(extra)
    return sorted((v for v in found if v and len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact_query(text: str) -> str:
    """``...?api-key=K`` -> ``...?api-key=***`` (credential-looking query parameters only)."""
    return _QUERY_SECRET.sub(lambda m: f"{m.group('name')}={MASK}", text)


def redact_url(url: str) -> str:
    """``scheme://user:pass@host/...?api-key=K`` -> ``scheme://***@host/...?api-key=***``."""
    return redact_query(_URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", url))


#: An http(s) URL inside any text: up to whitespace, a quote or an angle bracket.
_HTTP_URL = re.compile(r"\bhttps?://[^\s'\"<>]+", re.IGNORECASE)
#: 16 or more letters and digits in a row, with both: a key, a token or a signature, not a word or a version.
_KEY_RUN = re.compile(r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{16,}")
#: What a URL recorded without its query string ends with, so a resume knows to ask for the URL again.
DROPPED_QUERY = "?" + MASK


def looks_like_key(segment: str) -> bool:
    """True for a path segment that holds 16+ letters and digits in a row, with both (``sk-proj-AbC1...``)."""
    return any(len(m.group(0)) >= 16 for m in _KEY_RUN.finditer(unquote(segment)))


def safe_url(url: str) -> str:
    """``scheme://host:port/path`` of an http(s) URL: no userinfo, query or fragment; a key-looking path
    segment becomes ``***``, and dropped userinfo and query string are marked ``***@`` and ``?***``.  The full
    URL is used in memory only."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    userinfo, at, host = parts.netloc.rpartition("@")
    host = f"{MASK}@{host}" if at else host
    path = "/".join(MASK if looks_like_key(segment) else segment for segment in parts.path.split("/"))
    return f"{parts.scheme}://{host}{path}{DROPPED_QUERY if parts.query else ''}"


def is_masked(url: str) -> bool:
    """True when ``url`` is a recorded copy that lost a part the server needs (``***``): never call it."""
    return MASK in url


def safe_urls(text: str) -> str:
    """``text`` with every http(s) URL in it as :func:`safe_url` shows it."""
    return _HTTP_URL.sub(lambda m: safe_url(m.group(0)), text)


def has_userinfo(url: str) -> bool:
    """True when ``url`` carries credentials before its host."""
    return _URL_USERINFO.search(url) is not None


def redact_text(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` without the API keys (environment and ``extra``) or URL credentials."""
    for value in secret_values(extra):
        text = text.replace(value, MASK)
    return safe_urls(redact_url(text))
