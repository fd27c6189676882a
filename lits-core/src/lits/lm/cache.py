"""A persistent response cache: one SQLite file, shared by threads and runs.

The key is the whole request — backend identity, prompt, every sampling
parameter — plus a sample index, so ``n`` distinct samples stay distinct and
a re-run or resumed run re-uses every answer it already paid for.

Every failure of the file (cannot be created, not a database, disk full, a
damaged value) is a :class:`CacheError` that names the file: the user must
be told it is the *cache* that is broken, not the run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Mapping, NoReturn, Protocol, Sequence


def request_key(identity: str, kind: str, payload: object) -> str:
    """Stable hash of a request (sorted-key JSON)."""
    text = json.dumps([identity, kind, payload], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sample_keys(identity: str, kind: str, payload: Mapping[str, object], n: int) -> list[str]:
    """``request_key(identity, kind, {**payload, "sample": i})`` for i < n, encoding the request once.

    ``"sample"`` sorts after the payload's other keys ("params", "prompt"), so
    the texts differ only in their last number.
    """
    text = json.dumps([identity, kind, {**payload, "sample": 0}], sort_keys=True, ensure_ascii=False, default=str)
    tail = '"sample": 0}]'
    if not text.endswith(tail) or any(key > "sample" for key in payload):
        return [request_key(identity, kind, {**payload, "sample": i}) for i in range(n)]
    stem = text[: -len("0}]")]
    return [hashlib.sha256(f"{stem}{i}}}]".encode("utf-8")).hexdigest() for i in range(n)]


class CacheError(RuntimeError):
    """The response cache file cannot be used; the message names it and says what to do."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"the response cache {path} {problem}; free space, delete or move it, pass "
                         "another --cache PATH, or --no-cache")
        self.path = path


class ResponseStore(Protocol):
    """What a model asks of its cache: :class:`ResponseCache`, or a Ray worker's view of the run's cache."""

    def get(self, key: str) -> object: ...

    def put(self, key: str, value: object) -> None: ...

    def put_many(self, entries: Sequence[tuple[str, object]]) -> None: ...


class ResponseCache:
    """Key -> JSON value store in SQLite (WAL mode, one connection, a lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        blocker = next((p for p in self.path.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise CacheError(self.path, f"cannot be created ({blocker} is a file, not a folder)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            self._fail("cannot be created", exc)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except sqlite3.Error as exc:
            self._conn.close()
            self._fail("cannot be opened", exc)

    def _fail(self, what: str, exc: BaseException, question: str = "") -> NoReturn:
        detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise CacheError(self.path, f"{what} ({detail}{question})") from None

    def get(self, key: str) -> object:
        """The JSON value stored under ``key`` (None when there is none)."""
        try:
            with self._lock:
                row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, ValueError) as exc:  # ValueError must not reach a policy (it means "bad output")
            self._fail("cannot be read", exc)

    def put(self, key: str, value: object) -> None:
        text = json.dumps(value, ensure_ascii=False)
        try:
            with self._lock:
                self._conn.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, text))
        except sqlite3.Error as exc:
            self._fail("cannot be written", exc, ": is the disk full?")

    def put_many(self, entries: Sequence[tuple[str, object]]) -> None:
        """Store several answers in one transaction (one commit, not one per answer)."""
        if len(entries) <= 1:  # one statement commits on its own
            for key, value in entries:
                self.put(key, value)
            return
        rows = [(key, json.dumps(value, ensure_ascii=False)) for key, value in entries]
        try:
            with self._lock:
                self._conn.execute("BEGIN")
                try:
                    self._conn.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", rows)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._fail("cannot be written", exc, ": is the disk full?")

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
