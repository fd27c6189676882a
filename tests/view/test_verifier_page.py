"""The run page's verifier section: the report card of ``lits eval --verifier`` and its reliability diagram."""

from __future__ import annotations

from pathlib import Path

import pytest

from lits.cli.main import main
from tests.core.test_verifier import on_the_correct_path, run_tot
from tests.view.conftest import Page


@pytest.fixture(scope="module")
def graded_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = run_tot(tmp_path_factory.mktemp("verifier") / "run", on_the_correct_path)
    assert main(["eval", "--save-dir", str(run), "--verifier"]) == 0
    assert main(["view", str(run)]) == 0
    return run / "report.html"


def test_the_run_page_draws_a_reliability_dot_per_filled_score_bin(page: Page, graded_report: Path) -> None:
    tab = page.open(graded_report)
    assert tab.locator("#reliability circle.bin").count() == 2  # the perfect judge's scores: 0 and 1
    facts = tab.locator("#verifier").inner_text()
    assert "AUROC" in facts and "first candidate on top" in facts
    assert tab.locator("#confident-wrong tr").count() > 1
    page.screenshot("run-verifier")
