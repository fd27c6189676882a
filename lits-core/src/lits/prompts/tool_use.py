"""Core's generic tool-use prompt.

The user spec is a dict: ``question`` is the template of the question turn;
an optional ``examples`` holds worked trajectories, placed right before the
question in the text form (a base model copies the nearest pattern) and in the
system message in the chat form.  Core ships no examples: they are domain text.
"""

from __future__ import annotations

POLICY_SYSTEM = (
    "Answer the question by using the tools below, one call at a time. Each reply has a thought and then "
    "either one tool call or the final answer, in exactly this form:\n"
    "Thought: what you will do and why\n"
    'Action: {"tool": "TOOL_NAME", "args": {"ARG": "VALUE"}}\n'
    "or\n"
    "Thought: why you are done\n"
    "Answer: the final answer, on one line\n"
    "After an Action you will receive an Observation with the tool's result."
)

POLICY_USER = {"question": "Question: {question}"}
