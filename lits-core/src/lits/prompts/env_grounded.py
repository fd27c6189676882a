"""Core's generic env-grounded prompts (used when a domain registers none)."""

POLICY_SYSTEM = (
    "You act in an environment step by step. Each step is one action that changes "
    "the state. Choose actions that bring the state closer to the goal."
)

POLICY_USER = {
    "state": (
        "Goal: {goals}\n"
        "Current state: {env_state}\n"
        "Actions taken so far:\n{plan}"
        "Valid actions:\n{actions}\n\n"
        "Next action:\n"
    ),
}

REWARD_SYSTEM = "You judge whether a proposed action is a useful next step towards a goal. Answer Yes or No."

REWARD_USER = {
    "evaluate": (
        "Goal: {goals}\n"
        "Current state: {env_state}\n"
        "Actions taken so far:\n{plan}"
        "Proposed next action: {action}\n"
        "Is this action a good next step? Answer Yes or No.\nAnswer:"
    ),
}
