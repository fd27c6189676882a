"""Core's prompts for Chain-in-Tree's branching-necessity evaluator (component ``bn``).

``direct`` asks whether the next step is obvious (Yes: one child); ``same``
asks whether differently worded sampled steps are one step (Yes: one child).
Both end in a Yes/No question so any instruct model can answer in a word.
"""

SYSTEM = (
    "You help a search decide where to try several alternatives. Trying alternatives is wasted effort "
    "when the next step is obvious; it pays where reasonable solvers would take different next steps. "
    "Answer Yes or No."
)

USER = {
    "direct": (
        "Problem: {question}\n{progress}\n"
        "Is the next step obvious, so that trying several different next steps would be wasted effort? "
        "Answer Yes or No.\nAnswer:"
    ),
    "same": (
        "Problem: {question}\n{progress}\nCandidate next steps:\n{candidates}\n"
        "Do all the candidate next steps take the same step (the same move, or the same calculation in "
        "other words)? Answer Yes or No.\nAnswer:"
    ),
}
