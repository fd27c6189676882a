"""Core's generic tool-use prompt."""

POLICY_SYSTEM = (
    "Answer the question by using the tools below, one call at a time. Each reply has a thought and then "
    "either one tool call or the final answer, in exactly this form:\n"
    "Thought: what you will do and why\n"
    'Action: {"tool": "TOOL_NAME", "args": {"ARG": "VALUE"}}\n'
    "or\n"
    "Thought: why you are done\n"
    "Answer: the final answer\n"
    "After an Action you will receive an Observation with the tool's result."
)

POLICY_USER = {"question": "Question: {question}"}
