"""Evaluate finished instances; works again later from the save dir alone."""

from __future__ import annotations

from typing import Any, Optional

from lits.observability import InferenceLog
from lits.type_registry import deserialize


def evaluate_env_instance(transition: Any, example: dict[str, Any], state: Any) -> dict[str, Any]:
    """Goal reached (checked by the domain), progress, plan length vs optimal."""
    reached, progress = transition.goal_check(example.get("query"), state.env_state)
    plan = [str(s.action) for s in state if s.action is not None and s.error is None]
    optimal = example.get("optimal_plan")
    optimal_len: Optional[int] = len(optimal) if optimal else example.get("n_steps")
    return {
        "solved": bool(reached),
        "progress": round(float(progress), 4),
        "plan": plan,
        "plan_length": len(plan),
        "optimal_length": optimal_len,
        "optimal": bool(reached) and optimal_len is not None and len(plan) <= optimal_len,
    }


def aggregate(results: dict[int, dict[str, Any]], log: InferenceLog) -> dict[str, Any]:
    """Run-level metrics from per-instance results and the inference log."""
    evals = [r["eval"] for r in results.values() if r.get("eval")]
    n = len(evals)
    solved = [e for e in evals if e["solved"]]
    summary: dict[str, Any] = {
        "instances": n,
        "solved": len(solved),
        "accuracy": round(len(solved) / n, 4) if n else 0.0,
        "mean_progress": round(sum(e["progress"] for e in evals) / n, 4) if n else 0.0,
        "mean_plan_length_solved": (
            round(sum(e["plan_length"] for e in solved) / len(solved), 2) if solved else None
        ),
        "optimal_plans": sum(1 for e in evals if e["optimal"]),
        "seconds_per_instance": (
            round(sum(r.get("seconds", 0.0) for r in results.values()) / n, 2) if n else 0.0
        ),
        "inference": log.summary(),
        "inference_by_component": log.by("component"),
    }
    return summary


def reevaluate(transition: Any, results: dict[int, dict[str, Any]], examples: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Recompute each result's ``eval`` from its saved final state."""
    out = {}
    for idx, result in results.items():
        state = deserialize(result["final_state"])
        example = examples.get(idx) or {"query": result.get("query"), **result.get("example", {})}
        out[idx] = {**result, "eval": evaluate_env_instance(transition, example, state)}
    return out


def format_table(summary: dict[str, Any]) -> str:
    inf = summary["inference"]
    rows = [
        ("instances", summary["instances"]),
        ("solved", f"{summary['solved']} ({summary['accuracy']:.1%})"),
        ("mean progress", summary["mean_progress"]),
        ("optimal plans", summary["optimal_plans"]),
        ("model calls", f"{inf['calls']} (+{inf['cache_hits']} cached)"),
        ("tokens in / out", f"{inf['tokens_in']} / {inf['tokens_out']}"),
        ("model seconds", inf["seconds"]),
        ("seconds / instance", summary["seconds_per_instance"]),
    ]
    if inf.get("cost"):
        rows.append(("cost", inf["cost"]))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
