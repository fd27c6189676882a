"""The mapeval-sql policy prompt: core's reply format plus one worked trajectory.

A base model cannot follow the instructions, but it copies a pattern: the
example shows the whole loop (list the tables, query, answer with an option
number) on a place that is not in the generated city, so nothing is given away.
"""

from __future__ import annotations

from lits.api import register_system_prompt, register_user_prompt, tool_use_prompts as core

EXAMPLE = """\
Question: How many reviews does Willow Market have?
Options:
1. 120
2. 87
3. 45
4. 300
Thought: First I check which tables the database has.
Action: {"tool": "list_tables", "args": {}}
Observation: directions, distances, nearby, places
Thought: Review counts are in the places table, column user_ratings_total.
Action: {"tool": "query_sql", "args": {"query": "SELECT user_ratings_total FROM places WHERE name = 'Willow Market'"}}
Observation: user_ratings_total
87
Thought: 87 reviews is option 2.
Answer: 2"""


@register_system_prompt("policy", "tool_use", "mapeval-sql")
def policy_system() -> str:
    return (
        f"{core.POLICY_SYSTEM}\n"
        "Answer with the number of the right option, or 0 when the database cannot answer the question."
    )


@register_user_prompt("policy", "tool_use", "mapeval-sql")
def policy_user() -> dict[str, str]:
    return {**core.POLICY_USER, "examples": EXAMPLE}
