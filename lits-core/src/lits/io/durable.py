"""Durable writes: a file replaces its old version whole or not at all, and a group of files becomes durable
together (one fsync wait for the group, renamed in the order written).

The ground floor of every save (a run's directory, a search's journal, a chain's checkpoint, the viewer's page):
it imports nothing of LiTS.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import tempfile
import threading
from pathlib import Path
from typing import Iterator, TextIO


def atomic_write_text(path: Path, text: str, *, grouped: bool = False, durable: bool = True) -> None:
    """Write ``text`` to ``path`` so readers never see a half-written file (``grouped``, ``durable``: see
    :func:`atomic_writer`)."""
    with atomic_writer(path, grouped=grouped, durable=durable) as fh:
        fh.write(text)


@dataclasses.dataclass
class _Staged:
    """A written temporary file waiting for its group's fsync, then its rename onto ``path``."""

    fh: TextIO
    tmp: str
    path: Path


#: The files staged by the innermost :func:`durable_together` block (None outside one).
_GROUP: contextvars.ContextVar[list[_Staged] | None] = contextvars.ContextVar("lits_durable_group", default=None)


@contextlib.contextmanager
def atomic_writer(path: Path, *, grouped: bool = False, durable: bool = True) -> Iterator[TextIO]:
    """A text file that replaces ``path`` (fsynced first) only when the block ends without an error.

    ``grouped`` inside :func:`durable_together`: the fsync and the rename wait for that block's end, so a
    group of files costs one fsync's wait instead of one per file.  ``durable=False``: no fsync (a killed
    process loses nothing, a lost power may leave an empty file), for files whose reader skips a bad one.
    """
    staged = _GROUP.get() if grouped else None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    fh = os.fdopen(fd, "w", encoding="utf-8")
    try:
        yield fh
        fh.flush()
        if staged is not None:
            staged.append(_Staged(fh, tmp, path))
            return
        if durable:
            os.fsync(fh.fileno())
        fh.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            fh.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def durable_together() -> Iterator[None]:
    """Grouped atomic writes made inside become durable together when the block ends (even on an error).

    Their fsyncs run at once, which the file system (ext4, XFS) serves with one journal commit, then the
    files are renamed in the order they were written: a reader (or a kill, or a power loss) sees each file
    whole or not at all, and a later file never without an earlier one.  A block inside another joins the
    outer one's group.
    """
    if _GROUP.get() is not None:
        yield
        return
    staged: list[_Staged] = []
    token = _GROUP.set(staged)
    try:
        yield
    finally:
        _GROUP.reset(token)
        _commit(staged)


def _commit(staged: list[_Staged]) -> None:
    """fsync the staged files concurrently, then rename them in order; a failure names its file."""
    failed: list[tuple[_Staged, OSError]] = []

    def sync(item: _Staged) -> None:
        try:
            os.fsync(item.fh.fileno())
        except OSError as exc:
            failed.append((item, exc))

    helpers = [threading.Thread(target=sync, args=(item,), name="lits-fsync") for item in staged[1:]]
    for thread in helpers:
        thread.start()
    if staged:
        sync(staged[0])
    for thread in helpers:
        thread.join()
    done = 0
    try:
        for item in staged:
            item.fh.close()
        if failed:
            item, exc = failed[0]
            raise OSError(exc.errno, exc.strerror or str(exc), str(item.path))
        for item in staged:
            try:
                os.replace(item.tmp, item.path)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror or str(exc), str(item.path)) from None
            done += 1
    finally:
        for item in staged[done:]:
            with contextlib.suppress(OSError):
                item.fh.close()
            with contextlib.suppress(OSError):
                os.unlink(item.tmp)
