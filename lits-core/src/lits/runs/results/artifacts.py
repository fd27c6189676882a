"""Reading and writing a run's save dir (the layout and its version: :mod:`lits.io.layout`).

All JSON files are written atomically, so a killed run leaves no torn file.
A damaged file is a :class:`RunFileError` naming it and what to do; a run written
by a newer LiTS (a higher ``format`` in config.json) is refused in one line.  A run holds
its save dir (:meth:`RunDir.lock`) so that a second run into it is refused before it pays a call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, cast

from lits.io import layout
from lits.io.durable import atomic_write_text
from lits.errors import UserError
from lits.io.secrets import redact_query, safe_urls

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: runs are not locked
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from lits.runs.results.records import ResultRecord
    from lits.runs.record import RunRecord

_SECRET_KEYS = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)


def redact(config: Mapping[str, object]) -> dict[str, object]:
    """Drop secret-looking keys and credentials embedded in URLs."""
    out: dict[str, object] = {}
    for key, value in config.items():
        if _SECRET_KEYS.search(key):
            continue
        if isinstance(value, dict):
            value = redact(value)
        elif isinstance(value, str):
            # An http(s) URL keeps its scheme, host, port and path only (lits.io.secrets.safe_url); a database
            # URL keeps its user name (its password is refused before it gets here, and resume needs the
            # name), and its credential-looking query values become ***.
            value = safe_urls(redact_query(value))
        out[key] = value
    return out


class RunFileError(ValueError):
    """A run file that cannot be read; the message names it and says what to do."""


class _QuietFileHandler(logging.FileHandler):
    """A log handler that never prints a traceback: a full disk is reported once, by the run."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock_fd: int | None = None

    def resume_hint(self, mode: str = "search") -> str:
        return f"lits {mode} --resume --save-dir {self.root}"

    # -- paths ---------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.root / layout.CONFIG

    @property
    def inference_log_path(self) -> Path:
        return self.root / layout.INFERENCE_LOG

    @property
    def execution_log_path(self) -> Path:
        return self.root / layout.EXECUTION_LOG

    @property
    def checkpoints(self) -> Path:
        return self.root / layout.CHECKPOINTS

    def result_path(self, idx: int) -> Path:
        return self.root / layout.result(idx)

    # -- holding -------------------------------------------------------------
    def lock(self) -> None:
        """Hold the save dir until :meth:`unlock`: a second run into it (new, ``--resume``, the Python API)
        is refused in one line naming this process.  An ``flock``, which the kernel releases when the
        process dies, so a run killed with SIGKILL never leaves it held.  Readers (``lits view``,
        ``eval``, ``compare``) take no lock: every file is written atomically, a live run reads whole."""
        if self._lock_fd is not None or fcntl is None:
            return
        path = self.root / layout.LOCK
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by child processes (PEP 446)
        except OSError as exc:
            raise UserError(
                f"cannot write the save dir {self.root} ({exc.strerror or exc}); fix its permissions "
                "or choose another --save-dir"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise UserError(
                f"{self.root} is in use by another run{holder}; wait for it to end (or stop it) and "
                "try again, or choose another --save-dir"
            ) from None
        with contextlib.suppress(OSError):  # the pid only names the holder in the refusal
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def unlock(self) -> None:
        """Let another run have the save dir (the lock file stays: removing it could let two runs hold it)."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the flock

    # -- writing ---------------------------------------------------------------
    def create(self) -> "RunDir":
        for sub in (layout.CHECKPOINTS, layout.RESULTS):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self

    def write_json(self, relative: str, payload: object, *, indent: int | None = 1, durable: bool = True) -> Path:
        """``payload`` as JSON, atomically; ``indent=None`` for bulk data nobody reads by eye (5x faster);
        ``durable=False`` skips the fsync (see :func:`lits.io.durable.atomic_writer`)."""
        path = self.root / relative
        text = json.dumps(payload, indent=indent, default=str)
        try:
            atomic_write_text(path, text, durable=durable)
        except OSError as exc:  # a failed write on an open file names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        return path

    def write_config(self, config: RunRecord) -> None:
        self.write_json(layout.CONFIG, {"format": layout.FORMAT, **redact(config.as_config())})

    def write_result(self, idx: int, result: Mapping[str, object]) -> None:
        self.write_json(layout.result(idx), result)

    # -- reading ---------------------------------------------------------------
    def read_config(self) -> RunRecord:
        """The run's record; a damaged, newer or bad config.json is a :class:`RunFileError` naming it."""
        from lits.runs.record import RunRecord
        from lits.runs.spec import SpecError, non_finite

        if not self.config_path.exists():
            raise FileNotFoundError(f"{self.root} is not a LiTS run directory (no config.json)")
        config = self.read_json(self.config_path, "restore it from a copy, or start a new run with another --save-dir")
        if not isinstance(config, dict):
            raise RunFileError(
                f"{self.config_path} is damaged (not a JSON object); restore it from a copy, "
                "or start a new run with another --save-dir"
            )
        newer = layout.newer_format(config)
        if newer is not None:
            raise RunFileError(f"{self.root}: {newer}")
        found = non_finite(config)
        if found is not None:  # json reads NaN and Infinity; no setting means anything with one
            raise RunFileError(
                f"{self.config_path} has {found[0]} = {found[1]}, and every number in a run's "
                "settings must be finite; fix it, or start a new run with another --save-dir"
            )
        try:
            return RunRecord.read(config)
        except SpecError as exc:
            raise RunFileError(f"{self.config_path}: {exc}; restore it from a copy, or start a new run") from None

    def read_json(self, path: Path, remedy: str) -> object:
        """A run file's JSON; a damaged one is a :class:`RunFileError` naming it and ``remedy``."""
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            reason = "empty" if not path.stat().st_size else f"not JSON: {str(exc).splitlines()[0][:80]}"
            raise RunFileError(f"{path} is damaged ({reason}); {remedy}") from None

    def _redo(self, idx: int, mode: str) -> str:
        return f"delete it and run `{self.resume_hint(mode)}` to redo instance {idx}"

    def done(self) -> set[int]:
        folder = self.root / layout.RESULTS
        if not folder.is_dir():
            return set()
        return {int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()}

    def read_timings(self) -> dict[int, dict[str, Any]]:
        """Per-instance timings; a damaged one is only left out (timings are not results)."""
        folder = self.root / layout.TIMINGS
        out: dict[int, dict[str, Any]] = {}
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            if path.stem.isdigit():
                try:
                    out[int(path.stem)] = json.loads(path.read_text(encoding="utf-8"))
                except (ValueError, UnicodeDecodeError):
                    continue
        return out

    def read_results(self, mode: str = "search") -> dict[int, ResultRecord]:
        """Every finished instance's record; a damaged one is an error that says how to redo it."""
        out: dict[int, ResultRecord] = {}
        for idx in sorted(self.done()):
            record = self.read_json(self.result_path(idx), self._redo(idx, mode))
            if not isinstance(record, dict) or "final_state" not in record:
                raise RunFileError(f"{self.result_path(idx)} is damaged (not a result record); {self._redo(idx, mode)}")
            out[idx] = cast("ResultRecord", record)  # what the runner wrote
        return out

    def remove_torn_writes(self) -> int:
        """Delete the temporary files of atomic writes a killed process left behind (``.NAME.XXXX.tmp``, never
        renamed into place): they hold nothing a reader uses. Returns how many were removed."""
        removed = 0
        folders = [self.root, *(self.root / name for name in (*layout.INSTANCE_FOLDERS, layout.STATS, layout.ATTEMPTS))]
        folders += sorted((self.root / layout.CHECKPOINTS).glob("attempt-*"))  # later attempts' journals
        for folder in folders:
            for stale in folder.glob(".*.tmp") if folder.is_dir() else []:
                with contextlib.suppress(OSError):
                    stale.unlink()
                    removed += 1
        return removed

    def repair_inference_log(self) -> None:
        """Make sure appends start on a fresh line: a torn last line (a kill or a full disk) is cut off.

        A last line that is whole JSON but lost only its newline keeps its record.
        """
        path = self.inference_log_path
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        if not size:
            return
        with open(path, "rb+") as fh:
            fh.seek(max(0, size - 65536))
            tail = fh.read()
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            found_start = cut >= 0 or len(tail) == size  # else the line is longer than the window
            if found_start and not _is_json(tail[cut + 1 :]):
                fh.truncate(size - len(tail) + cut + 1)  # drop the torn record
            else:  # a whole record that lost only its newline (or a huge line the reader will skip)
                fh.seek(size)
                fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    def logger(self, name: str = "lits.run") -> logging.Logger:
        """A logger writing to ``execution.log`` (one handler per run dir)."""
        log = logging.getLogger(f"{name}.{self.root.resolve()}")
        log.setLevel(logging.INFO)
        log.propagate = False
        target = str(self.execution_log_path)
        if not any(getattr(h, "baseFilename", None) == target for h in log.handlers):
            self.root.mkdir(parents=True, exist_ok=True)
            handler = _QuietFileHandler(target, encoding="utf-8")
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            log.addHandler(handler)
        return log

    def close_logger(self, log: logging.Logger | None) -> None:
        """Close the log's files; one that cannot be flushed (a full tmpfs fails at close, not at the write) is
        an OSError naming it, raised once every handler is closed."""
        if log is None:
            return
        failed: OSError | None = None
        for handler in list(log.handlers):
            try:
                handler.close()
            except OSError as exc:
                name = getattr(handler, "baseFilename", None) or exc.filename
                failed = failed or OSError(exc.errno, exc.strerror or str(exc), name)
            log.removeHandler(handler)
        if failed is not None:
            raise failed


def _holder(fd: int) -> str:
    """`` (pid N)`` of the process holding the lock, as it wrote it; empty when not yet written."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode("ascii").strip())
        return f" (pid {pid})"
    return ""


def check_writable(root: Path) -> None:
    """Fail early, before a model loads, when the save dir cannot be created or written."""
    probe = root
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise UserError(f"cannot write the save dir {root}: {probe} is a file, not a folder; choose another --save-dir")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(
            f"cannot write the save dir {root}: {probe} is not writable; "
            "fix its permissions or choose another --save-dir"
        )
