"""RAP's transition: answer a sub-question by sampling answers and voting."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

from lits.api import (
    Equivalence,
    Extractor,
    LlmTransition,
    extract_stated_answer,
    majority_vote,
    normalize_text,
    register_transition,
    same_text,
)

from lits_math.rap.prompts import FINAL_PREFIX, TRANSITION_USER, SubQAPrompt, is_final_question
from lits_math.rap.structures import SubQAState, SubQAStep

#: A completion model goes on to the next sub-question; cut it there.
STOP = ["\nQ", "\n\n"]
_LABEL = re.compile(r"^\s*(?:A\d*|answer\s*\d*)\s*[:.)]\s*", re.I)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")


@register_transition("rap", task_type="language_grounded")
class RAPTransition(LlmTransition[SubQAState, Any]):
    """Appends the sub-question with its majority answer (self-consistency).

    Samples are compared by their extracted answer (``extract_answer``; else
    their last number; else their text), so differently worded answers with
    the same value agree.  ``confidence`` is the winning share of all samples,
    RAP's state reward.  A step answers the original problem when its
    sub-question is the final one, or when its answer *states* a final answer
    (``answer_cue``, by default "The answer is ..."): a permissive dataset
    extractor that finds a number anywhere must not end every chain at once.
    """

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "rap"

    def __init__(
        self,
        base_model: Any = None,
        task_name: str | None = None,
        n_samples: int = 3,
        temperature: float = 0.8,
        max_tokens: int = 256,
        extract_answer: Extractor | None = None,
        equivalent: Equivalence | None = None,
        answer_cue: Callable[[str], str | None] | None = extract_stated_answer,
        final_prefix: str = FINAL_PREFIX,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.n_samples = max(1, n_samples)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extract_answer: Extractor = extract_answer or extract_stated_answer
        self.equivalent: Equivalence = equivalent or same_text
        self.answer_cue = answer_cue
        self.final_prefix = final_prefix
        self.prompt = SubQAPrompt(self.task_prompt_spec, self.usr_prompt_spec, TRANSITION_USER)

    def init_state(self, **kwargs: Any) -> SubQAState:
        return SubQAState()

    def _step(
        self, state: SubQAState, step_or_action: Any, query_or_goals: Any, **kwargs: Any
    ) -> tuple[SubQAState, dict[str, Any]]:
        new_state = state.copy()
        error = getattr(step_or_action, "error", None)
        if error is not None:  # the policy failed: keep its error step as it is
            new_state.append(step_or_action)
            return new_state, {"confidence": 0.0, "error": error}
        sub_question = (
            step_or_action.sub_question if isinstance(step_or_action, SubQAStep) else str(step_or_action or "")
        ).strip()
        if not sub_question:
            new_state.append(SubQAStep(error="empty sub-question"))
            return new_state, {"confidence": 0.0, "error": "empty sub-question"}
        answers = self._sample(state, sub_question, query_or_goals)
        step = self._settle(sub_question, answers)
        if isinstance(step_or_action, SubQAStep):  # keep any extra fields of a subclass, on a copy
            step = dataclasses.replace(
                step_or_action,
                sub_question=sub_question,
                sub_answer=step.sub_answer,
                confidence=step.confidence,
                answer=step.answer,
            )
        new_state.append(step)
        return new_state, {"confidence": step.confidence}

    def is_terminal(self, state: SubQAState, query_or_goals: Any = None, **kwargs: Any) -> bool:
        return bool(state) and state[-1].get_answer() is not None

    # -- internals -----------------------------------------------------------
    def _sample(self, state: SubQAState, sub_question: str, question: Any) -> list[str]:
        if self.base_model is None:
            raise ValueError("RAPTransition needs a base_model")
        fields = self.prompt.fields(state, question, sub_question)
        prompt = self.prompt.build(fields, self.base_model.chat_native)
        outputs = self.base_model.generate(
            prompt, n=self.n_samples, temperature=self.temperature, max_tokens=self.max_tokens, stop=STOP
        )
        return [_clean(str(o)) for o in outputs]

    def _settle(self, sub_question: str, answers: list[str]) -> SubQAStep:
        """The majority answer, its share, and the final answer when the step gives one."""
        keys = [self._vote_key(text) for text in answers]
        vote = majority_vote(keys, equivalent=self.equivalent)
        if vote.answer is None:
            return SubQAStep(sub_question=sub_question, sub_answer="", confidence=0.0)
        winner = next(i for i, k in enumerate(keys) if k is not None and self.equivalent(k, vote.answer))
        text = answers[winner]
        count = next(c["count"] for c in vote.clusters if c["answer"] == vote.answer)
        confidence = round(count / max(1, len(answers)), 4)
        final: str | None = None
        if is_final_question(sub_question, self.final_prefix) or (
            self.answer_cue is not None and self.answer_cue(text) is not None
        ):
            final = self.extract_answer(text) or keys[winner]
        return SubQAStep(sub_question=sub_question, sub_answer=text, confidence=confidence, answer=final)

    def _vote_key(self, text: str) -> str | None:
        if not text:
            return None
        extracted = self.extract_answer(text)
        if extracted:
            return str(extracted)
        numbers = _NUMBER.findall(text)
        return numbers[-1].replace(",", "") if numbers else normalize_text(text)


def _clean(text: str) -> str:
    """One answer line: drop an ``A3:`` label and join wrapped lines."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines:
        lines[0] = _LABEL.sub("", lines[0], count=1).strip()
    return " ".join(line for line in lines if line)
