"""The generic tool-use policy: asks for a thought plus a tool call or an answer.

Reply format (the system prompt teaches it)::

    Thought: ...
    Action: {"tool": "NAME", "args": {...}}
or
    Thought: ...
    Answer: ...

A reply with neither becomes a step with only a thought (the transition
reports it as malformed); an Action whose JSON cannot be read becomes an error
step. The policy never executes anything.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence, cast

from lits.components.base import Policy
from lits.lm.base import Message
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
from lits.tools.base import BaseTool

_THOUGHT = re.compile(r"Thought:\s*(.*?)(?=\n\s*(?:Action|Answer):|\Z)", re.S)
_ANSWER = re.compile(r"Answer:\s*(.*)", re.S)


def _json_object_after(text: str, start: int) -> Optional[str]:
    """The balanced ``{...}`` beginning at or after ``start`` (None if absent or unbalanced)."""
    begin = text.find("{", start)
    if begin < 0:
        return None
    depth, in_string, escaped = 0, False, False
    for i in range(begin, len(text)):
        ch = text[i]
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i + 1]
    return None


def parse_reply(reply: str) -> ToolUseStep:
    """Turn a model reply into a step (action, answer, thought only, or error)."""
    text = str(reply).strip()
    thought_match = _THOUGHT.search(text)
    think = thought_match.group(1).strip() if thought_match else ""
    action_at = text.find("Action:")
    answer_match = _ANSWER.search(text)
    if action_at >= 0 and (answer_match is None or action_at < answer_match.start()):
        raw = _json_object_after(text, action_at)
        if raw is None:
            return ToolUseStep(think=think, assistant_message=text, error="Action is not a complete JSON object")
        try:
            json.loads(raw)
        except ValueError as exc:
            return ToolUseStep(think=think, assistant_message=text, error=f"Action is not valid JSON: {exc}")
        return ToolUseStep(think=think, action=ToolUseAction(raw), assistant_message=text)
    if answer_match is not None:
        return ToolUseStep(think=think, answer=answer_match.group(1).strip(), assistant_message=text)
    return ToolUseStep(think=think or text, assistant_message=text)


class ToolUsePolicy(Policy[ToolUseState, ToolUseStep]):
    TASK_TYPE = "tool_use"
    AGENT_NAME = "tool_use"

    def __init__(
        self,
        base_model: Any = None,
        task_name: Optional[str] = None,
        tools: Sequence[BaseTool] = (),
        tool_context: str = "",
        max_tokens: int = 256,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.tools = list(tools)
        self.tool_context = tool_context
        self.max_tokens = max_tokens

    def messages(self, state: ToolUseState, query: Any) -> list[Message]:
        tools = "\n".join(json.dumps(t.spec()) for t in self.tools) or "(no tools)"
        system = f"{self.task_prompt_spec or ''}\n\nTools:\n{tools}"
        if self.tool_context:
            system += f"\n\nContext:\n{self.tool_context}"
        template = (self.usr_prompt_spec or {}).get("question", "Question: {question}")
        turns = [{"role": "system", "content": system},
                 {"role": "user", "content": template.format(question=query)},
                 *state.to_messages()]
        return cast(list[Message], turns)

    def _get_actions(self, state: ToolUseState, n_actions: int, temperature: float, query: Any = None,
                     **kwargs: Any) -> list[ToolUseStep]:
        if self.base_model is None:
            raise ValueError("ToolUsePolicy needs a base_model")
        replies = self.base_model.generate(self.messages(state, query), n=n_actions, temperature=temperature,
                                           max_tokens=self.max_tokens, stop=["Observation:"])
        steps, seen = [], set()
        for reply in replies:
            step = parse_reply(reply)
            key = str(step.action or step.answer or step.error or step.think)
            if key not in seen:
                seen.add(key)
                steps.append(step)
        return steps

    def _create_error_steps(self, n_actions: int, error_msg: str) -> list[ToolUseStep]:
        return [ToolUseStep(error=error_msg)]
