"""The conformance kit's check that a domain's prompts suit a server's prefix cache.

A server re-reads only what follows the longest prefix a prompt shares with one it has seen (llama.cpp's slot,
vLLM's and SGLang's prefix caches).  So every role's prompt for one instance should start with the same bytes
-- instructions, examples, the problem -- and keep what changes by node (the path so far, the candidates, the
role's question) last; and rendering a prompt twice must give the same bytes (no clock, counter or random id).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from lits.lm.base import Prompt

RULE = (
    "put the instructions, examples and the problem first in every role's prompt and what changes by node "
    'last (docs/writing-a-domain-plugin.md, "Prompts for prefix caches")'
)


def flat(prompt: Prompt) -> str:
    """A prompt as one text in the order a server reads it (chat turns with their roles)."""
    if isinstance(prompt, str):
        return prompt
    return "".join(f"<{m.get('role')}>\n{m.get('content')}\n" for m in prompt)


def prompt_head_problem(
    prompts: Mapping[str, Prompt], again: Mapping[str, Prompt], problem: Sequence[str]
) -> str | None:
    """What is wrong with ``prompts`` (name -> prompt, all for one instance) for a prefix cache, or None.

    ``again`` is the same prompts rendered a second time; each text in ``problem`` (the instance's goal, say)
    that the prompts show at all must lie in the head they all share."""
    for name, prompt in prompts.items():
        first, second = flat(prompt), flat(again[name])
        if first != second:
            at = len(os.path.commonprefix([first, second]))
            return (
                f"the {name} differs when rendered twice (from character {at}: {first[at : at + 40]!r}); "
                "nothing volatile (a time, a counter, a random id) may go into a prompt"
            )
    texts = [flat(p) for p in prompts.values()]
    head = os.path.commonprefix(texts)
    for text in problem:
        if text and all(text in t for t in texts) and text not in head:
            names = " and ".join(prompts)
            return (
                f"the {names} share only their first {len(head)} characters (up to {head[-40:]!r}), "
                f"before the problem ({text[:40]!r}) is given; {RULE}"
            )
    return None
