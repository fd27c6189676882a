"""``prm-classifier``: a classifier process reward model (Qwen2.5-Math-PRM and kin) as ``--reward``.

Such a PRM is served as a pooling model (``vllm serve Qwen/Qwen2.5-Math-PRM-7B``), not a chat
model: it reads the problem and the steps, each followed by a separator token, and gives the
probability that each step is correct at its separator (:mod:`lits.lm.pooling` has the request and
reply shapes and where they come from).  The new step's probability is its score; every step's is in
the details.  One request per scored step; the same trajectory always gets the same scores.
"""

from __future__ import annotations

from typing import Any

from lits.api import POOLING_ENDPOINT, ModelError, RewardModel, register_reward_model, step_probabilities
from lits.structures.base import Step, TrajectoryState
from lits_math.prm import _step_text, _steps_text

#: The system turn of the chat form: what the PRM's policy was asked (Qwen's PRMs were trained on
#: solutions that end in a boxed answer).
SYSTEM = "Solve the problem step by step and give the final answer in \\boxed{}."


@register_reward_model("prm-classifier", task_type="language_grounded")
class ClassifierPRM(RewardModel[TrajectoryState[Step], object]):
    """A step's score is a classifier PRM's probability of the positive label at the step's separator.

    Settings (constructor keywords): ``separator``, the token the PRM was trained to score after each
    step (Qwen2.5-Math-PRM: ``<extra_0>``); ``input_format``, ``messages`` (system, problem, and the
    steps as the assistant's turn, through the server's chat template) or ``text`` (problem, blank line,
    steps: for PRMs without a chat template); ``system``; ``task``, the pooling task sent (empty: none,
    for vLLM before ``token_classify``); ``positive_label``, the index of "correct" in each score row.
    """

    TASK_TYPE = "language_grounded"
    AGENT_NAME = "prm_classifier"
    separator: str = "<extra_0>"
    input_format: str = "messages"
    system: str = SYSTEM
    task: str = "token_classify"
    positive_label: int = 1
    endpoint: str = POOLING_ENDPOINT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.input_format not in ("messages", "text"):
            raise ValueError(f"prm-classifier input_format must be messages or text, not {self.input_format!r}")
        if not isinstance(self.separator, str) or not self.separator:
            raise ValueError(f"prm-classifier separator must be the PRM's step token, not {self.separator!r}")
        if isinstance(self.positive_label, bool) or not isinstance(self.positive_label, int) or self.positive_label < 0:
            raise ValueError(
                f"prm-classifier positive_label must be a label index (0, 1, ...), not {self.positive_label!r}"
            )
        if self.task is None:  # ``task=null`` as ``task=``: send none
            self.task = ""

    def request(self, question: object, steps: list[str]) -> dict[str, object]:
        """The Pooling API body that scores ``steps`` (a separator after each; none inside one)."""
        solution = "".join(step.replace(self.separator, " ") + self.separator for step in steps)
        body: dict[str, object] = {"model": getattr(self.base_model, "name", "prm")}
        if self.input_format == "messages":
            turns = [{"role": "system", "content": self.system}] if self.system else []
            body["messages"] = [
                *turns,
                {"role": "user", "content": str(question)},
                {"role": "assistant", "content": solution},
            ]
        else:
            body["input"] = f"{question}\n\n{solution}"
        if self.task:
            body["task"] = self.task
        return body

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
        pool = getattr(self.base_model, "pool", None)
        if pool is None:
            raise ModelError(
                f"prm-classifier needs a model on a pooling server, but {self.base_model.name} is "
                "not one; give --eval-model NAME --eval-base-url URL of a server running the PRM "
                "(e.g. vllm serve Qwen/Qwen2.5-Math-PRM-7B)"
            )
        steps = [*_steps_text(state), text]
        reply = pool(self.request(query, steps), endpoint=self.endpoint)
        try:
            scores = step_probabilities(reply, len(steps), self.positive_label)
        except ValueError as exc:
            where = getattr(self.base_model, "display_url", None) or self.base_model.name
            raise ModelError(f"prm-classifier: pooling server {where} {exc}") from None
        return scores[-1], {"step_scores": [round(s, 4) for s in scores], "route": "pooling"}

    def reward(self, state: TrajectoryState[Step], action: object, **kwargs: Any) -> tuple[float, dict[str, object]]:
        return float(kwargs.get("fast_reward", 0.0)), {}
