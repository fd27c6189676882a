"""Core's generic language-grounded prompts: a math-like dataset needs none of its own."""

POLICY_SYSTEM = (
    "Solve the problem one step at a time. Each step is one short line of reasoning or "
    "calculation. When the last step reaches the result, end it with "
    "\"The answer is X\", writing X as simply as possible."
)

POLICY_USER = {
    "question": "Problem: {question}\n",
    "step": "Step {index}:",
    "chat_next": "Write only step {index}, one line, nothing else.",
}

REWARD_SYSTEM = "You check the reasoning steps of a solution. Answer Yes or No."

REWARD_USER = {
    "evaluate": (
        "Problem: {question}\n"
        "Steps so far:\n{steps}\n"
        "Proposed next step: {step}\n"
        "Is the proposed step correct and does it make progress? Answer Yes or No.\nAnswer:"
    ),
}
