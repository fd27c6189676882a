"""What a run leaves and how it is read: the run directory, result records and their evaluation, spend and
stats, the instance trees, and comparisons across runs."""
