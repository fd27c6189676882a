"""RAP's policy: propose candidate next sub-questions."""

from __future__ import annotations

import re
from typing import Any

from lits.api import Policy, count_reask, count_reply, normalize_text, register_policy

from lits_math.rap.prompts import FINAL_PREFIX, POLICY_USER, SubQAPrompt, final_question, is_final_question
from lits_math.rap.structures import SubQAState, SubQAStep

#: A completion model continues the chain past its sub-question; cut it there.
STOP = ["\nA", "\n\n"]
_LABEL = re.compile(r"^\s*(?:Q\d*|question\s*\d*|sub-?question\s*\d*)\s*[:.)]\s*", re.I)


@register_policy("rap", task_type="language_grounded")
class RAPPolicy(Policy[SubQAState, SubQAStep]):
    """Samples ``n_actions`` sub-questions for the chain so far.

    From depth ``max_depth - 1`` on it proposes only the final question (the
    original problem), so every chain ends within ``max_depth`` steps; a
    sampled sub-question that starts the final question is completed to it.
    """

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "rap"

    def __init__(
        self,
        base_model: Any = None,
        task_name: str | None = None,
        n_actions: int = 3,
        temperature: float = 0.8,
        max_depth: int = 5,
        max_tokens: int = 128,
        final_prefix: str = FINAL_PREFIX,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_model, task_name, n_actions=n_actions, temperature=temperature, **kwargs)
        self.max_depth = max_depth
        self.max_tokens = max_tokens
        self.final_prefix = final_prefix
        self.prompt = SubQAPrompt(self.task_prompt_spec, self.usr_prompt_spec, POLICY_USER)

    def _get_actions(
        self, state: SubQAState, n_actions: int, temperature: float, query: Any = None, **kwargs: Any
    ) -> list[SubQAStep]:
        question = "" if query is None else str(query).strip()
        final = final_question(question, self.final_prefix)
        if len(state) >= self.max_depth - 1:
            return [SubQAStep(sub_question=final)]
        if self.base_model is None:
            raise ValueError("RAPPolicy needs a base_model")
        prompt = self.prompt.build(self.prompt.fields(state, question), self.base_model.chat_native)
        outputs = self.base_model.generate(
            prompt, n=n_actions, temperature=temperature, max_tokens=self.max_tokens, stop=STOP
        )
        steps: list[SubQAStep] = []
        seen: set[str] = set()
        chat = isinstance(prompt, list)
        reasked = False
        for output in outputs:
            sub_question = self._parse(str(output), final)
            count_reply(bool(sub_question))
            if not sub_question and chat and not reasked:  # one bounded re-ask per request
                reasked = True
                count_reask()
                again = self.base_model.generate(
                    [
                        *prompt,
                        {"role": "assistant", "content": str(output)},
                        {
                            "role": "user",
                            "content": "That reply held no sub-question. Write only the next "
                            "sub-question, on one line.",
                        },
                    ],
                    n=1,
                    temperature=temperature,
                    max_tokens=self.max_tokens,
                    stop=STOP,
                )
                sub_question = self._parse(str(again[0]), final) if again else ""
                count_reply(bool(sub_question))
            key = normalize_text(sub_question)
            if sub_question and key not in seen:
                seen.add(key)
                steps.append(SubQAStep(sub_question=sub_question))
        if not steps:
            raise ValueError(f"no sub-question in {len(outputs)} completion(s): {[str(o) for o in outputs][:3]!r}")
        return steps

    def _parse(self, text: str, final: str) -> str:
        """First non-empty line without its ``Q3:`` label; the final question in full."""
        for line in text.splitlines():
            line = _LABEL.sub("", line.strip(), count=1).strip()
            if line:
                return final if is_final_question(line, self.final_prefix) else line
        return ""

    def _create_error_steps(self, n_actions: int, error_msg: str) -> list[SubQAStep]:
        # A SubQAStep (not a bare Step) keeps the state homogeneous and serializable.
        return [SubQAStep(error=error_msg)]
