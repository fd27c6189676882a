"""The dataset card (``README.md`` beside the exported data): where the rows came from and what they hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from lits.export.rows import Row, RowOptions
from lits.export.trees import RunTrees

COLUMNS = {
    "sft": "`prompt` (chat messages), `completion` (one assistant message), `steps`",
    "preference": "`prompt` (chat messages), `chosen`, `rejected` (one assistant message each), `margin`",
    "process": "`prompt`, `completions` (steps), `labels` (bool), `values` (Monte-Carlo value per step)",
    "process-openrlhf": "`input` (steps each followed by the placeholder), `label` (`+`/`-`), `value`",
}


def write_card(
    out: Path,
    runs: Sequence[RunTrees],
    tables: dict[str, tuple[list[Row], list[Row]]],
    options: RowOptions,
    source: str,
    notes: Sequence[str],
    fmt: str,
) -> Path:
    """``out/README.md``: source runs, models, settings, counts per kind, the label balance and the export's notes."""
    from lits.runs.results.compare import method_label
    from lits.runs.model_specs import describe_models

    lines = [
        "# LiTS export",
        "",
        "Training data written by `lits export` from search trees. LiTS trains "
        "nothing; see docs/training-data.md in LiTS for the commands that do.",
        "",
        "## Source runs",
        "",
        "| run | command | method | dataset | models | instances | solved | values from |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        solved = sum(t.solved for t in run.instances)
        sources = sorted({t.source for t in run.instances}) or ["-"]
        lines.append(
            f"| {run.root.name} | {run.command} | {method_label(run.config.as_config())} | "
            f"{run.config.dataset} | {describe_models(run.config)} | {len(run.instances)} | "
            f"{solved} | {', '.join(sources)} |"
        )
    lines += ["", "Settings of each run (its `config.json`):", ""]
    for run in runs:
        args = run.config.search_args or run.config.chain_args
        lines.append(f"- {run.root.name}: `{_settings(args)}`")
    lines += [
        "",
        "## Export settings",
        "",
        f"- format: {fmt}; Monte-Carlo values from: {source} (rollouts: backed-up paths through the node "
        "that end at a correct terminal; terminals: correct terminal nodes under it)",
        f"- min visits: {options.min_visits}; threshold: {options.threshold}; min margin: "
        f"{options.min_margin}; all solved paths: {options.all_solved}; worked examples in prompts: "
        f"{options.examples}; process style: {options.style}",
        "",
        "## Counts",
        "",
        "| kind | file | rows | held out | columns | label balance |",
        "|---|---|---|---|---|---|",
    ]
    for kind, (train, test) in tables.items():
        columns = COLUMNS["process-openrlhf" if kind == "process" and options.style == "openrlhf" else kind]
        lines.append(
            f"| {kind} | {kind}.{fmt} | {len(train)} | {len(test)} | {columns} | {balance(kind, train + test)} |"
        )
    if notes:
        lines += ["", "## Notes", "", *[f"- {note}" for note in notes]]
    target = out / "README.md"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def balance(kind: str, rows: list[Row]) -> str:
    """Process: the share of positive step labels; preference: the mean margin; SFT: rows per instance."""
    if not rows:
        return "-"
    if kind == "process":
        labels = [x == "+" if isinstance(x, str) else bool(x) for r in rows for x in (r.get("labels") or r["label"])]
        positive = sum(labels)
        return f"{positive} positive / {len(labels) - positive} negative steps"
    if kind == "preference":
        mean = sum(float(r["margin"]) for r in rows) / len(rows)
        return f"mean margin {mean:.3f}"
    return f"{len({r['instance_id'] for r in rows})} instances"


def _settings(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(args.items())) or "defaults"
