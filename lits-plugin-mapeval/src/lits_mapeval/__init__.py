"""MapEval-SQL for LiTS: importing this module registers the dataset and its tools."""

from lits_mapeval import dataset  # noqa: F401  (registration side effects)
