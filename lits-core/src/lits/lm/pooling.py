"""Per-step scores from a classifier process reward model behind vLLM's Pooling API.

A classifier PRM (Qwen2.5-Math-PRM, Math-Shepherd) is served as a pooling model, not a chat
model: it generates nothing, and gives each step-separator token of its input a probability per
label.  The shapes below follow vLLM's documentation in github.com/vllm-project/vllm,
``docs/models/pooling_models/README.md`` ("Pooling API", commit 08eded4c) and ``reward.md``
("Process Reward Models": ``token_classify``, STEP pooling, commit 063da229), with the fields of
``vllm/entrypoints/pooling/pooling/protocol.py`` (PoolingCompletionRequest, PoolingChatRequest,
PoolingResponse; commit 01cfbaf6) and ``vllm/entrypoints/pooling/base/protocol.py`` (commit
020638a6): the main branch as read in November 2026, the API of v0.11 on, where
``task: "token_classify"`` replaced ``"encode"``::

    POST {server root}/pooling        (served at the root, not under /v1)
    {"model": str,
     "messages": [{"role": str, "content": str}, ...]  -- chat form: the server applies the
                                                          model's chat template, or
     "input": str | [str, ...],                        -- text form, as given
     "task": "token_classify"}                         -- optional; older servers take none
    -> {"id": str, "object": "list", "created": int, "model": str,
        "data": [{"index": 0, "object": "pooling",
                  "data": [[p_label_0, p_label_1], ...]}],   -- one row per step separator
        "usage": {"prompt_tokens": int, "total_tokens": int, ...}}

With STEP pooling (Qwen2.5-Math-PRM's default; ``--pooler-config '{"pooling_type": "STEP",
"step_tag_id": ..., "returned_token_ids": [...]}'`` for others) each row is the softmax over the
classifier's labels at one separator; the step's score is the positive label's probability.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from lits.lm.base import Prompt

#: The endpoint, relative to the server's root.
POOLING_ENDPOINT = "/pooling"


def server_root(base_url: str) -> str:
    """The server's root: the base URL without a trailing ``/v1`` (the Pooling API is not under it)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def pooled_prompt(body: Mapping[str, object]) -> Prompt:
    """A pooling request's input as the inference log keeps a prompt (``--log-prompts``)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        return [{"role": str(m.get("role")), "content": str(m.get("content"))} for m in messages if isinstance(m, dict)]
    return str(body.get("input", ""))


def pooling_fault(data: dict[str, Any]) -> str | None:
    """Why a 200 Pooling API reply holds nothing to read (worth another attempt), or None when it does."""
    items = data.get("data")
    if not isinstance(items, list) or not items:
        return "no pooling data"
    if not all(isinstance(item, dict) and isinstance(item.get("data"), list) for item in items):
        return "pooling data items without a data list"
    return None


def step_probabilities(reply: dict[str, Any], steps: int, positive: int) -> list[float]:
    """The positive label's probability at each of the ``steps`` separators of the first input.

    Raises ValueError (one line, saying what the reply held) when it does not hold one row of
    label probabilities per step: a server without STEP pooling returns one row per token.
    """
    items = sorted(reply.get("data") or [], key=lambda item: int(item.get("index", 0)))
    rows = items[0].get("data") if items and isinstance(items[0], dict) else None
    if isinstance(rows, list) and rows and all(isinstance(x, (int, float)) for x in rows):
        rows = [rows]  # one separator, pooled to one flat row
    if not isinstance(rows, list) or len(rows) != steps:
        found = len(rows) if isinstance(rows, list) else "no"
        raise ValueError(
            f"returned {found} score rows for {steps} steps; serve the PRM with STEP pooling "
            "(--pooler-config with its step_tag_id) and give the separator it was trained with"
        )
    scores = []
    for row in rows:
        if (
            not isinstance(row, list)
            or len(row) <= positive
            or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in row)
        ):
            raise ValueError(f"returned a score row {str(row)[:60]} without a finite probability for label {positive}")
        p = float(row[positive])
        if not 0.0 <= p <= 1.0:
            raise ValueError(
                f"returned {p:g} for label {positive}, not a probability; the pooler must apply "
                "its softmax (leave use_activation unset)"
            )
        scores.append(p)
    return scores
