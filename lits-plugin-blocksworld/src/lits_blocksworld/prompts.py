"""BlocksWorld prompts, in a few-shot completion format a small base model can follow.

The policy scores each candidate as the next line after "### Plan" and the
actions so far, so the examples use exactly that layout.
"""

from __future__ import annotations

from lits.registry import register_system_prompt, register_user_prompt

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


@register_user_prompt("policy", "env_grounded", "blocksworld")
def policy_user() -> dict[str, str]:
    return {
        "state": STATE,
        "instruction": "Now: {env_state}\nLegal actions:\n{actions}\n\n"
                       "Write the next action of a shortest plan, exactly as listed.",
    }


@register_system_prompt("reward", "env_grounded", "blocksworld")
def reward_system() -> str:
    return f"{RULES}\n\nYou judge whether one proposed action moves a plan towards its goal."


@register_user_prompt("reward", "env_grounded", "blocksworld")
def reward_user() -> dict[str, str]:
    return {
        "evaluate": "Now: {env_state}\nGoal: {goals}\nDone so far:\n{plan}Proposed next action: {action}\n"
                    "Is this a good next action? Answer Yes or No.\nAnswer:",
    }
