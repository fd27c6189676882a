"""BlocksWorld prompts, in a few-shot completion format a small base model can follow.

The policy scores each candidate as the next line after "### Plan" and the
actions so far, so the examples use exactly that layout.  The judge's chat
prompt repeats the policy's (rules, examples, problem, plan so far) and asks
its own question last, so a server's prefix cache serves both roles.
"""

from __future__ import annotations

from lits.api import register_system_prompt, register_user_prompt

RULES = """\
Blocks rest on a table or on one another, and one hand moves them one at a time.
- "pick up the X block": X must be clear and on the table, and the hand empty.
- "unstack the X block from on top of the Y block": X must be clear and on Y, and the hand empty.
- "put down the X block": the hand must hold X; X goes onto the table.
- "stack the X block on top of the Y block": the hand must hold X, and Y must be clear.
A block is clear when no block is on it and the hand does not hold it.
Each problem below is followed by a shortest plan, one action per line."""

EXAMPLES = """\
### Problem
Start: the red block is clear, the blue block is clear, the hand is empty, the red block is on the table and the blue block is on the table
Goal: the red block is on top of the blue block
### Plan
pick up the red block
stack the red block on top of the blue block
### End

### Problem
Start: the blue block is clear, the yellow block is clear, the hand is empty, the blue block is on top of the orange block, the orange block is on the table and the yellow block is on the table
Goal: the orange block is on top of the yellow block
### Plan
unstack the blue block from on top of the orange block
put down the blue block
pick up the orange block
stack the orange block on top of the yellow block
### End"""

STATE = "### Problem\nStart: {init_state}\nGoal: {goals}\n### Plan\n{plan}"


@register_system_prompt("policy", "env_grounded", "blocksworld")
def policy_system() -> str:
    return f"{RULES}\n\n{EXAMPLES}"


INSTRUCTION = (
    "Now: {env_state}\nLegal actions:\n{actions}\n\nWrite the next action of a shortest plan, exactly as listed."
)

#: For chat models: the same worked example as turns already answered, one action per turn.
CHAT_EXAMPLES = [
    {
        "user": "### Problem\nStart: the red block is clear, the blue block is clear, the hand is empty, the red block is "
        "on the table and the blue block is on the table\nGoal: the red block is on top of the blue block\n"
        "### Plan\n\nNow: the red block is clear, the blue block is clear, the hand is empty, the red block is "
        "on the table and the blue block is on the table\nLegal actions:\npick up the red block\n"
        "pick up the blue block\n\nWrite the next action of a shortest plan, exactly as listed.",
        "assistant": "pick up the red block",
    },
    {
        "user": "### Problem\nStart: the red block is clear, the blue block is clear, the hand is empty, the red block is "
        "on the table and the blue block is on the table\nGoal: the red block is on top of the blue block\n"
        "### Plan\npick up the red block\n\nNow: the blue block is clear, the hand is holding the red block "
        "and the blue block is on the table\nLegal actions:\nput down the red block\n"
        "stack the red block on top of the blue block\n\n"
        "Write the next action of a shortest plan, exactly as listed.",
        "assistant": "stack the red block on top of the blue block",
    },
]


@register_user_prompt("policy", "env_grounded", "blocksworld")
def policy_user() -> dict[str, object]:
    return {
        "state": STATE,
        "instruction": INSTRUCTION,
        # The head every role shares (the judge too): the rules, no role's own instruction.
        "chat_system": RULES.rsplit("\n", 1)[0],
        "chat_examples": CHAT_EXAMPLES,
    }


@register_system_prompt("reward", "env_grounded", "blocksworld")
def reward_system() -> str:
    return f"{RULES}\n\nYou judge whether one proposed action moves a plan towards its goal."


@register_user_prompt("reward", "env_grounded", "blocksworld")
def reward_user() -> dict[str, str]:
    return {
        # Asked after the policy's head and problem (the goal and the plan so far are there already).
        "evaluate": "Now: {env_state}\nProposed next action: {action}\n"
        "Does this action move the plan towards the goal? Answer Yes or No.\nAnswer:",
        "evaluate_many": "Now: {env_state}\nProposed next actions (numbered):\n{candidates}\n\n"
        "For each proposed action, does it move the plan towards the goal? Write one line per "
        "action: its number, a colon, then Yes or No.\n",
    }
