"""``lits export``: training data from finished runs (SFT, preference pairs, process labels) and its card.

Reads each run (:mod:`lits.export.trees`), builds each kind's rows (:mod:`lits.export.rows`), drops repeated
rows, splits off a hold-out by instance id, and writes ``{kind}.jsonl`` (and ``{kind}.holdout.jsonl``) or
Parquet, with a dataset card (``README.md``) beside them.  LiTS trains nothing: the files are what TRL and
OpenRLHF read (see docs/training-data.md).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from lits.errors import UserError
from lits.export.card import write_card
from lits.export.rows import BUILDERS, TRAINING_COLUMNS, Row, RowOptions
from lits.export.trees import RunTrees, ValueSource, read_run

KINDS = ("sft", "preference", "process")
FORMATS = ("jsonl", "parquet")


@dataclass
class ExportReport:
    """What was written: files, and per kind the rows kept for training and held out."""

    out: Path
    files: list[Path] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def export_runs(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    kinds: Sequence[str] = KINDS,
    fmt: str = "jsonl",
    options: RowOptions = RowOptions(),
    source: ValueSource = "auto",
    holdout_ids: set[str] | None = None,
    holdout_share: float = 0.0,
) -> ExportReport:
    """Write the ``kinds`` of training data from ``runs`` into ``out`` (:class:`UserError` on bad input)."""
    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    kinds = list(dict.fromkeys(kinds))  # a kind asked for twice is written once
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise UserError(f"--kind must be one of {', '.join(KINDS)}, not {unknown[0]!r}")
    if not 0.0 <= holdout_share < 1.0:
        raise UserError(f"--holdout-share must be at least 0 and below 1, not {holdout_share}")
    if not 0.0 <= options.threshold <= 1.0:
        raise UserError(f"--threshold must be between 0 and 1, not {options.threshold}")
    datasets = _datasets_module() if fmt == "parquet" else None
    read = [read_run(Path(r), source) for r in runs]
    report = ExportReport(Path(out))
    searches = [r for r in read if r.command != "chain"]
    if "preference" in kinds and not searches:
        if list(kinds) == ["preference"]:
            raise UserError(
                f"preference pairs need a search run (siblings at one state); {read[0].root} is a {read[0].command} run"
            )
    for run in read:
        if run.command == "chain" and "preference" in kinds:
            report.notes.append(f"{run.root} is a chain run: no preference pairs from it")
        if run.unfinished:
            report.notes.append(f"{run.root}: {run.unfinished} unfinished instance(s) left out")
    held = _holdout(read, holdout_ids, holdout_share)
    Path(out).mkdir(parents=True, exist_ok=True)
    tables: dict[str, tuple[list[Row], list[Row]]] = {}
    for kind in kinds:
        rows = _unique(
            kind,
            options,
            [
                row
                for run in read
                if not (kind == "preference" and run.command == "chain")
                for row in BUILDERS[kind](run, options)
            ],
        )
        train = [r for r in rows if r["instance_id"] not in held]
        test = [r for r in rows if r["instance_id"] in held]
        tables[kind] = (train, test)
        report.counts[kind] = {"rows": len(train), "holdout": len(test)}
        for part, name in ((train, kind), (test, f"{kind}.holdout")):
            if part or name == kind:
                report.files.append(_write(Path(out), name, part, fmt, datasets))
    for run in read:
        if run.fallback_prompts:
            report.notes.append(
                f"{run.root}: the policy could not render {run.fallback_prompts} prompt(s) "
                "offline; those rows' prompts are the problem and the steps so far"
            )
    report.files.append(write_card(Path(out), read, tables, options, source, report.notes, fmt))
    return report


def _datasets_module() -> Any:
    from lits.runtime.extras import require

    datasets = require("datasets", install="lits-core[export]", package="the datasets library", what="--format parquet")
    datasets.disable_progress_bars()  # a bar per file on stderr says nothing the summary does not
    return datasets


def _unique(kind: str, options: RowOptions, rows: list[Row]) -> list[Row]:
    """Rows whose training columns repeat an earlier row's are dropped (the first is kept)."""
    columns = TRAINING_COLUMNS["process-openrlhf" if kind == "process" and options.style == "openrlhf" else kind]
    seen: set[str] = set()
    out = []
    for row in rows:
        key = json.dumps([row[c] for c in columns], sort_keys=True, ensure_ascii=False)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def _holdout(runs: list[RunTrees], ids: set[str] | None, share: float) -> set[str]:
    """The instance ids held out: those listed, else a deterministic ``share`` of them (by a hash of the id,
    so the same instance is held out from every run and every export)."""
    if ids:
        return set(ids)
    if not share:
        return set()
    every = {tree.id for run in runs for tree in run.instances}
    return {i for i in every if _unit(i) < share}


def _unit(instance_id: str) -> float:
    digest = hashlib.sha256(instance_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def read_holdout_ids(path: Path) -> set[str]:
    """One instance id per line (blank lines and ``#`` comments skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"--holdout-ids: cannot read {path} ({exc.strerror or exc})") from None
    ids = {line.strip() for line in lines if line.strip() and not line.strip().startswith("#")}
    if not ids:
        raise UserError(f"--holdout-ids: {path} lists no instance id (one per line)")
    return ids


def _write(out: Path, name: str, rows: list[Row], fmt: str, datasets: Any) -> Path:
    if fmt == "parquet":
        target = out / f"{name}.parquet"
        datasets.Dataset.from_list(rows).to_parquet(str(target))
        return target
    target = out / f"{name}.jsonl"
    with open(target, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return target
