"""PostgreSQL URLs for ``db=``: recognised, and recorded only without a password (no driver import here)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: object) -> bool:
    return isinstance(db, str) and db.startswith(SCHEMES)


def safe_url(url: str) -> str:
    """``postgresql://user@host:port/name`` for ``url``; a URL with a password (in it or in its query) is refused
    in one line, so a password never reaches ``config.json``, logs or messages."""
    parts = urlsplit(url)
    if parts.password is not None or any(k == "password" for k, _ in parse_qsl(parts.query)):
        raise ValueError(
            "the PostgreSQL URL holds a password: remove it and set PGPASSWORD or use a ~/.pgpass "
            "file (the URL is recorded in config.json)"
        )
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        raise ValueError(
            f"the PostgreSQL URL has a bad port: postgresql://{parts.hostname or ''}{parts.path}"
        ) from None
    user = f"{parts.username}@" if parts.username else ""
    return f"postgresql://{user}{parts.hostname or ''}{port}{parts.path}"
