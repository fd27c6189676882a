"""One comparable table across finished runs: accuracy, tokens, calls and time per method, and each run
against the first, instance by instance (:mod:`lits.runs.results.paired`).  A replay (``--replay-from``) says
so: its replayed and paid calls, and the run it replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, NotRequired, TypedDict

from lits.io import layout
from lits.runs.results.paired import PairedComparison, compare_paired, describe
from lits.runs.results.spend import spend

COLUMNS = (
    "method",
    "dataset",
    "model",
    "instances",
    "accuracy",
    "tokens_in",
    "tokens_out",
    "calls",
    "cached",
    "seconds",
    "requests",
    "tokens_cached",
    "cached_share",
    "evaluated_prompt_tokens_per_solved",
    "model_seconds_per_solved",
)


class CompareRow(TypedDict):
    """One run in ``lits compare``: its method, data and model, accuracy and what it spent."""

    method: str
    dataset: object
    model: object
    instances: int
    accuracy: float
    tokens_in: int
    tokens_out: int
    calls: int
    cached: int
    seconds: float
    cost: float
    save_dir: str
    #: This run against the first one given, over the instances both finished (not in the first row).
    paired_with_first: NotRequired[PairedComparison]
    #: What the servers did (:mod:`lits.runs.results.spend`): requests, prompt tokens served from their cache (None:
    #: not reported), and the evaluated prompt tokens and model seconds per solved instance (None: none solved).
    requests: int
    tokens_cached: int | None
    cached_share: float | None
    evaluated_prompt_tokens_per_solved: float | None
    model_seconds_per_solved: float | None
    #: A replay's source run and its calls answered from it and paid for (None: not a replay).
    replay: ReplaySource | None


class ReplaySource(TypedDict):
    """What a replayed run took from the run it replayed (``config.json``'s ``replay_from``)."""

    #: The recorded run's folder, as the replay's ``config.json`` records it (absolute).
    source: str
    replayed: int
    paid: int


def method_label(config: Mapping[str, object]) -> str:
    """What a reader calls the method: the chain, or the framework/search pair."""
    if config.get("command") == "chain":
        return f"{config.get('chain') or 'chain'} (chain)"
    framework, search = config.get("search_framework"), str(config.get("search") or "mcts")
    return f"{framework} ({search})" if framework else search


def compare_rows(save_dirs: list[Path]) -> list[CompareRow]:
    rows: list[CompareRow] = []
    for root in save_dirs:
        try:
            config = json.loads((root / layout.CONFIG).read_text(encoding="utf-8"))
            summary = json.loads((root / layout.SUMMARY).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ValueError(f"{root} is not a finished run ({Path(str(exc.filename)).name} is missing)") from None
        except ValueError as exc:
            raise ValueError(f"{root}: unreadable run file ({exc})") from None
        inference = summary.get("inference") or {}
        figures = spend(inference, int(summary.get("solved") or 0))
        rows.append(
            {
                "method": method_label(config),
                "dataset": config.get("dataset"),
                "model": config.get("model") or "local",
                "instances": summary.get("instances", 0),
                "accuracy": summary.get("accuracy", 0.0),
                "tokens_in": inference.get("tokens_in", 0),
                "tokens_out": inference.get("tokens_out", 0),
                "calls": inference.get("calls", 0),
                "cached": inference.get("cache_hits", 0),
                "seconds": round(summary.get("seconds_per_instance", 0.0) * summary.get("instances", 0), 1),
                "cost": inference.get("cost", 0.0),
                "save_dir": str(root),
                "requests": figures["requests"],
                "tokens_cached": figures["cached_prompt_tokens"],
                "cached_share": figures["cached_share"],
                "evaluated_prompt_tokens_per_solved": figures["evaluated_prompt_tokens_per_solved"],
                "model_seconds_per_solved": figures["model_seconds_per_solved"],
                "replay": _replay_of(config, inference),
            }
        )
    _tell_apart(rows, save_dirs)
    outcomes = [_solved_by_instance(root) for root in save_dirs]
    for row, solved in zip(rows[1:], outcomes[1:]):
        row["paired_with_first"] = compare_paired(outcomes[0], solved)
    return rows


def _tell_apart(rows: list[CompareRow], save_dirs: list[Path]) -> None:
    """Rows of one method (two rounds of a sweep, a replay beside its source) are named by their folder too,
    so a table or a paired line never reads ``tot_bfs (bfs) - tot_bfs (bfs)``."""
    labels = [row["method"] for row in rows]
    for row, root in zip(rows, save_dirs):
        if labels.count(row["method"]) > 1:
            row["method"] = f"{row['method']} [{root.name if _unique_names(save_dirs) else root}]"


def _unique_names(save_dirs: list[Path]) -> bool:
    return len({root.name for root in save_dirs}) == len(save_dirs)


def _replay_of(config: Mapping[str, object], inference: Mapping[str, float]) -> ReplaySource | None:
    """The run it replayed, and its calls answered from the recorded replies (the inference log's cached calls)
    and paid, as its summary's ``replay`` counts them (:func:`lits.runs.sweeps.replay.replay_counts`)."""
    if not config.get("replay_from"):
        return None
    replayed, paid = int(inference.get("cache_hits", 0)), int(inference.get("calls", 0))
    return {"source": str(config["replay_from"]), "replayed": replayed, "paid": paid}


def replay_lines(rows: list[CompareRow]) -> list[str]:
    """One line per replay: the run it replayed (and whether that run is in the table), and what it paid."""
    compared = {str(Path(r["save_dir"]).expanduser().absolute()): n for n, r in enumerate(rows, 1)}
    lines = []
    for n, row in enumerate(rows, 1):
        replay = row["replay"]
        if replay is None:
            continue
        here = compared.get(str(Path(replay["source"]).expanduser().absolute()))
        calls = replay["replayed"] + replay["paid"]
        lines.append(
            f"run {n} ({row['save_dir']}) replays {'run ' + str(here) if here else replay['source']}: "
            f"{replay['replayed']} of its {calls} calls answered from the recorded replies, {replay['paid']} paid"
            + (" (the two share their samples: the paired interval compares the settings on them)" if here else "")
        )
    return lines


def _solved_by_instance(root: Path) -> dict[object, bool]:
    """Whether each finished instance was solved, keyed by (dataset, instance id)."""
    config = json.loads((root / layout.CONFIG).read_text(encoding="utf-8"))
    out: dict[object, bool] = {}
    for path in sorted((root / layout.RESULTS).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            raise ValueError(f"{path}: unreadable result record; run `lits eval --save-dir {root}`") from None
        if isinstance(record, dict):
            solved = bool((record.get("eval") or {}).get("solved"))
            out[(config.get("dataset"), str(record.get("id", record.get("idx"))))] = solved
    return out


def paired_lines(rows: list[CompareRow]) -> list[str]:
    """Each run after the first against the first, one line each."""
    return [
        describe(str(rows[0]["method"]), str(row["method"]), row["paired_with_first"])
        for row in rows[1:]
        if "paired_with_first" in row
    ]


def format_rows(rows: list[CompareRow], *, markdown: bool = False) -> str:
    header = [
        "method",
        "dataset",
        "model",
        "n",
        "accuracy",
        "tokens in",
        "tokens out",
        "calls",
        "seconds",
        "requests",
        "cached prompt",
        "eval. prompt / solved",
        "model s / solved",
    ]
    body = [
        [
            str(r["method"]),
            str(r["dataset"]),
            str(r["model"]),
            str(r["instances"]),
            f"{r['accuracy']:.1%}",
            str(r["tokens_in"]),
            str(r["tokens_out"]),
            f"{r['calls']}" + (f" (+{r['cached']} cached)" if r["cached"] else ""),
            f"{r['seconds']:.1f}",
            str(r["requests"]),
            "-" if r["cached_share"] is None else f"{r['cached_share']:.1%}",
            _per_solved(r["evaluated_prompt_tokens_per_solved"], ".0f"),
            _per_solved(r["model_seconds_per_solved"], ".2f"),
        ]
        for r in rows
    ]
    if any(r["replay"] for r in rows):  # replays (--replay-from): what they took from the run they replayed
        header.append("replayed / paid")
        for row, r in zip(body, rows):
            replay = r["replay"]
            row.append("-" if replay is None else f"{replay['replayed']} / {replay['paid']}")
    if any(r["cost"] for r in rows):  # priced runs (hosted models, --price-in): cost as the paper's tables give it
        header.append("cost / instance")
        for row, r in zip(body, rows):
            row.append(f"{r['cost'] / r['instances']:.4f}" if r["instances"] else "-")
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *body])


def _per_solved(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)
