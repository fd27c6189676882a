"""Counters that must cover the whole run, not the last process of it.

A resumed run is several processes; each keeps its own policy statistics,
fault costs and busy time in ``stats/process-N.json`` (rewritten as it goes,
so a killed process loses at most the last few instances' worth), and the
summary adds them up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from lits.runs.results.evaluation import Summary

#: Counters whose merged value is recomputed from others rather than added.
RATES = {"duplicate_rate": ("duplicates", "outputs")}


class ProcessStats:
    """This process's file under ``stats/``; the number is the next free one."""

    def __init__(self, run_root: Path) -> None:
        folder = Path(run_root) / "stats"
        taken = (
            {int(p.stem.split("-")[-1]) for p in folder.glob("process-*.json") if p.stem.split("-")[-1].isdigit()}
            if folder.is_dir()
            else set()
        )
        number = max(taken, default=0) + 1
        self.relative = f"stats/process-{number}.json"


def merge_counts(parts: Sequence[Mapping[str, object] | None]) -> dict[str, float] | None:
    """Add numeric counters key by key; rates are recomputed from their parts."""
    present = [p for p in parts if p]
    if not present:
        return None
    total: dict[str, float] = {}
    for part in present:
        for key, value in part.items():
            if key in RATES or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            total[key] = total.get(key, 0) + value
    for key, (num, den) in RATES.items():
        if any(key in p for p in present):
            total[key] = round(total.get(num, 0) / total[den], 4) if total.get(den) else 0.0
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in total.items()}


def read_all(run_root: Path) -> list[dict[str, Any]]:
    folder = Path(run_root) / "stats"
    out = []
    for path in sorted(folder.glob("process-*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a damaged counter file costs its counts, not the summary
        if isinstance(data, dict):
            out.append(data)
    return out


def whole_run(run_root: Path) -> Summary:
    """Policy statistics, fault costs, seconds and calls in flight over every process of the run."""
    parts = read_all(run_root)
    seconds = sum(float(p.get("seconds") or 0.0) for p in parts)
    busy = sum(float(p.get("busy_area") or 0.0) for p in parts)
    return {
        "policy_stats": merge_counts([p.get("policy_stats") for p in parts]),
        "faults": merge_counts([p.get("faults") for p in parts])
        or {"retries": 0, "seconds_lost": 0.0, "failed_calls": 0},
        "run_seconds": round(seconds, 3),
        "calls_in_flight_avg": round(busy / seconds, 2) if seconds > 0 else None,
        "processes": len(parts),
    }
