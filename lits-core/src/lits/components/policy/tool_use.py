"""The generic tool-use policy: asks for a thought plus a tool call or an answer.

Reply format (the system prompt teaches it)::

    Thought: ...
    Action: {"tool": "NAME", "args": {...}}
or
    Thought: ...
    Answer: ...

Chat models get messages; base / completion models (``chat_native`` False, e.g.
the embedded model) get one plain-text transcript ending with the cue
``Thought:``, because a base model only continues text and copies the pattern
it sees.  An answer is the first line after ``Answer:``: a base model keeps
writing after it.  A reply with neither becomes a step with only a thought (the
transition reports it as malformed); an Action whose JSON cannot be read, or an
empty Answer, becomes an error step.  The policy never executes anything.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence, cast

from lits.components.base import Policy
from lits.components.parsing import count_reask, count_reply
from lits.lm.base import LanguageModel, Message, Prompt
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
from lits.tools.base import BaseTool

_THOUGHT = re.compile(r"Thought:[ \t]*(.*?)(?=\n\s*(?:Action|Answer):|\Z)", re.S)
_ANSWER = re.compile(r"Answer:(.*)", re.S)
CUE = "Thought:"
#: A model that runs on would invent the tool's result or a new question: cut it there.
STOPS = ("Observation:", "\nQuestion:")
#: A base model separates examples with a blank line; nothing in a step needs one.
COMPLETION_STOPS = (*STOPS, "\n\n")


#: The re-ask after a malformed reply (our own words; the policy's format in one line).
REASK = (
    'Reply again: one "Thought:" line, then either one "Action:" with a JSON object on one line, or '
    '"Answer:" with the final answer.'
)


def _json_object_after(text: str, start: int) -> str | None:
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
                return text[begin : i + 1]
    return None


def _first_line(text: str) -> str:
    """The first non-blank line, stripped ("" when there is none)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


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
        answer = _first_line(answer_match.group(1))
        if not answer:
            return ToolUseStep(think=think, assistant_message=text, error="Answer is empty")
        return ToolUseStep(think=think, answer=answer, assistant_message=text)
    return ToolUseStep(think=think or text, assistant_message=text)


def after_cue(continuation: str) -> str:
    """A base model's continuation of a prompt that ended with the cue, as a whole reply."""
    body = continuation.lstrip()
    if body.startswith(CUE):  # it repeated the cue
        return body
    if body.startswith(("Action:", "Answer:")):  # it skipped the thought
        return f"{CUE}\n{body}"
    return f"{CUE} {body}"


class ToolUsePolicy(Policy[ToolUseState, ToolUseStep]):
    TASK_TYPE = "tool_use"
    AGENT_NAME = "tool_use"

    def __init__(
        self,
        base_model: LanguageModel | None = None,
        task_name: str | None = None,
        tools: Sequence[BaseTool] = (),
        tool_context: str = "",
        max_tokens: int = 256,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_model, task_name, **kwargs)
        self.tools = list(tools)
        self.tool_context = tool_context
        self.max_tokens = max_tokens

    def _user_spec(self) -> dict[str, str]:
        spec = self.usr_prompt_spec
        return spec if isinstance(spec, dict) else {}

    def _preamble(self) -> str:
        """System text, tools and context: shared by both prompt forms."""
        tools = "\n".join(json.dumps(t.spec()) for t in self.tools) or "(no tools)"
        text = f"{self.task_prompt_spec or ''}\n\nTools:\n{tools}"
        if self.tool_context:
            text += f"\n\nContext:\n{self.tool_context}"
        return text

    def _question(self, query: object) -> str:
        return self._user_spec().get("question", "Question: {question}").format(question=query)

    def messages(self, state: ToolUseState, query: object) -> list[Message]:
        """The chat form: worked examples (if any) go into the system message."""
        system = self._preamble()
        examples = self._user_spec().get("examples")
        if examples:
            system += f"\n\nExample:\n{examples}"
        turns = [
            {"role": "system", "content": system},
            {"role": "user", "content": self._question(query)},
            *state.to_messages(),
        ]
        return cast(list[Message], turns)

    def completion_prompt(self, state: ToolUseState, query: object) -> str:
        """The text form for base models: examples right before the question, the trajectory, then the cue."""
        parts = [self._preamble()]
        examples = self._user_spec().get("examples")
        if examples:
            parts.append(examples.strip())
        body = [self._question(query), *(step.transcript(cue=True, error="observation") for step in state), CUE]
        parts.append("\n".join(body))
        return "\n\n".join(parts)

    def _get_actions(
        self, state: ToolUseState, n_actions: int, temperature: float, query: object = None, **kwargs: object
    ) -> list[ToolUseStep]:
        if self.base_model is None:
            raise ValueError("ToolUsePolicy needs a base_model")
        chat = bool(getattr(self.base_model, "chat_native", False))
        prompt: Prompt = self.messages(state, query) if chat else self.completion_prompt(state, query)
        replies = self.base_model.generate(
            prompt,
            n=n_actions,
            temperature=temperature,
            max_tokens=self.max_tokens,
            stop=list(STOPS if chat else COMPLETION_STOPS),
        )
        steps, seen = [], set()
        reasked = False
        for reply in replies:
            step = parse_reply(str(reply) if chat else after_cue(str(reply)))
            count_reply(step.error is None)
            if step.error is not None and chat and not reasked:  # one bounded re-ask per request
                reasked = True
                assert not isinstance(prompt, str)  # chat: the prompt is the messages
                step = self._reask(prompt, str(reply), str(step.error), temperature)
                count_reply(step.error is None)
            key = str(step.action or step.answer or step.error or step.think)
            if key not in seen:
                seen.add(key)
                steps.append(step)
        return steps

    def _reask(self, prompt: Sequence[Message], reply: str, error: str, temperature: float) -> ToolUseStep:
        """Tell a chat model why its reply could not be used and ask once more (counted as a re-ask)."""
        assert self.base_model is not None
        follow_up: list[Message] = [
            *prompt,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": f"That reply cannot be used: {error}. {REASK}"},
        ]
        count_reask()
        again = self.base_model.generate(
            follow_up, n=1, temperature=temperature, max_tokens=self.max_tokens, stop=list(STOPS)
        )
        return parse_reply(str(again[0])) if again else ToolUseStep(assistant_message=reply, error=error)

    def _create_error_steps(self, n_actions: int, error_msg: str) -> list[ToolUseStep]:
        return [ToolUseStep(error=error_msg)]
