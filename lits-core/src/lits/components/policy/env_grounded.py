"""The generic env-grounded policy: any domain that registers a Transition gets it.

Two ways to pick actions:

* ``rank`` - enumerable action space and a model that scores text: every valid
  action is scored by log-likelihood after the prompt and the best ``n`` are
  returned (no duplicates by construction; works with small base models).
* ``generate`` - the model writes actions; duplicates among siblings are
  detected, temperature escalates on duplicates, and with an enumerable action
  space unselected valid actions fill the remaining slots (the seeds'
  mode-collapse remedy).  Open-ended domains validate each proposal.
"""

from __future__ import annotations

import threading
from typing import Callable, Literal, Sequence

from lits.components.base import Policy
from lits.components.env_prompting import EnvPrompt, parse_action_line
from lits.components.parsing import count_fallback, count_reask, count_reply
from lits.lm.base import LanguageModel, LoglikelihoodUnsupported, Message
from lits.runtime.observability import context_tag
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep

Strategy = Literal["auto", "rank", "generate"]

#: A chat model asked for one action line stops at the line's end (it tends to explain itself after).
CHAT_STOP = ["\n"]
REASK = (
    "Reply again with exactly one action, written as in the list of valid actions when there is one, and nothing else."
)


class DiversityStats:
    """Counts that show when search is starved for diverse actions."""

    FIELDS = ("calls", "outputs", "duplicates", "invalid", "fallbacks", "escalations")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = dict.fromkeys(self.FIELDS, 0)
        # Sampled valid proposals per instance, so evaluation can tell which were wrong.
        self._proposals: dict[object, list[tuple[str, bool]]] = {}

    def propose(self, action: str, duplicate: bool) -> None:
        instance = context_tag("instance")
        with self._lock:
            self._proposals.setdefault(instance, []).append((action, duplicate))

    def take_proposals(self, instance: object) -> list[tuple[str, bool]]:
        """The proposals recorded for ``instance`` (removed from memory)."""
        with self._lock:
            return self._proposals.pop(instance, [])

    def add(self, **deltas: int) -> None:
        with self._lock:
            for key, value in deltas.items():
                self.counts[key] += value

    def as_dict(self) -> dict[str, float]:
        with self._lock:
            out: dict[str, float] = dict(self.counts)
        out["duplicate_rate"] = round(out["duplicates"] / out["outputs"], 4) if out["outputs"] else 0.0
        return out


class EnvGroundedPolicy(Policy[EnvState, EnvStep]):
    TASK_TYPE = "env_grounded"
    AGENT_NAME = "env_grounded"

    def __init__(
        self,
        base_model: LanguageModel | None = None,
        task_name: str | None = None,
        generate_all_actions: Callable[[str], list[str]] | None = None,
        validate_action: Callable[[str, str], tuple[bool, str]] | None = None,
        n_actions: int = 3,
        temperature: float = 0.8,
        max_temperature: float = 1.2,
        temperature_step: float = 0.2,
        max_attempts: int = 3,
        max_tokens: int = 48,
        strategy: Strategy = "auto",
        constrain_replies: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(base_model, task_name, n_actions=n_actions, temperature=temperature, **kwargs)
        if strategy not in ("auto", "rank", "generate"):
            raise ValueError(f"strategy must be auto, rank or generate, not {strategy!r}")
        if strategy == "rank" and "loglikelihood" in getattr(base_model, "cannot", ()):
            raise ValueError(
                f"strategy=rank ranks actions by log-likelihood, which model "
                f"{getattr(base_model, 'name', '?')} cannot give; use strategy=generate (or auto)"
            )
        self.generate_all_actions = generate_all_actions
        self.validate_action = validate_action
        self.max_temperature = max_temperature
        self.temperature_step = temperature_step
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.strategy = strategy
        #: With an enumerable action space, ask the server to decode only listed actions (where it can).
        self.constrain_replies = constrain_replies
        self.prompt = EnvPrompt(self.task_prompt_spec, self.usr_prompt_spec)
        self.stats = DiversityStats()

    def take_proposals(self, instance: object) -> list[tuple[str, bool]]:
        return self.stats.take_proposals(instance)

    def proposal_stats(self) -> dict[str, float] | None:
        return self.stats.as_dict()

    def _get_actions(
        self,
        state: EnvState,
        n_actions: int,
        temperature: float,
        query: object = None,
        exclude: Sequence[str] = (),
        **kwargs: object,
    ) -> list[EnvStep]:
        valid = self.generate_all_actions(state.env_state) if self.generate_all_actions else None
        if valid is not None:
            if exclude:
                excluded = set(exclude)
                valid = [a for a in valid if a not in excluded]
            if not valid:
                return []
        if valid is not None and self._use_ranking():
            try:
                chosen = self._rank(state, query, valid, n_actions)
                return [EnvStep(action=EnvAction(a)) for a in chosen]
            except LoglikelihoodUnsupported:
                self.strategy = "generate"
        chosen = self._sample(state, query, valid, n_actions, temperature, exclude)
        return [EnvStep(action=EnvAction(a)) for a in chosen]

    # -- ranking -----------------------------------------------------------
    def _use_ranking(self) -> bool:
        if self.strategy == "rank":
            return True
        return self.strategy == "auto" and bool(getattr(self.base_model, "supports_loglikelihood", False))

    def _rank(self, state: EnvState, query: object, valid: list[str], n: int) -> list[str]:
        if self.base_model is None:
            raise ValueError("EnvGroundedPolicy needs a base_model")
        prompt = self.prompt.completion(state, query, valid)
        scores = self.base_model.loglikelihood(prompt, [self.prompt.continuation(a) for a in valid])
        order = sorted(range(len(valid)), key=lambda i: -scores[i])
        self.stats.add(calls=1, outputs=min(n, len(valid)))
        return [valid[i] for i in order[:n]]

    # -- sampling ----------------------------------------------------------
    def _sample(
        self,
        state: EnvState,
        query: object,
        valid: list[str] | None,
        n: int,
        temperature: float,
        exclude: Sequence[str],
    ) -> list[str]:
        if self.base_model is None:
            raise ValueError("EnvGroundedPolicy needs a base_model")
        chosen: list[str] = []
        seen = set(exclude)
        lookup = {a.lower(): a for a in valid} if valid is not None else None
        # Sampling without replacement: each request lists only the actions not proposed yet,
        # and once every valid action is proposed nobody is asked again.
        target = n if valid is None else min(n, len([a for a in valid if a not in seen]))
        # A server that answers one sample per request is asked for one action at a time, each request
        # held to the actions still left: the same requests, and no sample is a duplicate.
        one_by_one = (
            bool(valid)
            and self.constrain_replies
            and getattr(self.base_model, "constrain_replies", True)
            and not getattr(self.base_model, "batches_samples", True)
        )
        temp = temperature
        short = False  # the last request brought fewer new actions than it asked for
        for _ in range(target + self.max_attempts - 1 if one_by_one else self.max_attempts):
            want = target - len(chosen)
            if want <= 0:
                break
            remaining = [a for a in valid if a not in seen] if valid is not None else []
            if short:
                temp = min(self.max_temperature, temp + self.temperature_step)
                self.stats.add(escalations=1)
            ask = 1 if one_by_one else want
            prompt = self._prompt_for(state, query, remaining)
            chat = isinstance(prompt, list)
            replies = self.base_model.generate(
                prompt,
                n=ask,
                temperature=temp,
                max_tokens=self.max_tokens,
                stop=CHAT_STOP if chat else None,
                reply_lines=self._reply_lines(remaining),
            )
            before = len(chosen)
            self.stats.add(calls=1, outputs=len(replies))
            reasked = False
            for reply in replies:
                action = self._accept(state, parse_action_line(reply), lookup)
                count_reply(action is not None)
                if action is None and isinstance(prompt, list) and not reasked:  # one bounded re-ask (chat)
                    reasked = True
                    action = self._reask(state, prompt, str(reply), lookup, temp)
                    count_reply(action is not None)
                if action is None:
                    self.stats.add(invalid=1)
                elif action in seen:
                    self.stats.add(duplicates=1)
                    self.stats.propose(action, duplicate=True)
                else:
                    seen.add(action)
                    chosen.append(action)
                    self.stats.propose(action, duplicate=False)
            short = len(chosen) - before < ask
        if valid is not None and len(chosen) < target:
            fill = [a for a in valid if a not in seen][: target - len(chosen)]
            self.stats.add(fallbacks=len(fill))
            count_fallback(len(fill))
            chosen.extend(fill)
        return chosen[:n]

    def _reask(
        self, state: EnvState, prompt: list[Message], reply: str, lookup: dict[str, str] | None, temperature: float
    ) -> str | None:
        """Tell a chat model why its reply was unusable and ask once more (counted as a re-ask)."""
        assert self.base_model is not None
        text = parse_action_line(reply)
        why = f"{text!r} is not one of the valid actions" if text else "the reply held no action"
        if text and lookup is None and self.validate_action is not None:
            why = f"{text!r} cannot be done: {self.validate_action(state.env_state, text)[1]}"
        follow_up: list[Message] = [
            *prompt,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": f"That cannot be used: {why}. {REASK}"},
        ]
        count_reask()
        allowed = list(lookup.values()) if lookup is not None else None
        again = self.base_model.generate(
            follow_up,
            n=1,
            temperature=temperature,
            max_tokens=self.max_tokens,
            stop=CHAT_STOP,
            reply_lines=self._reply_lines(allowed),
        )
        return self._accept(state, parse_action_line(again[0]), lookup) if again else None

    def _reply_lines(self, actions: list[str] | None) -> list[list[str]] | None:
        """One line, one of ``actions`` (None: free text, when nothing is enumerated or constraining is off)."""
        return [actions] if actions and self.constrain_replies else None

    def _prompt_for(self, state: EnvState, query: object, valid: list[str]) -> str | list[Message]:
        if getattr(self.base_model, "chat_native", False):
            return self.prompt.messages(state, query, valid)
        return self.prompt.completion(state, query, valid)

    def _accept(self, state: EnvState, text: str, lookup: dict[str, str] | None) -> str | None:
        if not text:
            return None
        if lookup is not None:
            return lookup.get(text.lower())
        if self.validate_action is not None:
            ok, _reason = self.validate_action(state.env_state, text)
            return text if ok else None
        return text
