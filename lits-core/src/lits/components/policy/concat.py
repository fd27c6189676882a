"""``ConcatPolicy``: propose the next chain-of-thought step (ReST-MCTS*, ToT, CoT).

A completion model gets the problem, the numbered steps so far and the cue
``Step k:``, and stops at the next step's number, so one call yields one
step per sample.  A chat model gets the same content as messages and is asked
for step k only.  At the search's depth limit the step is cued to state the
final answer, so every full-depth path ends with one.  The prompt's shared part comes first so a server's prefix
cache hits across siblings.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from lits.components.base import Policy
from lits.components.parsing import count_reask, count_reply
from lits.components.thought_prompting import FINAL, ThoughtPrompt
from lits.lm.base import LanguageModel, Message, Prompt
from lits.structures.language_grounded import ThoughtState, ThoughtStep


class ConcatPolicy(Policy[ThoughtState, ThoughtStep]):
    TASK_TYPE = "language_grounded"
    AGENT_NAME = "concat"

    def __init__(
        self,
        base_model: LanguageModel | None = None,
        task_name: str | None = None,
        max_tokens: int = 200,
        max_depth: int | None = None,
        solution_max_tokens: int = 640,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.max_tokens = max_tokens
        #: The bound of a reply that holds the rest of the solution (``whole_solution``).
        self.solution_max_tokens = solution_max_tokens
        #: The search's depth limit: the last step allowed is asked for the final answer.
        self.max_depth = max_depth

    def _is_last(self, state: ThoughtState) -> bool:
        return self.max_depth is not None and len(state) >= self.max_depth - 1

    @property
    def prompt(self) -> ThoughtPrompt:
        """This policy's prompts, rendered as every language-grounded role renders them (one shared head)."""
        return ThoughtPrompt(self.task_prompt_spec, self.usr_prompt_spec)

    def _template(self, key: str, default: str) -> str:
        return self.prompt.template(key, default)

    def completion_prompt(self, state: ThoughtState, query: object, exclude: Sequence[str] = ()) -> str:
        """Problem, numbered steps so far, and the cue for the next step (after the siblings not to repeat)."""
        return self.prompt.completion(query, _done(state), self._is_last(state), exclude)

    def messages(
        self, state: ThoughtState, query: object, exclude: Sequence[str] = (), whole: bool = False
    ) -> list[Message]:
        """The chat prompt for the next step (or, ``whole``, the rest of the solution)."""
        return self.prompt.messages(query, _done(state), self._is_last(state), exclude, whole)

    def _get_actions(
        self,
        state: ThoughtState,
        n_actions: int,
        temperature: float,
        query: object = None,
        exclude: Sequence[str] = (),
        whole_solution: bool = False,
        **kwargs: object,
    ) -> list[ThoughtStep]:
        """``n_actions`` sampled steps, repeats included (the search counts and drops them); ``exclude``: the
        siblings' steps, shown so the model writes a different one.  ``whole_solution``: each reply holds the
        rest of the solution, one step per line, kept as one step (a chain's chain of thought in one call)."""
        if self.base_model is None:
            raise ValueError("ConcatPolicy needs a base_model")
        chat = bool(getattr(self.base_model, "chat_native", False))
        whole = whole_solution
        prompt: Prompt = (
            self.messages(state, query, exclude, whole) if chat else self.completion_prompt(state, query, exclude)
        )
        step = self._template("step", "Step {index}:")
        cue = step.format(index=len(state) + 1)
        # A completion model writes one line per step; a chat model may wrap, so stop at the next cue.
        if whole:
            stop = ["\nProblem:", "\n\n\n"]
        else:
            stop = [f"\n{step.format(index=len(state) + 2)}", "\nProblem:", "\n\n\n"] if chat else ["\n"]
        max_tokens = self.solution_max_tokens if whole else self.max_tokens
        replies = self.base_model.generate(
            prompt, n=n_actions, temperature=temperature, max_tokens=max_tokens, stop=stop
        )
        forced = self._template("final", FINAL) if self._is_last(state) and not chat and not whole else ""
        steps: list[ThoughtStep] = []
        reasked = False
        for reply in replies:
            text = _whole(str(reply), step) if whole else _one_step(str(reply), cue)
            count_reply(bool(text))
            if not text and chat and not reasked:  # one bounded re-ask per request
                reasked = True
                count_reask()
                ask = self.prompt.ask_line(len(state) + 1, whole)
                again = self.base_model.generate(
                    [
                        *prompt,
                        {"role": "assistant", "content": str(reply)},
                        {"role": "user", "content": f"That reply was empty. {ask}"},
                    ],
                    n=1,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    stop=stop,
                )
                text = (_whole(str(again[0]), step) if whole else _one_step(str(again[0]), cue)) if again else ""
                count_reply(bool(text))
            text = f"{forced} {text}".strip() if forced else text
            if text:
                steps.append(ThoughtStep(action=text))
        if not steps:
            raise ValueError("the model proposed no step (empty replies)")
        return steps

    def _create_error_steps(self, n_actions: int, error_msg: str) -> list[ThoughtStep]:
        return [ThoughtStep(error=error_msg)]


def _done(state: ThoughtState) -> list[str]:
    return [s.action for s in state if s.action]


def _whole(reply: str, step: str) -> str:
    """A reply holding several steps, one per line, as one line: each line without an echoed step cue."""
    cue = re.compile("^" + re.escape(step).replace(re.escape("{index}"), r"\d+") + r"\s*")
    return " ".join(
        " ".join(cue.sub("", line.strip(), count=1).split()) for line in reply.splitlines() if line.strip()
    ).strip()


def _one_step(reply: str, cue: str) -> str:
    """The reply without an echoed step cue, on one line (whitespace collapsed)."""
    text = reply.strip()
    if text.startswith(cue):
        text = text[len(cue) :]
    return " ".join(text.split())
