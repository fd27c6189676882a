"""Core's generic language-grounded prompts: a math-like dataset needs none of its own."""

POLICY_SYSTEM = (
    "Solve the problem one step at a time. Each step is one short line of reasoning or "
    "calculation. Only the step that computes the final result ends with "
    '"The answer is X", writing X as simply as possible; earlier steps never state an answer.'
)

POLICY_USER = {
    "question": "Problem: {question}\n",
    "step": "Step {index}:",
    "chat_next": "Write only step {index}, one line, nothing else.",
    # A whole solution in one reply (``--chain-arg whole_solution=true``), asked as a plain chat question.
    "chat_whole": "{question}\nWork it out step by step, then give the final answer as \\boxed{{answer}}.",
    # A self-made worked example, shown to chat models as earlier turns (one turn per step).
    "chat_examples": [
        {
            "question": "A baker makes 5 trays of 12 rolls. He sells 38 rolls and gives away 7. "
            "How many rolls are left?",
            "steps": [
                "He makes 5 * 12 = 60 rolls.",
                "He sells or gives away 38 + 7 = 45 rolls.",
                "60 - 45 = 15 rolls are left. The answer is 15.",
            ],
        }
    ],
}

#: The judge's own system prompt, read only with a domain's own ``evaluate`` template (a whole prompt of its own);
#: core's judge asks after the policy's prompt (``ask``) and so under the policy's system prompt.
REWARD_SYSTEM = "You check the reasoning steps of a solution. Answer Yes or No."

REWARD_USER = {
    # Asked after the policy's prompt for the same steps (its system prompt, examples, the problem and the
    # steps so far), so both roles' prompts share one head in a server's prefix cache; the question comes before
    # the step it asks about, so the judges of a node's children share it too.
    "ask": (
        "Is the following proposed next step correct, and does it make progress? Answer Yes or No.\n"
        "Proposed next step: {step}\nAnswer:"
    ),
}
