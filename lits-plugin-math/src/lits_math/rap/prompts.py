"""RAP prompts (our own text) and the one place that turns a sub-QA chain into a prompt.

RAP needs a completion (base) model, so every prompt is few-shot text that
ends exactly where the model writes: after ``Q<k>:`` for the policy, after
``A<k>:`` for the transition, after ``Answer:`` for the usefulness judge.
Chat-native models get the same content as a system message (instructions
and examples) plus a user message (the chain so far and an instruction).

Registered under agent ``rap`` and key ``language_grounded``, so any
language-grounded dataset gets them; a dataset may register its own under its
name.  User prompts are dicts of templates with the fields ``{question}``,
``{pairs}`` (rendered with the ``pair`` template), ``{index}`` (number of the
next sub-question) and ``{sub_question}``.  Every role's prompt starts with the
same system prompt and ``Problem: {question}\n{pairs}``, the role's own ask
last, so a server's prefix cache serves the head whichever role spoke last.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from lits.api import Message, Prompt, register_system_prompt, register_user_prompt

AGENT = "rap"
KEY = "language_grounded"

#: Opening of the sub-question that asks the original problem; it ends every chain.
FINAL_PREFIX = "Final question:"

INSTRUCTIONS = """\
Each problem below is solved by splitting it into short sub-questions, Q1, Q2, ...
Every sub-question is answered in one line (A1, A2, ...) using the problem and the earlier answers.
The last sub-question is always "Final question:" followed by the problem itself,
and its answer ends with "The answer is <number>." Earlier answers never use that phrase."""

EXAMPLES = """\
Problem: A baker makes 24 muffins and packs them in boxes of 4. Each box sells for $5. How much money does the baker get for all the muffins?
Q1: How many boxes does the baker fill?
A1: 24 muffins in boxes of 4 fill 24 / 4 = 6 boxes.
Q2: How much money do the 6 boxes bring in?
A2: At $5 each, 6 boxes bring in 6 * 5 = 30 dollars.
Q3: Final question: A baker makes 24 muffins and packs them in boxes of 4. Each box sells for $5. How much money does the baker get for all the muffins?
A3: The baker gets $30 for the 6 boxes. The answer is 30.

Problem: Tom is three times as old as his sister Mia. In 4 years Mia will be 10. How old is Tom now?
Q1: How old is Mia now?
A1: Mia will be 10 in 4 years, so she is 10 - 4 = 6 now.
Q2: Final question: Tom is three times as old as his sister Mia. In 4 years Mia will be 10. How old is Tom now?
A2: Tom is three times Mia's 6 years, 3 * 6 = 18. The answer is 18."""

PAIR = "Q{index}: {sub_question}\nA{index}: {sub_answer}\n"

POLICY_USER = {
    "state": "Problem: {question}\n{pairs}Q{index}:",
    "pair": PAIR,
    "instruction": (
        "Write only Q{index}: one short sub-question whose answer brings the problem closer "
        'to solved. If the answers so far are enough, write "' + FINAL_PREFIX + '" and the problem.'
    ),
}

TRANSITION_USER = {
    "state": "Problem: {question}\n{pairs}Q{index}: {sub_question}\nA{index}:",
    "pair": PAIR,
    "instruction": (
        "Write only A{index}: answer Q{index} in one line. If Q{index} is the final question, "
        'end with "The answer is <number>."'
    ),
}

REWARD_USER = {
    # The judge reads the policy's system prompt and chain first (one head for every role in a server's prefix
    # cache), so what it judges by is said here, last.
    "evaluate": (
        "Problem: {question}\n{pairs}Proposed Q{index}: {sub_question}\n"
        "Is the proposed sub-question useful: does it ask for something the problem needs that the earlier "
        "answers do not already give? Answer Yes or No.\n"
        "Answer:"
    ),
    "pair": PAIR,
}


@register_system_prompt("policy", AGENT, KEY)
def policy_system() -> str:
    return f"{INSTRUCTIONS}\n\n{EXAMPLES}"


@register_user_prompt("policy", AGENT, KEY)
def policy_user() -> dict[str, str]:
    return dict(POLICY_USER)


@register_system_prompt("transition", AGENT, KEY)
def transition_system() -> str:
    return f"{INSTRUCTIONS}\n\n{EXAMPLES}"


@register_user_prompt("transition", AGENT, KEY)
def transition_user() -> dict[str, str]:
    return dict(TRANSITION_USER)


@register_system_prompt("reward", AGENT, KEY)
def reward_system() -> str:
    return f"{INSTRUCTIONS}\n\n{EXAMPLES}"  # the policy's: every role's prompt starts with the same bytes


@register_user_prompt("reward", AGENT, KEY)
def reward_user() -> dict[str, str]:
    return dict(REWARD_USER)


def final_question(question: str, prefix: str = FINAL_PREFIX) -> str:
    """The sub-question that asks the original problem (and so ends the chain)."""
    return f"{prefix} {question}".strip()


def is_final_question(text: str, prefix: str = FINAL_PREFIX) -> bool:
    return str(text).strip().lower().startswith(prefix.strip().lower())


class SubQAPrompt:
    """Fills a component's system prompt and user templates for one chain."""

    def __init__(self, system: Any, user: Any, defaults: Mapping[str, str]) -> None:
        if user is not None and not isinstance(user, Mapping):
            raise TypeError("a RAP user prompt must be a dict of templates")
        self.system = "" if system is None else str(system)
        # Missing entries fall back to ours, so a dataset may override just one.
        self.user = {**defaults, **dict(user or {})}

    def fields(self, steps: Iterable[Any], question: Any, sub_question: str = "") -> dict[str, Any]:
        """Template fields; error steps (no sub-question) are left out of the chain."""
        usable = [s for s in steps if _answered(s)]
        pairs = "".join(
            self.user["pair"].format(index=i, sub_question=s.sub_question, sub_answer=s.sub_answer)
            for i, s in enumerate(usable, start=1)
        )
        return {
            "question": "" if question is None else str(question).strip(),
            "pairs": pairs,
            "index": len(usable) + 1,
            "sub_question": sub_question,
        }

    def text(self, name: str, fields: Mapping[str, Any]) -> str:
        return str(self.user[name]).format(**fields)

    def build(self, fields: Mapping[str, Any], chat: bool, body: str = "state") -> Prompt:
        """Completion text (system, blank line, body) or chat messages (system; body + instruction)."""
        text = self.text(body, fields)
        if not chat:
            return f"{self.system}\n\n{text}" if self.system else text
        instruction: str | None = self.user.get("instruction")
        msgs: list[Message] = []
        if self.system:
            msgs.append({"role": "system", "content": self.system})
        content = f"{text}\n\n{instruction.format(**fields)}" if instruction else text
        msgs.append({"role": "user", "content": content})
        return msgs


def _answered(step: Any) -> bool:
    """A step that belongs in the chain: not an error, and with a sub-question."""
    return getattr(step, "error", None) is None and bool(getattr(step, "sub_question", ""))
