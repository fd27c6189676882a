"""Self-Refine as a custom reasoning formulation, written as in the data-structures doc.

The step, state, policy and transition below are the doc's code unchanged; the
doc leaves out three pieces, marked "not in the doc": the transition's
``max_iterations`` and ``_check_satisfactory``, and a reward model.  Run it:

    python docs/examples/self_refine.py                  # the scripted offline model
    python docs/examples/self_refine.py --model local    # the embedded Gemma 3 270M
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from lits.api import LlmTransition, Policy, RewardModel, bfs, judge_yes, register_state, register_type
from lits.structures.base import Step, TrajectoryState


@register_type
@dataclass
class RefineStep(Step):
    """Step for Self-Refine iterative improvement."""
    draft: str = ""           # Current attempt/solution
    feedback: str = ""        # Self-critique identifying issues
    refined: str = ""         # Improved version after feedback
    iteration: int = 0        # Refinement iteration number
    is_satisfactory: bool = False  # Whether refinement should stop

    def get_action(self):
        return self.refined if self.refined else self.draft

    def verb_step(self) -> str:
        parts = [f"[Iteration {self.iteration}]"]
        parts.append(f"Draft: {self.draft}")
        if self.feedback:
            parts.append(f"Feedback: {self.feedback}")
        if self.refined:
            parts.append(f"Refined: {self.refined}")
        return "\n".join(parts)

    def to_messages(self) -> list[dict]:
        messages = [{"role": "assistant", "content": self.draft}]
        if self.feedback:
            messages.append({"role": "user", "content": f"Feedback: {self.feedback}"})
        if self.refined:
            messages.append({"role": "assistant", "content": self.refined})
        return messages


@register_state
class RefineState(TrajectoryState[RefineStep]):
    """State tracking refinement iterations."""

    def get_current_solution(self) -> str:
        """Return the latest refined output."""
        if not self.steps:
            return ""
        last_step = self.steps[-1]
        return last_step.refined if last_step.refined else last_step.draft

    def is_converged(self) -> bool:
        """Check if refinement has converged."""
        return self.steps and self.steps[-1].is_satisfactory


class RefinePolicy(Policy):
    TASK_TYPE = "language_grounded"

    def _get_actions(self, state: RefineState, query, n_actions, **kwargs) -> list[RefineStep]:
        iteration = len(state.steps)

        if iteration == 0:
            # Initial generation
            drafts = self.base_model.generate(f"Solve: {query}", n=n_actions)
            return [RefineStep(draft=d, iteration=0) for d in drafts]
        else:
            # Generate feedback on current solution
            current = state.get_current_solution()
            feedback_prompt = f"Critique this solution:\n{current}\n\nIdentify specific issues:"
            feedbacks = self.base_model.generate(feedback_prompt, n=n_actions)
            return [RefineStep(draft=current, feedback=f, iteration=iteration) for f in feedbacks]


class RefineTransition(LlmTransition):
    TASK_TYPE = "language_grounded"
    max_iterations = 3  # not in the doc: how many refinements at most

    def _step(self, state: RefineState, step: RefineStep, query, **kwargs):
        new_state = state.copy()

        if not step.feedback:
            # First iteration: just store the draft
            new_state.append(step)
        else:
            # Refine based on feedback
            refine_prompt = f"Original: {step.draft}\nFeedback: {step.feedback}\n\nImproved solution:"
            refined = self._call_model(refine_prompt)

            # Check if satisfactory (could use LLM or heuristic)
            is_satisfactory = self._check_satisfactory(step.draft, refined, step.feedback)

            step.refined = refined
            step.is_satisfactory = is_satisfactory
            new_state.append(step)

        return new_state, {"is_satisfactory": step.is_satisfactory}

    def is_terminal(self, state: RefineState, **kwargs) -> bool:
        return state.is_converged() or len(state.steps) >= self.max_iterations

    def _check_satisfactory(self, draft: str, refined: str, feedback: str) -> bool:
        """Not in the doc: stop once a refinement no longer changes the text."""
        return " ".join(str(refined).split()) == " ".join(str(draft).split())


class RefineRewardModel(RewardModel):
    """Not in the doc: the model's P(Yes) that the step's solution is correct."""

    TASK_TYPE = "language_grounded"

    def _fast_reward(self, state, action, query, query_idx, from_phase="", **kwargs):
        if self.base_model is None:
            return 0.0, {}
        question = f"Problem: {query}\nProposed solution: {action}\nIs the solution correct? Answer Yes or No.\nAnswer:"
        p_yes, route = judge_yes(self.base_model, question)
        return p_yes, {"route": route}

    def reward(self, state, action, **kwargs):
        bonus = 0.5 if kwargs.get("is_satisfactory") else 0.0
        return float(kwargs.get("fast_reward", 0.0)) + bonus, {}


def solve(model: Any, query: str) -> Any:
    """The doc's call, with the reward model above."""
    return bfs(
        query=query,
        policy=RefinePolicy(base_model=model),
        transition=RefineTransition(base_model=model),
        reward_model=RefineRewardModel(base_model=model),
        n_actions=3,  # 3 different feedback options per iteration
        max_depth=5,  # Up to 5 refinement iterations
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="scripted", help="'scripted' (offline stand-in) or 'local'")
    parser.add_argument("--query", default="Write the sum of the first five odd numbers.")
    args = parser.parse_args()
    from lits.api import model as create_model

    model = create_model(args.model)
    result = solve(model, args.query)
    print(result.best_state.render())
    print(f"solved={result.solved} terminal_nodes={len(result.terminal_nodes)} nodes={result.stats['nodes']}")


if __name__ == "__main__":
    main()
