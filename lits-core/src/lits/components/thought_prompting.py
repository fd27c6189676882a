"""How language-grounded components turn a chain of thought into a prompt.

Shared by :class:`~lits.components.policy.concat.ConcatPolicy` and
:class:`~lits.components.reward.generative.GenerativePRM` so that every role's prompt for one problem starts
with the same bytes (system prompt, worked examples, the problem, the steps so far) and only the role's own
question differs, last: a server's prefix cache then serves the head whichever role spoke last
(docs/writing-a-domain-plugin.md, "Prompts for prefix caches").  The user template is a dict: ``question``
(the problem, ``{question}``), ``step`` (``Step {index}:``), ``chat_next``, ``chat_whole``, ``chat_rest``,
``final`` and ``chat_examples`` (``{"question", "steps"}``).
"""

from __future__ import annotations

from typing import Any, Sequence

from lits.lm.base import Message

FINAL = "The answer is"
#: The ask for the rest of a solution in one reply (``whole_solution``).
WHOLE = (
    "Write the solution from step {index} to the end, one step per line; the last line states the result "
    'as "{final} X".'
)


class ThoughtPrompt:
    """Fills a system prompt and user template for the steps so far of one problem."""

    def __init__(self, system: object, user: object) -> None:
        self.system = "" if system is None else str(system)
        self.user: dict[str, Any] = dict(user) if isinstance(user, dict) else {}

    def template(self, key: str, default: str) -> str:
        """A user template by key; the design docs' ``question_format`` spelling works too."""
        return str(self.user.get(key) or self.user.get(f"{key}_format") or default)

    def completion(self, query: object, done: Sequence[str], last: bool, exclude: Sequence[str] = ()) -> str:
        """Problem, numbered steps so far, and the cue for the next step (after the siblings not to repeat)."""
        cue = self.template("step", "Step {index}:").format(index=len(done) + 1)
        lines = [self.text_head(query, done)]
        if exclude:
            lines.append(not_again(exclude, cue.rstrip(":")))
        lines.append(f"{cue} {self.template('final', FINAL)}" if last else cue)
        return "\n".join(lines).lstrip()

    def text_head(self, query: object, done: Sequence[str]) -> str:
        """The plain-text prompt's shared part: system prompt, problem and numbered steps so far."""
        step = self.template("step", "Step {index}:")
        lines = [
            self.system.strip(),
            "",
            self.template("question", "Problem: {question}\n").format(question=query).rstrip(),
        ]
        lines += [f"{step.format(index=i)} {action}" for i, action in enumerate(done, 1)]
        return "\n".join(lines).lstrip()

    def asking_text(self, query: object, done: Sequence[str], question: str) -> str:
        """Any role's plain-text prompt: :meth:`text_head`, then ``question``, the role's own part."""
        return f"{self.text_head(query, done)}\n\n{question}"

    def messages(
        self, query: object, done: Sequence[str], last: bool, exclude: Sequence[str] = (), whole: bool = False
    ) -> list[Message]:
        """System prompt, worked examples as earlier user/assistant turns, then the ask for the next step (or,
        ``whole``, for the rest of the solution; from the start, the prompt's ``chat_whole`` ask alone)."""
        if whole and not done and not exclude and self.template("chat_whole", ""):
            # The whole solution from the start: the question and the answer's form, in the model's own
            # chat frame (no system prompt about one-line steps, no worked example to copy).
            return [{"role": "user", "content": self.template("chat_whole", "").format(question=query)}]
        ask = self.ask_line(len(done) + 1, whole)
        if last and not whole:
            ask += f' This is the last step: begin it with "{self.template("final", FINAL)}".'
        if exclude:
            ask += "\n" + not_again(exclude, f"step {len(done) + 1}")
        # Asked for a whole solution, a small chat model copied a short worked example's brevity (1 of 10 GSM8K
        # problems solved against 2 without it), so it reasons in its own style.
        head = [{"role": "system", "content": self.system}] if whole else self.head()
        return [*head, {"role": "user", "content": self._turn(query, done, ask)}]

    def asking(self, query: object, done: Sequence[str], question: str) -> list[Message]:
        """Any role's chat prompt about the steps so far: :meth:`head`, then one user turn with the problem,
        the steps so far and, last, ``question``, the role's own part."""
        return [*self.head(), {"role": "user", "content": self._turn(query, done, question)}]

    def head(self) -> list[Message]:
        """The system prompt and the worked examples: the same for every call, role and problem."""
        return [{"role": "system", "content": self.system}, *self.example_turns()]

    def ask_line(self, index: int, whole: bool) -> str:
        """What the model is asked to write: step ``index`` only, or (``whole``) the rest of the solution."""
        if whole:
            return self.template("chat_rest", WHOLE).format(index=index, final=self.template("final", FINAL))
        return self.template("chat_next", "Write only step {index}.").format(index=index)

    def example_turns(self) -> list[Message]:
        """The prompt's ``chat_examples``, asked and answered step by step as the real problem will be, so a
        chat model sees the answer stated only at the step that computes it."""
        turns: list[Message] = []
        for example in self.user.get("chat_examples") or []:
            steps = [str(s) for s in example.get("steps") or []]
            for k, step_text in enumerate(steps):
                ask = self.ask_line(k + 1, False)
                turns.append({"role": "user", "content": self._turn(example.get("question"), steps[:k], ask)})
                turns.append({"role": "assistant", "content": step_text})
        return turns

    def _turn(self, query: object, done: Sequence[str], ask: str) -> str:
        step = self.template("step", "Step {index}:")
        shown = "\n".join(f"{step.format(index=i)} {action}" for i, action in enumerate(done, 1))
        problem = self.template("question", "Problem: {question}\n").format(question=query)
        return problem + (f"\nSteps so far:\n{shown}\n" if shown else "\n") + ask


def not_again(exclude: Sequence[str], what: str) -> str:
    """The note that lists a node's siblings: proposals the model should not write again."""
    listed = "\n".join(f"- {text}" for text in exclude)
    return f"Already proposed for {what} (write a different one):\n{listed}"
