"""GSM8K's own ask for a whole solution (``--chain-arg whole_solution=true``); the rest is core's.

Its answers are plain numbers, so the ask says "number"; the real small chat
model's figures with it and with core's framing are in docs/benchmarks.md.
"""

from __future__ import annotations

from lits.api import language_grounded_prompts, register_user_prompt


@register_user_prompt("policy", "concat", "gsm8k")
def gsm8k_policy_user() -> dict[str, object]:
    return {
        **language_grounded_prompts.POLICY_USER,
        "chat_whole": "{question}\nWork it out step by step, then give the final number as \\boxed{{N}}.",
    }
