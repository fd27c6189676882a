"""The viewer's data: everything the page shows, built from a run directory alone.

Finished and still-running runs are read the same way: finished instances
from ``results/``, unfinished ones from their journal (search) or checkpoint
(chain), calls from ``inference.jsonl``.  Nothing in the run is written or
locked, so ``lits view`` can watch a run that is under way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, cast

from lits.io import layout
from lits.components import parsing
from lits.runs.results.evaluation import parse_totals
from lits.runs.results.spend import spend
from lits.view.calls import (
    CALL_FIELDS,
    CallRecord,
    attribute_calls,
    call_row,
    calls_by_instance,
    cost_pictures,
    read_calls,
    totals,
)
from lits.runs.results.tree import InstanceTree, instance_tree, read_json

if TYPE_CHECKING:
    from lits.runs.record import RunRecord

#: Characters of a query shown in the instance table.
QUERY_CHARS = 160


class NotARunError(ValueError):
    """The directory is not a LiTS run (no readable config.json)."""


def run_config(root: Path) -> RunRecord:
    """The run's record (:class:`NotARunError` in one line for a missing, newer or bad config.json)."""
    from lits.runs.record import RunRecord
    from lits.runs.spec import SpecError

    if not root.is_dir():
        raise NotARunError(f"{root} is not a directory")
    config = read_json(root / layout.CONFIG)
    if not isinstance(config, dict):
        raise NotARunError(f"{root} is not a LiTS run (no readable config.json)")
    newer = layout.newer_format(config)
    if newer is not None:
        raise NotARunError(f"{root}: {newer}")
    try:
        return RunRecord.read(config)
    except SpecError as exc:
        raise NotARunError(f"{root / layout.CONFIG}: {exc}") from None


def instance_ids(root: Path) -> list[int]:
    """Instances with a result, a journal or a chain checkpoint, in order."""
    found: set[int] = set()
    for folder, suffix in (
        (layout.RESULTS, ".json"),
        (layout.CHECKPOINTS, ".journal.jsonl"),
        (layout.CHECKPOINTS, ".json"),
    ):
        for path in (root / folder).glob(f"*{suffix}") if (root / folder).is_dir() else []:
            stem = path.name[: -len(suffix)]
            if stem.isdigit():
                found.add(int(stem))
    return sorted(found)


def build_report(root: Path) -> dict[str, Any]:
    """The whole page's data for the run at ``root`` (raises NotARunError for anything else)."""
    from lits.runs.results.compare import method_label

    root = Path(root)
    config = run_config(root)
    command = config.command
    recorded = config.as_config()
    calls = read_calls(root / layout.INFERENCE_LOG)
    per_instance = calls_by_instance(calls)
    timings = {i: read_json(root / layout.timing(i)) or {} for i in instance_ids(root)}
    instances, trees = [], {}
    done_ids: list[int] = []
    for idx in instance_ids(root):
        result = read_json(root / layout.result(idx))
        result = result if isinstance(result, dict) and "final_state" in result else None
        if result is not None:
            done_ids.append(idx)
        tree = instance_tree(root, idx, command, config, result)
        mine = per_instance.get(idx, [])
        instances.append(instance_row(idx, result, tree, mine, timings.get(idx) or {}))
        if tree is not None:
            by_node = attribute_calls(tree, mine)
            trees[str(idx)] = {
                **tree,
                "calls": [call_row(c) for c in mine],
                "node_calls": {str(k): v for k, v in by_node.items()},
                "costs": cost_pictures(mine),
            }
    summary = read_json(root / layout.SUMMARY)
    finished = [r for r in instances if r["status"] == "finished"]
    return {
        "run": {
            "dir": str(root.resolve()),
            "name": root.resolve().name,
            "command": command,
            "method": method_label(recorded),
            "dataset": config.dataset,
            "model": config.model or "local",
            "models": models_line(config),
            "config": recorded,
            "summary": summary if isinstance(summary, dict) else None,
            "finished": len(finished),
            "running": len(instances) - len(finished),
            "solved": sum(1 for r in finished if r["solved"]),
            "inference": totals(calls),
            "spend": spend(cast(Mapping[str, float], totals(calls)), sum(1 for r in finished if r["solved"])),
            "invalid_replies": parsing.describe(parse_totals({i: timings.get(i) or {} for i in done_ids})),
        },
        "instances": instances,
        "trees": trees,
        "costs": cost_pictures(calls),
        "call_fields": list(CALL_FIELDS),
    }


def instance_row(
    idx: int, result: dict[str, Any] | None, tree: InstanceTree | None, calls: list[CallRecord], timing: dict[str, Any]
) -> dict[str, Any]:
    """One line of the instance table."""
    evaluation = (result or {}).get("eval") or {}
    query = (result or {}).get("query")
    if query is None and tree is None:
        query = ""
    spent = totals(calls)
    return {
        "idx": idx,
        "id": (result or {}).get("id"),
        "query": _short(query if isinstance(query, str) else json.dumps(query, default=str)),
        "status": "finished" if result else "running",
        "solved": bool(evaluation.get("solved")) if result else None,
        "answer": evaluation.get("answer"),
        "stopped": (result or {}).get("stopped"),
        "iterations": _iterations(result, tree),
        "nodes": len(tree["nodes"]) if tree else 0,
        "calls": spent["calls"],
        "tokens": spent["tokens_in"] + spent["tokens_out"],
        "seconds": timing.get("seconds"),
        "has_tree": tree is not None,
        "invalid_replies": _invalid(timing),
    }


def _invalid(timing: dict[str, Any]) -> str | None:
    """``"17/142"``: the instance's unparseable replies of all it parsed (None when it parsed none)."""
    counts = parsing.total(timing.get("parse") or {})
    return f"{counts['unparseable']}/{counts['replies']}" if counts["replies"] else None


def _iterations(result: dict[str, Any] | None, tree: InstanceTree | None) -> int | None:
    """The search's iterations, or a chain's steps (a chain's result has no iteration count)."""
    if result and result.get("iterations") is not None:
        return int(result["iterations"])
    return int(tree["iterations"]) if tree else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUERY_CHARS else text[: QUERY_CHARS - 1] + "…"


def models_line(config: RunRecord) -> str | None:
    """``policy=A eval=B@URL transition=A`` when a component has its own model or server, else None."""
    from lits.runs.model_specs import describe_models, uses_own_models

    return describe_models(config) if uses_own_models(config) else None
