"""docs/models.md's Bedrock example runs as written: the paper's BlocksWorld command through the hosted backend
against a loopback Converse server, at the size the page gives its expected cost for, records the calls,
requests, tokens and cost the page states."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.doc_commands import DOCS, page_commands
from tests.hosted.fake_hosted import FakeHostedServer
from tests.hosted.test_hosted_runs import first_listed_action, records

SECTION = "Claude on AWS Bedrock or Anthropic's API (the paper's setting)"
#: The least prompt prefix Claude 3.5 Sonnet caches, in tokens (Anthropic's prompt-caching docs).
CLAUDE_CACHE_MINIMUM = 1024
#: The page's expected-cost sentence: the run's size, then its figures per instance.
FIGURES = re.compile(
    r"run above with `(?P<size>[^`]+)`.*?(?P<calls>\d+) calls \((?P<requests>\d+) requests.*?with "
    r"(?P<tokens_in>[\d,]+) prompt and (?P<tokens_out>[\d,]+) reply tokens per instance.*?"
    r"\*\*\$(?P<cost>[\d.]+) per instance\*\* \(policy \$(?P<policy>[\d.]+), reward \$(?P<reward>[\d.]+)\)",
    flags=re.S,
)


def page_figures() -> dict[str, str]:
    found = FIGURES.search((DOCS / "models.md").read_text(encoding="utf-8"))
    assert found, "docs/models.md no longer states the expected cost per instance as this test reads it"
    return {key: value.replace(",", "") for key, value in found.groupdict().items()}


def test_the_papers_blocksworld_command_on_bedrock_costs_what_the_page_says(
    lits_hosted_cmd: Callable[..., Any], shared_data: Path, tmp_path: Path
) -> None:
    page = page_figures()
    command = page_commands("models.md", SECTION)[0][0]
    args = shlex.split(command.replace("../shared/data", str(shared_data)))
    assert args[:2] == ["lits", "search"] and "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0" in args
    with FakeHostedServer(first_listed_action, cache_min_tokens=CLAUDE_CACHE_MINIMUM) as server:
        result = lits_hosted_cmd(*args[1:], "--base-url", server.base_url, *shlex.split(page["size"]))
    assert result.returncode == 0, result.stderr
    assert all(path.endswith("/converse") for path in server.paths)
    run = tmp_path / "runs" / "bw-claude"
    instances = len(list((run / "results").glob("*.json")))
    calls = [r for r in records(run) if not r["cached"]]
    # BlocksWorld's stable head is under the cache minimum: nothing is written to the cache or read from it.
    assert {(r["tokens_cached"], r["tokens_cache_write"]) for r in calls} == {(0, 0)}
    tokens_in, tokens_out = sum(r["tokens_in"] for r in calls), sum(r["tokens_out"] for r in calls)
    by_component: dict[str, float] = {}
    for r in calls:
        by_component[r["context"]["component"]] = by_component.get(r["context"]["component"], 0.0) + r["cost"]
    cost = json.loads((run / "eval_results.json").read_text())["inference"]["cost"]
    measured = {
        "calls": round(len(calls) / instances),
        "requests": round(len(server.bodies) / instances),
        "tokens_in": round(tokens_in / instances),
        "tokens_out": round(tokens_out / instances),
        "cost": round(cost / instances, 2),
        "policy": round(by_component["policy"] / instances, 2),
        "reward": round(by_component["reward"] / instances, 2),
    }
    assert measured == {key: float(value) for key, value in page.items() if key != "size"}
    # the page's formula: $3 / $15 per 1M tokens
    assert cost == pytest.approx((tokens_in * 3 + tokens_out * 15) / 1e6, abs=1e-6)
