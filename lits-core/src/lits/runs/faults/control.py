"""When a run stops early: Ctrl-C, a circuit breaker on failing instances, a full disk.

All three end the same way, so one :class:`RunControl` carries the decision:
no new instance starts, every model call not yet started raises
:class:`~lits.lm.base.CallsStopped` (calls in flight finish and are logged),
and the instances that were running are simply not written as finished --
their journals let ``--resume`` continue them exactly.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sqlite3
import sys
import threading
import time
from types import FrameType
from typing import Iterator, TextIO

from lits.lm.base import stop_new_calls
from lits.lm.cache import CacheError

#: Stop after this many instance failures in a row (no success in between): the server is down.
BREAKER_LIMIT = 3
#: Errors that mean "the disk is full" (EFBIG: a file-size limit, as ``ulimit -f`` sets).
DISK_FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR})

INTERRUPT, BREAKER, RESOURCE = "interrupt", "breaker", "resource"


def resource_problem(exc: BaseException, where: str = "") -> str | None:
    """One line for an error of the machine rather than the model (disk, permissions, cache), else None.

    ``where`` names the folder written when the error names no file (a failed
    write to an open file does not).
    """
    for cause in _chain(exc):
        if isinstance(cause, CacheError):
            return str(cause)
        if isinstance(cause, OSError) and cause.errno in DISK_FULL | NOT_WRITABLE:
            target = cause.filename or _file_in_traceback(cause) or where or "a file"
            reason = cause.strerror or os.strerror(cause.errno or 0)
            if cause.errno in DISK_FULL:
                return f"no space left writing {target} ({reason}); free some space"
            return f"cannot write {target} ({reason}); fix its permissions or choose another --save-dir"
        if isinstance(cause, sqlite3.OperationalError) and "disk" in str(cause).lower():
            return f"a database could not be written ({cause}); free some space"
    return None


def innermost_frames(exc: BaseException) -> list[FrameType]:
    """The frames of ``exc``'s traceback, innermost (where it was raised) first."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames[::-1]


def _file_in_traceback(exc: BaseException) -> str | None:
    """The file a failed ``write`` was writing: a ``path`` of the innermost frame that has one.

    A write to an open file raises an OSError without a file name; the
    writer (a journal, a log) keeps its path on ``self.path`` or in ``path``.
    """
    for frame in innermost_frames(exc):
        candidates = (frame.f_locals.get("path"), getattr(frame.f_locals.get("self"), "path", None))
        for value in candidates:
            if isinstance(value, (str, os.PathLike)) and str(value):
                return str(value)
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


class RunControl:
    """The run's stop decision, shared by the instance workers and the SIGINT handler.

    ``breaker`` consecutive instance failures with no success in between stop
    the run (a server down for good should not burn the whole dataset).
    """

    def __init__(self, *, breaker: int = BREAKER_LIMIT, stream: TextIO | None = None) -> None:
        self.breaker = breaker
        self.stream = stream or sys.stderr  # looked up now: a default bound at import outlives a swapped stderr
        self.reason: str | None = None
        self.message = ""
        self.stopped_at: float | None = None
        self._failures_in_a_row = 0
        self._last_failure = ""
        self._lock = threading.Lock()
        self._signals = 0

    @property
    def stopping(self) -> bool:
        return self.reason is not None

    def stop(self, reason: str, message: str = "") -> bool:
        """Stop the run (the first reason wins); True when this call stopped it."""
        with self._lock:
            if self.reason is not None:
                return False
            self.reason, self.message, self.stopped_at = reason, message, time.monotonic()
        stop_new_calls(True)
        return True

    def succeeded(self) -> None:
        with self._lock:
            self._failures_in_a_row = 0

    def failed(self, message: str, *, server: bool = True, log: str = "execution.log") -> None:
        """Count an instance failure; trips the breaker at ``breaker`` in a row.

        ``server`` says the model server failed (else the cause is in ``log``).
        """
        with self._lock:
            self._failures_in_a_row += 1
            self._last_failure = message
            tripped = self.breaker > 0 and self._failures_in_a_row >= self.breaker
            count = self._failures_in_a_row
        if tripped:
            advice = "fix the server" if server else f"see {log} and fix the cause"
            self.stop(BREAKER, f"stopped after {count} instances failed in a row ({message}); {advice}")

    def close(self) -> None:
        """Let model calls start again (the process may go on, e.g. in tests)."""
        stop_new_calls(False)

    # -- Ctrl-C ------------------------------------------------------------------
    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        if self._signals > 1:
            self._say(
                "lits: interrupted again: exiting at once (finished instances are kept; --resume continues the rest)"
            )
            os._exit(130)
        if self.stop(INTERRUPT, "interrupted"):
            self._say(
                "lits: stopping: no new instances or model calls; calls in flight finish (Ctrl-C again to quit at once)"
            )

    def _say(self, line: str) -> None:
        """Write from a signal handler: unbuffered, so it cannot collide with a print it interrupted."""
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a real file (tests)
            print(line, file=self.stream)
            return
        os.write(fd, (line + "\n").encode())

    @contextlib.contextmanager
    def handling_sigint(self) -> Iterator["RunControl"]:
        """Within this block the first Ctrl-C stops the run gracefully, the second exits at once."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)
