"""Process reward models for math steps, each registered by name for ``--reward``.

* ``prm-logprob`` - discriminative: the probability the model gives a positive
  label ("+") over a negative one ("-") for the step, read from the token
  log-probabilities of a one-token reply at temperature 0 (how RLHFlow-style
  PRMs are served over an OpenAI-compatible API), or from ``loglikelihood`` where
  the backend scores text.  No sampling, so the same step always gets the same score.
* ``prm-verifier`` - generative: the model writes a short critique that ends in
  one verdict per step ("Step 2: correct"); the score is the new step's verdict.
* ``prm-consistency`` - self-consistency: k sampled continuations from the step
  to a final answer; the score is the share that agree with their majority.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from lits.api import Prompt, RewardModel, majority_vote, register_reward_model, score_else_ask
from lits.api import label_probability as core_label_probability
from lits.structures.base import Step, TrajectoryState

LABEL_SYSTEM = (
    "You grade a single step of a math solution. Reply with one character only: "
    "+ when the step is correct and moves the solution forward, - when it is wrong or useless."
)
VERIFIER_SYSTEM = (
    "You check math solutions step by step. Briefly say what each step does and whether it holds, "
    "then end with one line per step in the form 'Step N: correct' or 'Step N: incorrect'."
)


def _steps_text(state: Sequence[Step] | None) -> list[str]:
    return [s.verb_step() for s in state] if state else []


def _step_text(action: object, kwargs: dict[str, Any]) -> str:
    step = kwargs.get("step")
    return step.verb_step() if step is not None else str(action or "")


def grading_prompt(question: object, earlier: Sequence[str], step: str) -> str:
    shown = "\n".join(f"Step {i}: {s}" for i, s in enumerate(earlier, 1)) or "(no steps yet)"
    return (
        f"Problem: {question}\n\nSteps so far:\n{shown}\n\nStep {len(earlier) + 1} to grade: {step}\n\nGrade (+ or -):"
    )


def label_probability(reply: object, positive: str = "+", negative: str = "-") -> float | None:
    """P(positive) / (P(positive) + P(negative)) from a reply's first-token top log-probabilities; None when
    the reply has no log-probabilities or neither label is among its likely first tokens."""
    return core_label_probability(reply, (positive, negative))


@register_reward_model("prm-logprob", task_type="language_grounded")
class LogprobPRM(RewardModel[TrajectoryState[Step], object]):
    """A step's score is the model's probability of the "+" label (see module docstring)."""

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "prm_logprob"
    top_logprobs: int = 10

    def _fast_reward(
        self,
        state: TrajectoryState[Step],
        action: object,
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, object]]:
        text = _step_text(action, kwargs)
        if self.base_model is None or not text:
            return 0.0, {}
        prompt = grading_prompt(query, _steps_text(state), text)
        verdict = score_else_ask(
            self.base_model,
            prompt,
            system=LABEL_SYSTEM,
            labels=("+", "-"),
            system_in_text=True,
            max_tokens=1,
            top_logprobs=self.top_logprobs,
            needs_logprobs="prm-logprob",
        )
        if not verdict.parsed:
            return 0.5, {"p_plus": None, "route": verdict.route, "parsed": False}
        return verdict.p_yes, {"p_plus": round(verdict.p_yes, 4), "route": verdict.route}

    def reward(self, state: TrajectoryState[Step], action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        return float(kwargs.get("fast_reward", 0.0)), {}


_VERDICT = re.compile(r"step\s*(\d+)\s*[:\-]?\s*\**\s*(correct|incorrect|wrong|right)\b", re.IGNORECASE)


def step_verdicts(critique: str) -> dict[int, bool]:
    """``{step number: correct?}`` from the critique's verdict lines (the last verdict per step wins)."""
    return {int(n): word.lower() in ("correct", "right") for n, word in _VERDICT.findall(str(critique))}


@register_reward_model("prm-verifier", task_type="language_grounded")
class VerifierPRM(RewardModel[TrajectoryState[Step], object]):
    """A generative verifier: a critique with per-step verdicts; the new step's verdict is the score."""

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "prm_verifier"
    max_tokens: int = 256

    def _fast_reward(
        self,
        state: TrajectoryState[Step],
        action: object,
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, object]]:
        text = _step_text(action, kwargs)
        if self.base_model is None or not text:
            return 0.0, {}
        steps = [*_steps_text(state), text]
        shown = "\n".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))
        prompt = f"Problem: {query}\n\nSolution so far:\n{shown}\n\nCheck every step."
        messages: Prompt = (
            [{"role": "system", "content": VERIFIER_SYSTEM}, {"role": "user", "content": prompt}]
            if self.base_model.chat_native
            else f"{VERIFIER_SYSTEM}\n\n{prompt}\n"
        )
        critique = self._call_model(messages, temperature=0.0, max_tokens=self.max_tokens)
        verdicts = step_verdicts(critique)
        verdict = verdicts.get(len(steps))
        if verdict is None:
            return 0.5, {"verdict": None, "parsed": False}  # no verdict for the step: no opinion
        return float(verdict), {"verdict": verdict, "parsed": True}

    def reward(self, state: TrajectoryState[Step], action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        return float(kwargs.get("fast_reward", 0.0)), {}


@register_reward_model("prm-consistency", task_type="language_grounded")
class ConsistencyPRM(RewardModel[TrajectoryState[Step], object]):
    """Self-consistency as a reward: k sampled finishes from the step; the share agreeing with the majority."""

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "prm_consistency"
    samples: int = 4
    temperature: float = 0.8
    max_tokens: int = 200

    def _fast_reward(
        self,
        state: TrajectoryState[Step],
        action: object,
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, object]]:
        from lits.api import answer_rules

        text = _step_text(action, kwargs)
        if self.base_model is None or not text:
            return 0.0, {}
        extract, equivalent = answer_rules(self.task_name)
        shown = "\n".join([*_steps_text(state), text])
        prompt = (
            f"Problem: {query}\n\nSolution so far:\n{shown}\n\n"
            'Finish the solution briefly and end with "The answer is X".'
        )
        messages: Prompt = [{"role": "user", "content": prompt}] if self.base_model.chat_native else prompt + "\n"
        replies = self.base_model.generate(
            messages, n=self.samples, temperature=self.temperature, max_tokens=self.max_tokens
        )
        answers = [extract(str(r)) for r in replies]
        vote = majority_vote(answers, equivalent)
        agreeing = sum(1 for a in answers if a is not None and vote.answer is not None and equivalent(a, vote.answer))
        share = agreeing / len(answers) if answers else 0.0
        return share, {"answer": vote.answer, "agree": agreeing, "samples": len(answers)}

    def reward(self, state: TrajectoryState[Step], action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        return float(kwargs.get("fast_reward", 0.0)), {}
