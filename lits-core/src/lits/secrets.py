"""Keep API keys out of everything LiTS prints or writes.

Servers echo keys in error bodies and users paste ``user:KEY@host`` URLs, so
every message that may carry text from a server or a URL passes through
:func:`redact_text` before it reaches stderr, ``execution.log`` or an
exception: the key values in the environment, any URL userinfo and the values
of credential-looking query parameters (``?api-key=...``) become ``***``.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Optional

#: Where LiTS reads API keys from; their current values are always redacted.
KEY_ENV_VARS = ("OPENAI_API_KEY", "LITS_API_KEY")
#: Shorter values ("EMPTY", "none") are placeholders, and replacing them would mangle ordinary words.
MIN_SECRET_LENGTH = 8
MASK = "***"

# scheme://userinfo@ -- userinfo runs to the last '@' before the path, query or fragment.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#'\"<>]*@")


# A query parameter whose name says it is a credential (api-key=, key=, token=, sig=, ...): its value.
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;](?:[\w.\-]*(?:key|token|secret|password|passwd|pwd|auth|credential|signature)[\w.\-]*"
    r"|sig|code|access_token))=(?P<value>[^&#\s'\"<>]+)", re.IGNORECASE)


def query_secrets(url: str) -> list[str]:
    """The values of a URL's credential-looking query parameters (``?api-key=...``)."""
    return [m.group("value") for m in _QUERY_SECRET.finditer(url) if m.group("value") != MASK]


def hides_query_secret(url: str) -> bool:
    """True when ``url`` is a redacted copy whose credential was replaced by the mask (never saved)."""
    return any(m.group("value") == MASK for m in _QUERY_SECRET.finditer(url))


def secret_values(extra: Iterable[Optional[str]] = ()) -> list[str]:
    """The key values to hide: the environment's keys plus ``extra``, longest first."""
    found = {os.environ.get(name) for name in KEY_ENV_VARS} | set(extra)
    return sorted((v for v in found if v and len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact_query(text: str) -> str:
    """``...?api-key=K`` -> ``...?api-key=***`` (credential-looking query parameters only)."""
    return _QUERY_SECRET.sub(lambda m: f"{m.group('name')}={MASK}", text)


def redact_url(url: str) -> str:
    """``scheme://user:pass@host/...?api-key=K`` -> ``scheme://***@host/...?api-key=***``."""
    return redact_query(_URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", url))


def has_userinfo(url: str) -> bool:
    """True when ``url`` carries credentials before its host."""
    return _URL_USERINFO.search(url) is not None


def redact_text(text: str, extra: Iterable[Optional[str]] = ()) -> str:
    """``text`` without the API keys (environment and ``extra``) or URL credentials."""
    for value in secret_values(extra):
        text = text.replace(value, MASK)
    return redact_url(text)
