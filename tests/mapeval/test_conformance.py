"""MapEval-SQL keeps the plugin contract: questions with queries, a resource with named tools."""

from __future__ import annotations

from lits.testing import check_dataset


def test_the_generated_questions_conform():
    assert check_dataset("mapeval-sql") > 0


def test_the_public_question_file_conforms(shared_data):
    assert check_dataset("mapeval-sql", path=str(shared_data / "mapeval" / "mapeval_api_dataset.json")) == 300
