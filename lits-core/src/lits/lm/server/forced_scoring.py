"""Log-likelihood by forced decoding, for servers that score only what they generate.

Upstream llama.cpp ``llama-server`` refuses ``echo`` ("Only no echo is
supported"), so it cannot return a prompt's log-probabilities.  It does report,
with ``logprobs`` (its ``n_probs``), each *generated* token's log-probability
under the model before sampling, grammar included.  So a continuation is scored
by generating it under a grammar that admits exactly that text, at temperature
0: the sum of the reported log-probabilities is the continuation's
log-likelihood given the prompt.  The prompt is read once and then served from
the slot's prompt cache for the next continuation.  (The continuation's tokens
are those greedy decoding picks under the grammar, which can split the text
otherwise than the tokenizer would: a close reading, not the echo's exact one.)
"""

from __future__ import annotations

from typing import Any, Mapping

from lits.lm.server.constraints import gbnf


def forced_body(model: str, prompt: str, continuation: str) -> dict[str, object]:
    """A ``/completions`` request that generates exactly ``continuation`` after ``prompt``, with its log-probs."""
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": len(continuation.encode("utf-8")) + 1,
        "temperature": 0.0,
        "logprobs": 1,
        "grammar": gbnf(((continuation,),)),
        "cache_prompt": True,
    }


def forced_logprob(data: Mapping[str, Any], continuation: str) -> float | None:
    """The summed log-probability of the generated tokens that spell ``continuation``, or None when they do not.

    Tokens past it are left out: the server also reports the end-of-generation token the grammar forced
    last.  Read from llama-server's ``content`` list (each token's ``bytes``, so a character split over two
    tokens still adds up) or from the older completions shape (``tokens`` and ``token_logprobs``)."""
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    raw = choice.get("logprobs")
    if not isinstance(raw, dict):
        return None
    content = raw.get("content")
    if isinstance(content, list):
        pieces = [(_piece(t), t.get("logprob")) for t in content if isinstance(t, dict)]
    else:
        tokens, listed = raw.get("tokens"), raw.get("token_logprobs")
        if not isinstance(tokens, list) or not isinstance(listed, list):
            return None
        pieces = [(str(t).encode("utf-8"), lp) for t, lp in zip(tokens, listed)]
    target, spelled, total = continuation.encode("utf-8"), b"", 0.0
    for piece, logprob in pieces:
        if not isinstance(logprob, (int, float)) or isinstance(logprob, bool):
            return None
        spelled += piece
        total += float(logprob)
        if spelled == target:
            return total
        if not target.startswith(spelled):
            return None
    return None


def _piece(token: Mapping[str, Any]) -> bytes:
    raw = token.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    return str(token.get("token", "")).encode("utf-8")
