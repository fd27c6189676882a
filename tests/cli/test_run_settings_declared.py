"""``RunSpec`` is the one declaration of a run: its fields make the flags, the resume rules and the docs table."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lits.cli.main import build_parser
from lits.cli.settings import resume_request
from lits.cli.settings_page import render
from lits.errors import UserError
from lits.runs.resuming import MEANING_FLAGS, refuse_meaning_changes
from lits.runs.spec import OPERATIONAL_FIELDS, UNRECORDED, RunSpec, Setting, settings_declared

PAGE = Path(__file__).resolve().parents[2] / "docs" / "run-settings.md"
#: ``lits search``/``lits chain`` options that are no field's own.
HAND_WRITTEN = {
    "-h",
    "--resume",
    "--config",
    "--set",
    "--dry-run",
    *(
        f"--{role}-{what}"
        for role in ("policy", "eval", "transition", "bn")
        for what in ("model", "base-url", "model-arg")
    ),
}


def _options(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.option_strings[0]: a for a in sub.choices[command]._actions}


@pytest.mark.parametrize("name", list(RunSpec.model_fields))
def test_every_run_setting_declares_its_flag_help_and_whether_it_changes_what_the_run_computes(name: str):
    declared = [m for m in RunSpec.model_fields[name].metadata if isinstance(m, Setting)]
    assert len(declared) == 1, f"RunSpec.{name} needs one Setting(group, help, computes=...)"
    setting = settings_declared()[name]
    assert setting.help and isinstance(setting.computes, bool)
    assert (setting.flag is None) == (setting.group is None)


@pytest.mark.parametrize("command", ["search", "chain"])
def test_the_run_commands_have_one_option_per_declared_setting_with_its_help(command: str):
    options = _options(command)
    made = {
        s.flag: s
        for s in settings_declared().values()
        if s.group in ("data", "model", "run", command) and not s.hand_written
    }
    assert set(options) == set(made) | HAND_WRITTEN
    for flag, setting in made.items():
        assert options[flag].help == setting.help and options[flag].dest == setting.dest


def test_each_recorded_setting_either_fixes_the_run_or_may_change_on_resume():
    """``free_replies`` changes the replies the model gives, so it is fixed like the model itself."""
    fixed = {key for _, _, key in MEANING_FLAGS}
    flagged = {name for name, s in settings_declared().items() if s.flag and not s.hand_written} - UNRECORDED
    assert fixed | OPERATIONAL_FIELDS == flagged and not fixed & OPERATIONAL_FIELDS
    assert "free_replies" in fixed


def _resumed_with(*flags: str) -> list[tuple[str, str, object]]:
    args = build_parser().parse_args(["search", "--resume", "--save-dir", "run", *flags])
    return resume_request(args, "search").meaning


def test_resume_refuses_free_replies_on_a_run_made_without_them():
    with pytest.raises(UserError, match=r"^--free-replies cannot be used with --resume: .*\(the run has False\)"):
        refuse_meaning_changes(_resumed_with("--free-replies"), {"command": "search", "dataset": "blocksworld"})


def test_resume_accepts_free_replies_again_on_a_run_made_with_them():
    refuse_meaning_changes(_resumed_with("--free-replies"), {"command": "search", "free_replies": True})


def test_the_run_settings_page_matches_the_spec():
    assert PAGE.read_text() == render(), "regenerate it: python -m lits.cli.settings_page > docs/run-settings.md"


def test_the_resume_help_names_every_flag_that_may_change_on_resume():
    text = " ".join(str(_options("search")["--resume"].help).split())
    for name in OPERATIONAL_FIELDS:
        assert f"{settings_declared()[name].flag}," in text or f"{settings_declared()[name].flag})" in text


JUDGE = {"eval": {"model": "judge", "args": {"api_key_env": "JUDGE_KEY"}}}


def test_a_spec_whose_component_names_its_key_variable_is_checked_once():
    """The check turns ``api_key_env`` into the recorded ``key_env``; a second pass must not refuse that."""
    spec = RunSpec.make(dataset="blocksworld", component_models=JUDGE)
    assert spec.component_models["eval"].args == {"key_env": "JUDGE_KEY"}


def test_a_spec_whose_component_names_its_key_variable_takes_changed_fields():
    spec = RunSpec(dataset="blocksworld", component_models=JUDGE).with_fields(limit=1)
    assert spec.limit == 1 and spec.component_models["eval"].args == {"key_env": "JUDGE_KEY"}
