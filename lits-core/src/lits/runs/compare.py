"""One comparable table across finished runs: accuracy, tokens, calls and time per method."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, TypedDict

from lits import layout
from lits.runs.spend import spend

COLUMNS = ("method", "dataset", "model", "instances", "accuracy", "tokens_in", "tokens_out", "calls",
           "cached", "seconds", "requests", "tokens_cached", "cached_share", "evaluated_prompt_tokens_per_solved",
           "model_seconds_per_solved")


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
    #: What the servers did (:mod:`lits.runs.spend`): requests, prompt tokens served from their cache (None:
    #: not reported), and the evaluated prompt tokens and model seconds per solved instance (None: none solved).
    requests: int
    tokens_cached: int | None
    cached_share: float | None
    evaluated_prompt_tokens_per_solved: float | None
    model_seconds_per_solved: float | None


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
        rows.append({
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
        })
    return rows


def format_rows(rows: list[CompareRow], *, markdown: bool = False) -> str:
    header = ["method", "dataset", "model", "n", "accuracy", "tokens in", "tokens out", "calls", "seconds",
              "requests", "cached prompt", "eval. prompt / solved", "model s / solved"]
    body = [[str(r["method"]), str(r["dataset"]), str(r["model"]), str(r["instances"]), f"{r['accuracy']:.1%}",
             str(r["tokens_in"]), str(r["tokens_out"]),
             f"{r['calls']}" + (f" (+{r['cached']} cached)" if r["cached"] else ""), f"{r['seconds']:.1f}",
             str(r["requests"]), "-" if r["cached_share"] is None else f"{r['cached_share']:.1%}",
             _per_solved(r["evaluated_prompt_tokens_per_solved"], ".0f"),
             _per_solved(r["model_seconds_per_solved"], ".2f")]
            for r in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *body])


def _per_solved(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)
