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

from typing import Any, Mapping, Optional

from lits.lm.constraints import gbnf


def forced_body(model: str, prompt: str, continuation: str) -> dict[str, object]:
    """A ``/completions`` request that generates exactly ``continuation`` after ``prompt``, with its log-probs."""
    return {"model": model, "prompt": prompt, "max_tokens": len(continuation.encode("utf-8")) + 1,
            "temperature": 0.0, "logprobs": 1, "grammar": gbnf(((continuation,),)), "cache_prompt": True}


def forced_logprob(data: Mapping[str, Any], continuation: str) -> Optional[float]:
    """The summed log-probability of the generated tokens, or None unless the reply spells ``continuation``
    with a log-probability for each token (llama-server's ``content`` list, or the older completions shape)."""
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    raw = choice.get("logprobs")
    if not isinstance(raw, dict) or choice.get("text") != continuation:
        return None
    content = raw.get("content")
    if isinstance(content, list):
        logprobs = [t.get("logprob") if isinstance(t, dict) else None for t in content]
    else:
        listed = raw.get("token_logprobs")
        logprobs = list(listed) if isinstance(listed, list) else []
    numbers = [float(lp) for lp in logprobs if isinstance(lp, (int, float)) and not isinstance(lp, bool)]
    if not numbers or len(numbers) != len(logprobs):
        return None
    return sum(numbers)
