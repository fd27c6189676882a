"""Import plugins in a throw-away process first, so no plugin can take every command down with it.

A plugin whose import ends the process (``os._exit``) or never finishes (a loop,
a hung network call) would otherwise kill or hang every ``lits`` command,
unnamed.  The probe imports each plugin's module in a child process, one after
the other, and says which ones exited it or ran past the time limit; only the
healthy ones are then imported here.  Verdicts are cached per environment,
keyed on the plugins' entry points, distributions, versions and files, so the
probe runs again only after an install, an uninstall or an edit; a warm cache
costs a few ``stat`` calls.  A cached verdict is not trusted blindly: the import
here is bounded by the same limit (:func:`import_within`), so a plugin that
started hanging after its verdict was cached is named and skipped too, and the
cache is dropped so the next start probes again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    from lits.plugin_host.entry_points import PluginEntryPoint

T = TypeVar("T")

#: Seconds one plugin's import may take in the probe.
ENV_TIMEOUT = "LITS_PLUGIN_PROBE_TIMEOUT"
DEFAULT_TIMEOUT = 20.0
#: ``off`` imports plugins directly, without the probe (for environments that cannot start processes).
ENV_PROBE = "LITS_PLUGIN_PROBE"
#: Where the verdicts are kept (default: the user's cache folder).
ENV_CACHE = "LITS_PLUGIN_PROBE_CACHE"

_CHILD = """
import importlib, sys
token = sys.argv[1]
for index, target in enumerate(sys.argv[2:]):
    print(token, "start", index, flush=True)
    try:
        importlib.import_module(target)
    except BaseException:
        pass  # an exception is the in-process loader's to name; the probe is for exits and hangs
    print(token, "done", index, flush=True)
"""


def entry_id(ep: PluginEntryPoint) -> str:
    return f"{ep.dist_name}:{ep.name}={ep.value}"


class ImportTimedOut(BaseException):
    """A plugin's import here ran past the limit.  A BaseException, like ``KeyboardInterrupt``, so that a
    plugin's own ``except Exception`` cannot swallow it and go on waiting."""


def limit() -> float:
    """Seconds one plugin's import may take, in the probe and here."""
    return float(os.environ.get(ENV_TIMEOUT) or DEFAULT_TIMEOUT)


def hung_reason(seconds: float) -> str:
    return f"did not finish importing within {seconds:g} s (set {ENV_TIMEOUT} to wait longer)"


def import_within(load: Callable[[], T], seconds: float) -> T:
    """``load()`` (a plugin's import), stopped with :class:`ImportTimedOut` after ``seconds``.

    On the main thread a timer signal interrupts the import where it waits (a read, a sleep, a loop), which
    unwinds it as an exception would; elsewhere (signals reach only the main thread) the import runs on a
    helper thread that is abandoned at the limit."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return _on_a_thread(load, seconds)

    def expire(signum: int, frame: FrameType | None) -> None:
        raise ImportTimedOut(hung_reason(seconds))

    previous = signal.signal(signal.SIGALRM, expire)
    # repeating: an import that caught the first one and went on waiting is stopped again a second later
    started, pending = time.monotonic(), signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        return load()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending[0] > 0:  # the host program's own timer (a script using SIGALRM) goes on
            signal.setitimer(signal.ITIMER_REAL, max(pending[0] - (time.monotonic() - started), 1e-3), pending[1])


def _on_a_thread(load: Callable[[], T], seconds: float) -> T:
    import contextvars

    box: dict[str, object] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # the plugin's owner, for what its import registers

    def work() -> None:
        try:
            box["value"] = context.run(load)
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="lits-plugin-import", daemon=True).start()
    if not done.wait(seconds):
        raise ImportTimedOut(hung_reason(seconds))
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def forget(points: list[PluginEntryPoint]) -> None:
    """Drop the cached verdicts for these plugins: one proved wrong, so the next start probes again."""
    with contextlib.suppress(OSError):
        _cache_path(points).unlink()


def _cache_path(points: list[PluginEntryPoint]) -> Path:
    return cache_dir() / f"probe-{environment_key(points)}.json"


def verdicts(points: list[PluginEntryPoint]) -> dict[str, str]:
    """Entry points (by :func:`entry_id`) that must not be imported here, with why; {} when all are healthy."""
    if not points or os.environ.get(ENV_PROBE, "").lower() in ("off", "0", "false", "no"):
        return {}
    path = _cache_path(points)
    with contextlib.suppress(OSError, ValueError):
        cached = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(cached, dict):
            return {str(k): str(v) for k, v in cached.items()}
    found = probe(points)
    with contextlib.suppress(OSError):  # a cache that cannot be written only costs the probe next time
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
            json.dump(found, tmp)
        os.replace(tmp.name, path)
    return found


def cache_dir() -> Path:
    given = os.environ.get(ENV_CACHE)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lits" / "plugin-probe"


def environment_key(points: list[PluginEntryPoint]) -> str:
    """Changes when a plugin is installed, removed, upgraded or its top-level module file is edited."""
    digest = hashlib.sha256(f"{sys.executable}|{sys.version}".encode())
    for ep in points:
        digest.update(entry_id(ep).encode())
        digest.update(ep.version.encode())
        for path in (ep.dist_path, _module_file(ep.value)):
            with contextlib.suppress(OSError, TypeError):
                stat = os.stat(str(path))
                digest.update(f"{path}|{stat.st_mtime_ns}|{stat.st_size}".encode())
    return digest.hexdigest()[:24]


def _module_file(value: str) -> str | None:
    """The file of the entry point's top-level package, found without importing anything."""
    top = value.split(":")[0].split(".")[0]
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec(top)
        return spec.origin if spec is not None else None
    return None


def probe(points: list[PluginEntryPoint]) -> dict[str, str]:
    """Import each entry point's module in a child process; the ones that exited it or hung, with why."""
    bad: dict[str, str] = {}
    remaining = list(points)
    while remaining:
        culprit, reason = _run_child([ep.value.split(":")[0] for ep in remaining], limit())
        if culprit is None:
            break
        bad[entry_id(remaining[culprit])] = reason
        remaining = remaining[culprit + 1 :]
    return bad


def _run_child(modules: list[str], seconds: float) -> tuple[int | None, str]:
    """(index of the module that exited or hung the child, why), or (None, "") when all imported."""
    token = f"lits-probe-{os.getpid()}-{time.monotonic_ns()}"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, token, *modules],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines: "queue.Queue[str | None]" = queue.Queue()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, name="lits-plugin-probe", daemon=True).start()
    started: int | None = None
    deadline = time.monotonic() + seconds
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return (started if started is not None else 0), hung_reason(seconds)
            if line is None:
                status = child.wait()
                if started is None or status == 0:
                    return None, ""
                return started, f"exited the process while importing (status {status})"
            parts = line.split()
            if len(parts) == 3 and parts[0] == token:
                started = int(parts[2]) if parts[1] == "start" else None
                deadline = time.monotonic() + seconds
    finally:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, 9)
            child.wait()
