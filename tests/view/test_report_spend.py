"""The run page's spend: requests, cached prompt tokens and the per-solved figures, as the summary has them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def test_the_run_page_shows_the_summarys_per_solved_figures(
    runs: dict[str, Path], reports: dict[str, dict[str, Any]]
) -> None:
    summary = json.loads((runs["blocksworld-mcts"] / "eval_results.json").read_text())
    shown = reports["blocksworld-mcts"]["run"]["spend"]
    assert shown == summary["spend"]
    assert shown["requests"] == summary["inference"]["calls"] and shown["cached_share"] is None  # not reported
