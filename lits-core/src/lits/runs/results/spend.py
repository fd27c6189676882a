"""What a run's solved instances cost in the units a server works in.

A server reads every prompt token it does not find in its prefix cache and
generates every reply token; waiting for a slot costs the server nothing.  So
the figures that compare methods are the prompt tokens the server evaluated
(sent minus served from its cache) and the model seconds (not the wait), each
per solved instance.  Built from the inference totals
(:meth:`lits.runtime.observability.InferenceLog.summary`), so a run summarized before
these figures existed gets them too (``lits compare``).
"""

from __future__ import annotations

from typing import Mapping, NotRequired, TypedDict


class Spend(TypedDict):
    """``eval_results.json``'s ``spend``; a figure the servers did not report is None."""

    calls: int
    #: Requests sent to servers for those calls (a sample on a one-slot server, a retry: one each).
    requests: int
    prompt_tokens: int
    #: Of ``prompt_tokens``, those the servers served from their prefix cache (None: no server said).
    cached_prompt_tokens: int | None
    cached_share: float | None
    #: ``prompt_tokens`` the servers had to read: those not served from cache (all, where none said).
    evaluated_prompt_tokens: int
    generated_tokens: int
    #: Seconds the calls took once they had a slot (the wait for one is ``queued_seconds``).
    model_seconds: float
    queued_seconds: float
    #: Seconds the servers say they worked (llama.cpp's ``timings``; None: no server said).
    server_seconds: float | None
    solved: int
    evaluated_prompt_tokens_per_solved: float | None
    model_seconds_per_solved: float | None


def spend(inference: Mapping[str, float], solved: int) -> Spend:
    """The figures of a run (or an instance) from its inference totals and how many instances it solved."""
    prompt = int(inference.get("tokens_in") or 0)
    cached_total = inference.get("tokens_cached")
    cached = None if cached_total is None else int(cached_total)
    evaluated = prompt - (cached or 0)
    seconds = float(inference.get("seconds") or 0.0)
    server = inference.get("server_seconds")
    calls = int(inference.get("calls") or 0)
    return {
        "calls": calls,
        "requests": int(inference.get("requests", calls) or 0),  # a summary from before requests were counted
        "prompt_tokens": prompt,
        "cached_prompt_tokens": cached,
        "cached_share": round(cached / prompt, 4) if cached is not None and prompt else None,
        "evaluated_prompt_tokens": evaluated,
        "generated_tokens": int(inference.get("tokens_out") or 0),
        "model_seconds": round(seconds, 3),
        "queued_seconds": round(float(inference.get("queued_seconds") or 0.0), 3),
        "server_seconds": None if server is None else round(float(server), 3),
        "solved": solved,
        "evaluated_prompt_tokens_per_solved": round(evaluated / solved, 1) if solved else None,
        "model_seconds_per_solved": round(seconds / solved, 3) if solved else None,
    }


def spend_rows(figures: Spend, slot_wait_shown: float = 0.0) -> list[tuple[str, object]]:
    """The console summary's lines for ``figures`` (``lits search``, ``eval.log``); the wait for a slot only
    where it is more than the ``slot_wait_shown`` on the line of the server's own slots."""
    rows: list[tuple[str, object]] = [("server requests", f"{figures['requests']} for {figures['calls']} calls")]
    cached = figures["cached_prompt_tokens"]
    if cached is None:
        rows.append(("prompt tokens", f"{figures['prompt_tokens']} (no server reported its cache)"))
    else:
        rows.append(
            (
                "prompt tokens",
                f"{figures['prompt_tokens']} ({cached} from the server's cache, "
                f"{figures['cached_share'] or 0.0:.1%}; {figures['evaluated_prompt_tokens']} "
                "evaluated)",
            )
        )
    per_solved = figures["evaluated_prompt_tokens_per_solved"]
    rows.append(("evaluated prompt tokens / solved", "- (none solved)" if per_solved is None else f"{per_solved:.0f}"))
    seconds = figures["model_seconds_per_solved"]
    rows.append(("model seconds / solved", "- (none solved)" if seconds is None else f"{seconds:.2f}"))
    if figures["queued_seconds"] - slot_wait_shown >= 0.05:
        rows.append(("queued for a slot", f"{figures['queued_seconds']:.1f}s (not in model seconds)"))
    if figures["server_seconds"] is not None:
        rows.append(("server seconds", f"{figures['server_seconds']:.1f} (as the servers report)"))
    return rows


class BudgetReport(TypedDict):
    """``eval_results.json``'s ``budget``: what the run was given and how it spent it."""

    unit: str
    total: float
    spent: float
    #: Self-consistency: chains drawn, and how many instances drew each count (e.g. {"1": 3, "16": 2}).
    chains: NotRequired[int]
    chains_per_instance: NotRequired[dict[str, int]]
    #: A search: iterations (BFS: depths) run, and how many instances ran each count.
    iterations: NotRequired[int]
    iterations_per_instance: NotRequired[dict[str, int]]
    #: Instances settled below ``k`` chains or the search's own limit (stopped early; their unspent share went
    #: to others).
    settled_early: int
    #: Instances still unsettled below that when the budget ran out (those with none have no result).
    cut_by_budget: int


def format_budget(report: BudgetReport) -> list[tuple[str, object]]:
    """The console summary's lines for the budget."""
    unit = report["unit"]
    shown = f"{report['spent']:g} of {report['total']:g} {'model seconds' if unit == 'seconds' else unit}"
    if "chains" in report:  # self-consistency's chains, else a search's iterations
        what, drawn, count, per = "chains", "drawn", report["chains"], report.get("chains_per_instance") or {}
    else:
        what, drawn = "iterations", "run"
        count, per = report.get("iterations", 0), report.get("iterations_per_instance") or {}
    spread = ", ".join(f"{n} {what}: {many}" for n, many in per.items())
    return [
        ("budget spent", shown),
        (
            f"{what} {drawn}",
            f"{count} ({spread}); {report['settled_early']} settled early, {report['cut_by_budget']} cut by the budget",
        ),
    ]
