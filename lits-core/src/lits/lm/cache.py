"""A persistent response cache: one SQLite file, shared by threads and runs.

The key is the whole request — backend identity, prompt, every sampling
parameter — plus a sample index, so ``n`` distinct samples stay distinct and
a re-run or resumed run re-uses every answer it already paid for.

Every failure of the file (cannot be created, not a database, disk full, a
damaged value) is a :class:`CacheError` that names the file: the user must
be told it is the *cache* that is broken, not the run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import NoReturn, Protocol, Sequence, TextIO

from lits.io import fastjson

try:
    import fcntl
except ImportError:  # Windows: a commit per call, as before
    fcntl = None  # type: ignore[assignment]


#: ``json.dumps(..., sort_keys=True, ensure_ascii=False, default=str)`` without an encoder built per call.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def request_key(identity: str, kind: str, payload: object) -> str:
    """Stable hash of a request (sorted-key JSON)."""
    return hashlib.sha256(_key_json([identity, kind, payload])).hexdigest()


def generate_keys(identity: str, params: object, prompt: object, n: int) -> list[str]:
    """``request_key(identity, "generate", {"params": params, "prompt": prompt, "sample": i})`` for i < n.

    Every model call computes these, and prompts run to kilobytes: the request is encoded and hashed once
    (its fixed head once per model), and each key continues that hash with its sample number, the last
    thing in the sorted-key text.
    """
    parts = _message_parts(prompt) if type(prompt) is list and type(params) is EncodedJSON else None
    if parts is not None and len(parts) > 1:  # the head's hash state once, then the last message
        stem = _head_state(identity, params, tuple(parts[:-1])).copy()  # type: ignore[arg-type]
        stem.update(b", " + parts[-1] + b'], "sample": ')
    else:
        stem = hashlib.sha256(
            b"".join((_generate_head(identity), _key_json(params), b', "prompt": ', _key_json(prompt), b', "sample": '))
        )
    keys = []
    for i in range(n):
        each = stem.copy()
        each.update(f"{i}}}]".encode("utf-8"))
        keys.append(each.hexdigest())
    return keys


@functools.lru_cache(maxsize=64)
def _generate_head(identity: str) -> bytes:
    return b"[" + _key_json(identity) + b', "generate", {"params": '


def _head_state(identity: str, params: EncodedJSON, head: tuple[bytes, ...]) -> "hashlib._Hash":
    """The hash state of a request's key text up to its last message's place (a chat prompt's system prompt
    and examples, the same in every call: hashed once per model and parameters, not per call)."""
    key = (identity, params, head)
    state = _HEAD_STATES.get(key)
    if state is None:
        if len(_HEAD_STATES) >= 256:
            _HEAD_STATES.clear()
        state = _HEAD_STATES[key] = hashlib.sha256(
            b"".join((_generate_head(identity), params, b', "prompt": [', b", ".join(head)))
        )
    return state


#: :func:`_head_state`'s hash states by (identity, encoded parameters, encoded head messages), bounded.
_HEAD_STATES: dict[tuple[str, bytes, tuple[bytes, ...]], "hashlib._Hash"] = {}


class EncodedJSON(bytes):
    """A part of a key already encoded as :func:`_key_json` would (a caller that reuses it encodes it once)."""


def _key_json(value: object) -> bytes:
    """``_KEY_ENCODER.encode(value)`` in UTF-8, byte for byte, with strings escaped by pydantic-core.

    Keys hash whole prompts: Python's escaping of a 5 KB prompt costs ~15 µs, pydantic-core's ~5 µs
    (its output is the same for every string UTF-8 can hold; ``tests/lm/test_cache.py`` checks).
    Chat messages, the usual prompt, take a path of their own: a call per value costs more than escaping.
    """
    kind = type(value)
    if kind is str:
        return _text_json(value)  # type: ignore[arg-type]
    if kind is EncodedJSON:
        return value  # type: ignore[return-value]
    if kind is list or kind is tuple:
        messages = _messages_json(value)  # type: ignore[arg-type]
        if messages is not None:
            return messages
        return b"[" + b", ".join([_key_json(item) for item in value]) + b"]"  # type: ignore[attr-defined]
    if kind is dict and all(type(key) is str for key in value):  # type: ignore[attr-defined]
        items = sorted(value.items())  # type: ignore[attr-defined]
        return b"{" + b", ".join([_key_json(k) + b": " + _key_json(v) for k, v in items]) + b"}"
    return _KEY_ENCODER.encode(value).encode("utf-8")


def _text_json(text: str) -> bytes:
    short = _SHORT.get(text)
    if short is not None:
        return short
    try:
        out = fastjson.pydantic_to_json()(text)
    except ValueError:  # a lone surrogate (PydanticSerializationError): Python's encoder says what is wrong
        return _KEY_ENCODER.encode(text).encode("utf-8")
    if len(text) <= 32 and len(_SHORT) < 4096:  # roles, field names, short replies: they repeat
        _SHORT[text] = out
    return out


#: Encodings of short strings already seen (bounded: at most 4096 of at most 32 characters).
_SHORT: dict[str, bytes] = {}


def _messages_json(items: Sequence[object]) -> bytes | None:
    """A list of chat messages (dicts of strings) encoded in one pass, or None for anything else."""
    parts = _message_parts(items)
    return None if parts is None else b"[" + b", ".join(parts) + b"]"


def _message_parts(items: Sequence[object]) -> list[bytes] | None:
    """Each chat message of ``items`` encoded (see :func:`_messages_json`), or None for anything else."""
    parts = []
    for message in items:
        if type(message) is not dict:
            return None
        if len(message) == 2:  # the usual {"role": ..., "content": ...}, its keys in sorted order
            role, content = message.get("role"), message.get("content")
            if type(role) is str and type(content) is str:
                parts.append(_message_json(role, content))
                continue
        fields = []
        for key, text in sorted(message.items()):
            if type(key) is not str or type(text) is not str:
                return None
            fields.append(_text_json(key) + b": " + _text_json(text))
        parts.append(b"{" + b", ".join(fields) + b"}")
    return parts


def _message_json(role: str, content: str) -> bytes:
    """One ``{"content", "role"}`` message encoded; one seen before is encoded once (see :data:`_MESSAGES`)."""
    global _MESSAGE_BYTES
    key = (role, content)
    out = _MESSAGES.get(key)
    if out is not None:
        return out
    out = b'{"content": ' + _text_json(content) + b', "role": ' + _text_json(role) + b"}"
    seen = hash(key)  # a str keeps its hash: free for the prompt's own strings
    if seen not in _SEEN_ONCE:
        if len(_SEEN_ONCE) >= 16384:
            _SEEN_ONCE.clear()
        _SEEN_ONCE.add(seen)
        return out
    if _MESSAGE_BYTES + len(out) > MESSAGE_CACHE_BYTES:  # full: start again with what repeats from now on
        _MESSAGES.clear()
        _MESSAGE_BYTES = 0
    _MESSAGES[key] = out
    _MESSAGE_BYTES += len(out)
    return out


#: Chat messages that came twice (a system prompt, few-shot turns: most of every request's key) and their
#: encodings, up to this many bytes; a message seen once is only remembered by its hash (the state a
#: request asks about is new every time).
MESSAGE_CACHE_BYTES = 4 << 20
_MESSAGES: dict[tuple[str, str], bytes] = {}
_MESSAGE_BYTES = 0
_SEEN_ONCE: set[int] = set()


def encoded(value: object) -> EncodedJSON:
    """``value`` as a key holds it, for a caller to keep and pass in place of ``value``."""
    return EncodedJSON(_KEY_ENCODER.encode(value).encode("utf-8"))


class CacheError(RuntimeError):
    """The response cache file cannot be used; the message names it and says what to do."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"the response cache {path} {problem}; free space, delete or move it, pass "
            "another --cache PATH, or --no-cache"
        )
        self.path = path


class ResponseStore(Protocol):
    """What a model asks of its cache: :class:`ResponseCache`, or a Ray worker's view of the run's cache."""

    def get(self, key: str) -> object: ...

    def get_many(self, keys: Sequence[str]) -> list[object]: ...

    def put(self, key: str, value: object) -> None: ...

    def put_many(self, entries: Sequence[tuple[str, object]]) -> None: ...


#: New answers wait in memory, and in a pending file appended at each call (a kill -9 loses none), until
#: this many are stored in SQLite in one transaction, or this many seconds have passed, or ``commit`` or
#: ``close`` runs: a commit per call (or per finished instance) cost more than the rest of the cache's work.
GROUP_ROWS = 128
GROUP_SECONDS = 1.0
#: A cache that was empty when opened answers misses without SQL while it holds only its own answers, for at
#: most this many of them (their keys are kept in memory to tell its hits from misses).
FRESH_KEYS = 100_000
#: The caches open in this process: a new one on the same file first commits their pending answers.
_OPEN: "weakref.WeakSet[ResponseCache]" = weakref.WeakSet()
_OPEN_LOCK = threading.Lock()


class ResponseCache:
    """Key -> JSON value store in SQLite (WAL mode, one connection, a lock), with grouped commits.

    An answer is in the pending file (``PATH.pending-*``, locked by its process) before ``put`` returns;
    whoever opens the cache after that process died stores the file's answers in SQLite and removes it.
    A cache that was empty when opened (a new run's) looks up only the keys it stored itself, until a
    commit finds that another connection wrote to the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._pending: dict[str, str] = {}
        self._since = 0.0
        self._side: TextIO | None = None
        self._side_path: Path | None = None
        self._own: set[str] | None = None  # the keys it stored, while they are all the file holds
        self._version: object = None
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
        self._file = self.path.resolve()
        with _OPEN_LOCK:
            others = [c for c in _OPEN if c._file == self._file]
            _OPEN.add(self)
        for other in others:  # this process's answers: visible to the new connection at once
            other.commit()
        self._recover()
        try:
            if self._conn.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is None:
                self._own, self._version = set(), self._data_version()
        except sqlite3.Error as exc:
            self._fail("cannot be read", exc)

    def _fail(self, what: str, exc: BaseException, question: str = "") -> NoReturn:
        detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise CacheError(self.path, f"{what} ({detail}{question})") from None

    def get(self, key: str) -> object:
        """The JSON value stored under ``key`` (None when there is none)."""
        return self.get_many((key,))[0]

    def get_many(self, keys: Sequence[str]) -> list[object]:
        """:meth:`get` of each key (a request's ``n`` samples), under one hold of the lock."""
        try:
            texts: list[str | None] = []
            with self._lock:
                own = self._own
                for key in keys:
                    text = self._pending.get(key)
                    if text is None and (own is None or key in own):
                        row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
                        text = row[0] if row else None
                    texts.append(text)
            return [None if text is None else json.loads(text) for text in texts]
        except (sqlite3.Error, ValueError) as exc:  # ValueError must not reach a policy (it means "bad output")
            self._fail("cannot be read", exc)

    def put(self, key: str, value: object) -> None:
        self._stage([(key, fastjson.compact(value))])

    def put_many(self, entries: Sequence[tuple[str, object]]) -> None:
        """Store several answers (one line write for all of them)."""
        if len(entries) <= 1:
            for key, value in entries:
                self.put(key, value)
            return
        self._stage([(key, fastjson.compact(value)) for key, value in entries])

    def _stage(self, rows: list[tuple[str, str]]) -> None:
        """Append ``rows`` to the pending file (handed to the OS: a kill keeps them), then to the group."""
        with self._lock:
            if fcntl is None:  # no file locks to tell a live process's pending file from a dead one's
                self._pending.update(rows)
                self._commit()
                return
            try:
                if self._side is None:
                    self._side = self._open_side()
                self._side.write("".join([f"{_quoted(key)}\t{text}\n" for key, text in rows]))
                self._side.flush()
            except OSError as exc:
                self._fail("cannot be written", exc, ": is the disk full?")
            if not self._pending:
                self._since = time.monotonic()
            self._pending.update(rows)
            if len(self._pending) >= GROUP_ROWS or time.monotonic() - self._since >= GROUP_SECONDS:
                self._commit()

    def commit(self) -> None:
        """Store the pending answers in SQLite now."""
        with self._lock:
            self._commit()

    def _commit(self) -> None:
        if not self._pending:
            return
        try:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", list(self._pending.items())
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            if self._own is not None:
                self._note_own()
        except sqlite3.Error as exc:
            self._fail("cannot be written", exc, ": is the disk full?")
        self._pending.clear()
        if self._side is not None:
            with contextlib.suppress(OSError):  # stored: at worst a later open stores them again
                self._side.seek(0)
                self._side.truncate()

    def _note_own(self) -> None:
        """Remember the keys just committed, or stop skipping look-ups once another connection has written
        (it is seen at the next commit: until then its answers are asked for again, never lost)."""
        assert self._own is not None
        if self._data_version() != self._version or len(self._own) + len(self._pending) > FRESH_KEYS:
            self._own = None
            return
        self._own.update(self._pending)

    def _data_version(self) -> object:
        """SQLite's count of commits by other connections to this file (ours leave it unchanged)."""
        return self._conn.execute("PRAGMA data_version").fetchone()[0]

    def _open_side(self) -> TextIO:
        """This cache's pending file, locked for as long as the process lives."""
        assert fcntl is not None
        prefix = f".{self.path.name}."
        fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=prefix, suffix=".tmp")  # a kill leaves a torn write
        side = os.fdopen(fd, "w", encoding="utf-8")
        fcntl.flock(side.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        # only now under the name others look for: none can take it for a dead process's before it is locked
        self._side_path = self.path.with_name(f"{self.path.name}.pending-{Path(name).name[len(prefix) : -4]}")
        os.replace(name, self._side_path)
        return side

    def _recover(self) -> None:
        """Store the answers of pending files whose process died (their lock is free), then remove them."""
        if fcntl is None:
            return
        for side in sorted(self.path.parent.glob(f"{self.path.name}.pending-*")):
            try:
                with open(side, "r+", encoding="utf-8", errors="replace") as fh:
                    try:
                        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        continue  # a live process's
                    rows = _pending_rows(fh.read())
                    if rows:
                        with self._lock:
                            self._pending.update(rows)
                            self._commit()
                    side.unlink()
            except OSError:
                continue

    def __len__(self) -> int:
        with self._lock:
            self._commit()
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with _OPEN_LOCK:
            _OPEN.discard(self)
        with self._lock:
            stored = True
            try:
                self._commit()
            except CacheError:
                stored = False  # the pending file keeps the answers for the next open
            if self._side is not None:
                with contextlib.suppress(OSError):
                    self._side.close()
                    if stored and self._side_path is not None:
                        self._side_path.unlink()
                self._side = None
            try:
                self._conn.close()
            except sqlite3.Error:
                pass


def _quoted(key: str) -> str:
    """``json.dumps(key)``; a key made by :func:`request_key` (hex) needs no escaping."""
    return f'"{key}"' if key.isascii() and key.isalnum() else json.dumps(key)


def _pending_rows(text: str) -> list[tuple[str, str]]:
    """The whole ``"key"<TAB>json`` lines of a pending file (a line cut short by a full disk is left out)."""
    rows = []
    for line in text.split("\n"):
        key, tab, value = line.partition("\t")
        try:
            if tab:
                json.loads(value)
                rows.append((str(json.loads(key)), value))
        except ValueError:
            continue
    return rows
