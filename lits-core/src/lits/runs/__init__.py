"""Runs: the save dir layout, running instances, evaluating results."""
