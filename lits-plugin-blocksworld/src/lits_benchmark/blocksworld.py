"""BlocksWorld's rules under the design documents' name: ``from lits_benchmark.blocksworld import goal_check,
generate_all_actions``."""

from lits_blocksworld.world import generate_actions, goal_check

#: The design documents' name for :func:`lits_blocksworld.world.generate_actions`.
generate_all_actions = generate_actions

__all__ = ["generate_actions", "generate_all_actions", "goal_check"]
