"""MapEval-SQL for LiTS: importing this module registers the dataset, its tools and its policy prompt."""

from lits_mapeval import dataset, prompts  # noqa: F401  (registration side effects)
