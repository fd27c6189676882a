"""Spending across settings and budgets: anytime curves from one run, replaying a recorded run, one budget for a whole run."""
