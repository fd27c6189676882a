"""A run's spend in the units servers bill: evaluated prompt tokens and model seconds per solved instance."""

from __future__ import annotations

from typing import Any

from lits.runs.results.evaluation import format_table
from lits.runs.results.spend import spend

#: An ``eval_results.json`` written before requests and cached tokens were counted.
OLD_SUMMARY: dict[str, Any] = {
    "instances": 5,
    "solved": 4,
    "accuracy": 0.8,
    "mean_progress": 0.9,
    "optimal_plans": 3,
    "seconds_per_instance": 2.0,
    "metrics": {},
    "inference": {"calls": 70, "cache_hits": 0, "tokens_in": 1000, "tokens_out": 50, "seconds": 12.0, "cost": 0.0},
}


def test_evaluated_prompt_tokens_are_those_the_server_did_not_serve_from_its_cache():
    figures = spend(
        {
            "calls": 3,
            "requests": 5,
            "tokens_in": 1000,
            "tokens_cached": 600,
            "tokens_out": 9,
            "seconds": 3.0,
            "queued_seconds": 1.5,
        },
        solved=2,
    )
    assert figures["evaluated_prompt_tokens"] == 400 and figures["cached_share"] == 0.6
    assert figures["evaluated_prompt_tokens_per_solved"] == 200 and figures["model_seconds_per_solved"] == 1.5
    assert figures["requests"] == 5 and figures["queued_seconds"] == 1.5


def test_a_run_that_solved_nothing_has_no_per_solved_figure():
    figures = spend({"calls": 1, "tokens_in": 10, "seconds": 1.0}, solved=0)
    assert figures["evaluated_prompt_tokens_per_solved"] is None and figures["model_seconds_per_solved"] is None


def test_an_older_summary_still_prints_its_spend_with_the_cache_unreported():
    rows = _rows(OLD_SUMMARY)
    assert rows["server requests"] == "70 for 70 calls"
    assert rows["prompt tokens"] == "1000 (no server reported its cache)"
    assert rows["evaluated prompt tokens / solved"] == "250" and rows["model seconds / solved"] == "3.00"


def test_the_wait_for_a_slot_is_a_line_of_its_own_unless_the_server_slot_line_shows_it():
    summary = {**OLD_SUMMARY, "inference": {**OLD_SUMMARY["inference"], "queued_seconds": 12.2}}
    assert _rows(summary)["queued for a slot"] == "12.2s (not in model seconds)"
    gated = {**summary, "faults": {"retries": 0, "queued_calls": 232, "queued_seconds": 12.2}}
    table = format_table(gated)
    assert "queued for a slot" not in table and "232 calls, 12.2s" in table


def _rows(summary: dict[str, Any]) -> dict[str, str]:
    """The console table's lines by name."""
    return {k.strip(): v.strip() for k, v in (line.split("  ", 1) for line in format_table(summary).splitlines())}
