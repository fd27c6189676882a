"""Everything a run writes lives under one save dir.

::

    config.json            how the run was made (never an API key)
    execution.log          what happened, with tracebacks of failed instances
    inference.jsonl        one line per model call (tokens, latency, tags)
    checkpoints/           {idx}.journal.jsonl tree changes per iteration (search) or {idx}.json states (chain)
    terminal_nodes/{idx}.json   every terminal node found (search)
    paths/{idx}.json            the selected path (search)
    results/{idx}.json          per-instance outcome; its presence marks the instance done.
                                The same seed gives the same bytes at any concurrency.
    timings/{idx}.json          wall seconds, dependent rounds and model calls of the instance
    eval_results.json      aggregated evaluation (also eval.log)

All JSON files are written atomically, so a killed run leaves no torn file.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Optional

from lits.structures.base import atomic_write_text

_SECRET_KEYS = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)


def redact(config: dict[str, Any]) -> dict[str, Any]:
    """Drop secret-looking keys and credentials embedded in URLs."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if _SECRET_KEYS.search(key):
            continue
        if isinstance(value, dict):
            value = redact(value)
        elif isinstance(value, str):
            value = re.sub(r"(https?://)[^/@\s]+@", r"\1", value)
        out[key] = value
    return out


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # -- paths ---------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def inference_log_path(self) -> Path:
        return self.root / "inference.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def result_path(self, idx: int) -> Path:
        return self.root / "results" / f"{idx}.json"

    # -- writing ---------------------------------------------------------------
    def create(self) -> "RunDir":
        for sub in ("checkpoints", "results"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self

    def write_json(self, relative: str, payload: Any) -> Path:
        path = self.root / relative
        atomic_write_text(path, json.dumps(payload, indent=1, default=str))
        return path

    def write_config(self, config: dict[str, Any]) -> None:
        self.write_json("config.json", redact(config))

    def write_result(self, idx: int, result: dict[str, Any]) -> None:
        self.write_json(f"results/{idx}.json", result)

    # -- reading ---------------------------------------------------------------
    def read_config(self) -> dict[str, Any]:
        if not self.config_path.exists():
            raise FileNotFoundError(f"{self.root} is not a LiTS run directory (no config.json)")
        return json.loads(self.config_path.read_text(encoding="utf-8"))

    def done(self) -> set[int]:
        folder = self.root / "results"
        if not folder.is_dir():
            return set()
        return {int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()}

    def read_timings(self) -> dict[int, dict[str, Any]]:
        folder = self.root / "timings"
        out: dict[int, dict[str, Any]] = {}
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            if path.stem.isdigit():
                out[int(path.stem)] = json.loads(path.read_text(encoding="utf-8"))
        return out

    def read_results(self) -> dict[int, dict[str, Any]]:
        return {
            idx: json.loads(self.result_path(idx).read_text(encoding="utf-8"))
            for idx in sorted(self.done())
        }

    def logger(self, name: str = "lits.run") -> logging.Logger:
        """A logger writing to ``execution.log`` (one handler per run dir)."""
        log = logging.getLogger(f"{name}.{self.root.resolve()}")
        log.setLevel(logging.INFO)
        log.propagate = False
        target = str(self.root / "execution.log")
        if not any(getattr(h, "baseFilename", None) == target for h in log.handlers):
            self.root.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(target, encoding="utf-8")
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            log.addHandler(handler)
        return log

    def close_logger(self, log: Optional[logging.Logger]) -> None:
        if log is None:
            return
        for handler in list(log.handlers):
            handler.close()
            log.removeHandler(handler)
