"""How env-grounded components turn a state into a prompt.

Shared by :class:`EnvGroundedPolicy` and :class:`EnvGroundedPRM` so that both
score actions against byte-identical prompts (the model's score memo and a
server's prefix cache then hit).  A domain's user template is a dict whose
``"state"`` entry may use ``{env_state}``, ``{init_state}``, ``{goals}``,
``{plan}`` (actions so far, one per line) and ``{actions}`` (valid actions).
"""

from __future__ import annotations

from typing import Any, Sequence

from lits.lm.base import Message
from lits.structures.env_grounded import EnvState

DEFAULT_INSTRUCTION = (
    "Reply with the single next action only, written exactly as one of the valid "
    "actions above when they are listed, and nothing else."
)
DEFAULT_ACTION_FORMAT = "{action}\n"


class EnvPrompt:
    """Fills a system prompt and user template for one state."""

    def __init__(self, system: object, user: dict[str, str] | None) -> None:
        if user is not None and not isinstance(user, dict):
            raise TypeError("env-grounded user prompt must be a dict with a 'state' template")
        self.system = "" if system is None else str(system)
        self.user: dict[str, Any] = dict(user or {})
        if "state" not in self.user:
            raise ValueError(
                "no env-grounded user prompt with a 'state' template was found; "
                "register one with @register_user_prompt('policy', 'env_grounded', <task>)"
            )

    def fields(self, state: EnvState, goals: object, actions: Sequence[str] = ()) -> dict[str, str]:
        plan = "".join([f"{s.action}\n" for s in state if s.action is not None and s.error is None])
        return {
            "env_state": str(state.env_state),
            "init_state": str(state.init_state),
            "goals": "" if goals is None else str(goals),
            "plan": plan,
            "actions": "\n".join(actions),
        }

    def completion(self, state: EnvState, goals: object, actions: Sequence[str] = ()) -> str:
        """Plain-text prompt that ends where the next action is written."""
        body = self.user["state"].format(**self.fields(state, goals, actions))
        return f"{self.system}\n\n{body}" if self.system else body

    def messages(self, state: EnvState, goals: object, actions: Sequence[str] = ()) -> list[Message]:
        """Chat form: system prompt, worked examples as earlier user/assistant turns, then the state.

        A domain that gives ``chat_system`` and ``chat_examples`` (a list of
        ``{"user": ..., "assistant": ...}``) has its examples shown as turns the
        model already answered, so a chat model answers the last turn instead of
        copying actions out of examples pasted into the system prompt."""
        fields = self.fields(state, goals, actions)
        instruction = self.user.get("instruction", DEFAULT_INSTRUCTION).format(**fields)
        return self.asking_with(fields, instruction)

    def asking(self, state: EnvState, goals: object, question: str, actions: Sequence[str] = ()) -> list[Message]:
        """Any role's chat prompt about ``state``: :meth:`head`, then one user turn with the problem and the
        path so far (the ``state`` template) and, last, ``question``, the role's own part.

        Every role's prompt for one instance thus starts with the same bytes, so a server's prefix cache
        serves them whichever role spoke last (docs/writing-a-domain-plugin.md, "Prompts for prefix caches")."""
        return self.asking_with(self.fields(state, goals, actions), question)

    def asking_with(self, fields: dict[str, str], question: str) -> list[Message]:
        """:meth:`asking` with the state's :meth:`fields` already worked out (a caller that needs them too)."""
        body = self.user["state"].format(**fields)
        return [*self.head(), {"role": "user", "content": f"{body}\n\n{question}"}]

    def head(self) -> list[Message]:
        """The system prompt and the worked examples: the same for every call, role and instance."""
        system = str(self.user.get("chat_system") or self.system)
        msgs: list[Message] = [{"role": "system", "content": system}] if system else []
        for example in self.chat_examples():
            msgs.append({"role": "user", "content": example["user"]})
            msgs.append({"role": "assistant", "content": example["assistant"]})
        return msgs

    def chat_examples(self) -> list[dict[str, str]]:
        examples = self.user.get("chat_examples") or []
        return [e for e in examples if isinstance(e, dict) and "user" in e and "assistant" in e]

    def continuation(self, action: str) -> str:
        """The text scored for ``action`` after :meth:`completion`."""
        return self.user.get("action_format", DEFAULT_ACTION_FORMAT).format(action=action)


def parse_action_line(text: str) -> str:
    """First non-empty line of a model reply, without list markers or quotes."""
    for line in str(text).splitlines():
        line = line.strip().strip("`").strip()
        while line[:1] in "-*•>" and line:
            line = line[1:].strip()
        if line[:1].isdigit() and line[1:3] in (". ", ") "):
            line = line[3:].strip()
        line = line.strip("\"'").rstrip(".").strip()
        if line:
            return line
    return ""
