"""The generic env-grounded reward model.

``fast_reward`` (before execution) is the model's belief in the action: the
probability of the action text after the policy prompt when the backend can
score text, else the probability of "Yes" to a self-evaluation question.
``reward`` (after execution) mixes it with the domain's verifiable goal
progress from ``goal_check``, and is ``goal_reward`` (1) when the goal is
reached: rewards stay on the 0..1 scale every shipped reward model uses.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from lits.components.base import RewardModel
from lits.components.env_prompting import EnvPrompt
from lits.components.reward.judging import numbered_yes_probabilities, score_else_ask, shuffled_order
from lits.lm.base import LanguageModel, LoglikelihoodUnsupported, Message, Prompt
from lits.prompts.registry import PromptRegistry
from lits.structures.env_grounded import EnvAction, EnvState
from lits.structures.base import Step


#: Asks a chat model about every sibling at once; a domain may register its own as the user
#: prompt's "evaluate_many" entry (fields as for "evaluate", with {candidates} for {action}).
EVALUATE_MANY = (
    "Now: {env_state}\nGoal: {goals}\nDone so far:\n{plan}Proposed next actions (numbered):\n{candidates}\n\n"
    "For each proposed action, is it a good next action? Write one line per action: its number, a colon, "
    "then Yes or No.\n"
)


class EnvGroundedPRM(RewardModel[EnvState, EnvAction]):
    TASK_TYPE = "env_grounded"
    AGENT_NAME = "env_grounded"
    #: False once the backend turned out unable to score text.
    use_scoring: bool = True
    #: The domain's action functions (given by the factory): the valid actions scored against.
    generate_all_actions: Callable[[str], list[str]] | None = None
    validate_action: Callable[[str, str], tuple[bool, str]] | None = None

    def __init__(
        self,
        base_model: LanguageModel | None = None,
        task_name: str | None = None,
        fast_weight: float = 0.5,
        goal_reward: float = 1.0,
        judge_siblings_together: bool = True,
        constrain_replies: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.fast_weight = fast_weight
        if not 0.0 <= fast_weight <= 1.0 or not 0.0 <= goal_reward <= 1.0:
            raise ValueError("fast_weight and goal_reward are shares of the 0..1 reward scale")
        self.goal_reward = goal_reward
        #: Chat models judge all siblings of an expansion in one request (numbered Yes/No answers).
        self.judge_siblings_together = judge_siblings_together
        #: Ask the server to decode only well-formed verdicts ("1: Yes" lines; "Yes"/"No"), where it can.
        self.constrain_replies = constrain_replies
        # Score against the policy's prompt so both share one scored prompt.
        self.policy_prompt = EnvPrompt(
            PromptRegistry.get("policy", "env_grounded", task_name, self.TASK_TYPE),
            PromptRegistry.get_usr("policy", "env_grounded", task_name, self.TASK_TYPE),
        )
        self.use_scoring = True

    def _fast_reward(
        self,
        state: EnvState,
        action: EnvAction,
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        **kwargs: Any,
    ) -> tuple[float, dict[str, object]]:
        if self.base_model is None or action is None:
            return 0.0, {}
        user = self.usr_prompt_spec or {}
        template = user.get("evaluate") if isinstance(user, dict) else None
        scored = self.use_scoring and self.base_model.supports_loglikelihood

        def question() -> str:
            return str(template).format(action=str(action), **self.policy_prompt.fields(state, query))

        def asking(chat: bool) -> Prompt:
            # The policy's prompt for this state comes first, so both roles share one prefix (a server's cache).
            valid = self._valid(state)
            if chat:
                return self.policy_prompt.asking(state, query, question(), valid)
            return f"{self.policy_prompt.completion(state, query, valid)}\n\n{question()}"

        verdict = score_else_ask(
            self.base_model,
            question if template else None,
            system=str(self.task_prompt_spec or ""),
            scoring=self.use_scoring,
            answer=(
                self.policy_prompt.completion(state, query, self._valid(state)),
                self.policy_prompt.continuation(str(action)),
            )
            if scored
            else None,
            reply_lines=[["Yes", "No"]] if self.constrain_replies else None,
            asking=asking,
        )
        if verdict.unsupported:
            self.use_scoring = False
        if verdict.route == "loglikelihood":
            return verdict.p_yes, {"logprob": verdict.logprob}
        if verdict.route == "none":
            return 0.0, {}
        return verdict.p_yes, {"self_eval": verdict.p_yes}

    def _fast_rewards(
        self,
        state: EnvState,
        actions: list[EnvAction],
        query: object,
        query_idx: int | None,
        from_phase: str = "",
        steps: Sequence[Step | None] = (),
    ) -> list[tuple[float, dict[str, object]]]:
        """All siblings judged in one request where the backend allows (one dependent round, one slot).

        Backends that score text score every sibling's action text after one
        prompt; chat models answer one numbered Yes/No question per sibling;
        anything left unanswered is judged on its own.
        """
        if self.base_model is None or len(actions) < 2 or None in actions:
            return super()._fast_rewards(state, actions, query, query_idx, from_phase=from_phase, steps=steps)
        if self.use_scoring and getattr(self.base_model, "supports_loglikelihood", False):
            try:
                prompt = self.policy_prompt.completion(state, query, self._valid(state))
                logprobs = self.base_model.loglikelihood(
                    prompt, [self.policy_prompt.continuation(str(a)) for a in actions]
                )
                return [(math.exp(min(0.0, lp)), {"logprob": lp}) for lp in logprobs]
            except LoglikelihoodUnsupported:
                self.use_scoring = False
        if self.judge_siblings_together and getattr(self.base_model, "chat_native", False):
            judged = self._judge_together(state, actions, query)
            missing = [i for i, value in enumerate(judged) if value is None]
            redo = super()._fast_rewards(
                state,
                [actions[i] for i in missing],
                query,
                query_idx,
                from_phase=from_phase,
                steps=[steps[i] for i in missing] if steps else (),
            )
            again = dict(zip(missing, redo))
            shown_at = {i: place for place, i in enumerate(self._shown_order(state, actions), start=1)}
            return [
                again[i]
                if value is None
                else (value, {"self_eval": value, "judged_with_siblings": True, "shown_at": shown_at[i]})
                for i, value in enumerate(judged)
            ]
        return super()._fast_rewards(state, actions, query, query_idx, from_phase=from_phase, steps=steps)

    def _judge_together(self, state: EnvState, actions: list[EnvAction], query: object) -> list[float | None]:
        assert self.base_model is not None
        prompt = self.judge_messages(state, actions, query)
        order = self._shown_order(state, actions)
        verdicts_allowed = [[f"{k}: Yes", f"{k}: No"] for k in range(1, len(actions) + 1)]
        reply = self.base_model.generate(
            prompt,
            temperature=0.0,
            max_tokens=8 * len(actions),
            top_logprobs=5,
            reply_lines=verdicts_allowed if self.constrain_replies else None,
        )[0]
        verdicts = numbered_yes_probabilities(reply, len(actions))
        judged: list[float | None] = [None] * len(actions)
        for shown, i in enumerate(order):
            judged[i] = verdicts[shown]
        return judged

    def judge_messages(self, state: EnvState, actions: Sequence[EnvAction], query: object) -> list[Message]:
        """The chat prompt that judges ``actions`` (siblings) together: the policy's prompt for ``state`` up to
        its question, then the domain's ``evaluate_many`` question."""
        user = self.usr_prompt_spec if isinstance(self.usr_prompt_spec, dict) else {}
        template = user.get("evaluate_many", EVALUATE_MANY)
        order = self._shown_order(state, list(actions))
        candidates = "\n".join(f"{shown}. {actions[i]}" for shown, i in enumerate(order, start=1))
        question = template.format(candidates=candidates, **self.policy_prompt.fields(state, query))
        return self.policy_prompt.asking(state, query, question, self._valid(state))

    @staticmethod
    def _shown_order(state: EnvState, actions: list[EnvAction]) -> list[int]:
        """The order the siblings are listed to the judge (each one's place goes into its details, so a report
        can measure a preference for the first-listed)."""
        return shuffled_order([str(a) for a in actions], str(state.env_state))

    def _valid(self, state: EnvState) -> list[str]:
        generate = getattr(self, "generate_all_actions", None)
        return list(generate(state.env_state)) if generate else []

    def reward(self, state: EnvState, action: EnvAction, **kwargs: Any) -> tuple[float, dict[str, object]]:
        if kwargs.get("error"):
            return 0.0, {"error": kwargs["error"]}
        fast = float(kwargs.get("fast_reward", 0.0))
        reached, progress = kwargs.get("goal_reached") or (False, 0.0)
        value = self.fast_weight * fast + (1.0 - self.fast_weight) * float(progress)
        if reached:
            value = max(value, self.goal_reward)
        return value, {"fast_reward": fast, "progress": float(progress), "goal_reached": bool(reached)}
