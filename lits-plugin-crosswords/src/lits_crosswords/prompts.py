"""Crossword prompts (our own words)."""

from __future__ import annotations

from lits.api import register_system_prompt, register_user_prompt

RULES = (
    "Fill a 5x5 mini crossword. Rows are clues h1-h5 and columns are clues v1-v5; every answer is a "
    "five-letter word. Write one answer per line as slot, dot, word, for example: h1. HEART\n"
    "An answer must agree with the letters that filled crossing answers already put on the board."
)


STATE = "Clues:\n{goals}\n\nBoard:\n{env_state}\n\nNext answer:\n"
INSTRUCTION = "Reply with one answer for a clue that is not filled yet, like 'h2. APPLE', and nothing else."

# A worked example on a puzzle that is not in the plugin's data set.
EXAMPLE_CLUES = """\
h1. Something valuable that a company owns
h2. Better than great; also a hero's first name
h3. Extra, like a tyre in the boot
h4. Strange in a spooky way
h5. Oaks and pines"""
EXAMPLE_BOARD = """\
_ _ _ _ _
S U P E R
_ _ _ _ _
_ _ _ _ _
_ _ _ _ _
Filled: h2
Changed: none"""
EXAMPLE_ANSWER = "h1. ASSET"
EXAMPLE = f"{STATE.format(goals=EXAMPLE_CLUES, env_state=EXAMPLE_BOARD)}{EXAMPLE_ANSWER}\n"
#: The same example for chat models: a turn they already answered, not text in the system prompt to copy.
CHAT_EXAMPLES = [
    {
        "user": f"{STATE.format(goals=EXAMPLE_CLUES, env_state=EXAMPLE_BOARD)}\n{INSTRUCTION}",
        "assistant": EXAMPLE_ANSWER,
    }
]


@register_system_prompt("policy", "env_grounded", "crosswords")
def policy_system() -> str:
    return f"{RULES}\n\n{EXAMPLE}"


@register_user_prompt("policy", "env_grounded", "crosswords")
def policy_user() -> dict[str, object]:
    return {"state": STATE, "instruction": INSTRUCTION, "chat_system": RULES, "chat_examples": CHAT_EXAMPLES}


@register_system_prompt("reward", "env_grounded", "crosswords")
def reward_system() -> str:
    return "You judge whether a five-letter word answers a crossword clue. Answer Yes or No."


@register_user_prompt("reward", "env_grounded", "crosswords")
def reward_user() -> dict[str, str]:
    return {"fit": "Clue: {clue}\nProposed answer: {word}\nDoes the word answer the clue? Answer Yes or No.\nAnswer:"}
