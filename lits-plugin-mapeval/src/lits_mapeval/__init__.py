"""MapEval-SQL for LiTS: importing this module registers the dataset, its tools, its policy prompt, the
``sql_validator`` augmentor and the ``lits mapeval`` command."""

from lits_mapeval import cli, dataset, prompts, sql_check  # noqa: F401  (registration side effects)
