"""A run's ``config.json`` is its :class:`RunRecord`: the resolved :class:`RunSpec` plus what the run adds.

The record's spec part is the spec's own fields (no second list of keys); config.json keeps the keys and the
order runs wrote before the record, so an old run directory reads, resumes and writes back byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lits.io import layout
from lits.registry import add_registration
from lits.runs.record import ALWAYS, RunRecord
from lits.runs.results.artifacts import RunDir, RunFileError
from lits.runs.resuming import resumed_settings
from lits.runs.spec import UNRECORDED, ComponentModel, RunSpec

#: What runs wrote before the record (``RunSpec.settings()`` on main), without the version and the time.
SEARCH = {
    "command": "search",
    "dataset": "blocksworld",
    "dataset_args": {},
    "offset": 0,
    "limit": 2,
    "resource": None,
    "resource_args": {},
    "policy": None,
    "transition": None,
    "model": "scripted",
    "base_url": None,
    "api": None,
    "component_models": {},
    "concurrency": 1,
    "call_budget": None,
    "read_timeout": None,
    "price_in": 0.0,
    "price_out": 0.0,
    "log_prompts": False,
    "cache": None,
    "no_cache": False,
    "executor": "local",
    "ray_address": None,
    "search": None,
    "reward": None,
    "search_framework": None,
    "search_args": {"n_iterations": 3},
}
CHAIN = {
    **{k: v for k, v in SEARCH.items() if k not in ("search", "reward", "search_framework", "search_args")},
    "command": "chain",
    "dataset": "gsm8k",
    "limit": None,
    "component_models": {
        "eval": {"model": "m", "base_url": "http://127.0.0.1:9/v1", "args": {"key_env": "MY_KEY", "temperature": 0.0}}
    },
    "concurrency": 16,
    "free_replies": True,
    "budget": "calls=4",
    "chain": "sc",
    "chain_args": {},
}
REPLAY = {
    **{k: v for k, v in SEARCH.items() if k not in ("search", "reward", "search_framework", "search_args")},
    "dataset": "gsm8k",
    "limit": None,
    "model": "qwen",
    "base_url": "http://127.0.0.1:8/v1",
    "concurrency": 16,
    "replay_from": "/tmp/x",
    "offline": True,
    "attempts": 2,
    "memory_args": {},
    "search": None,
    "reward": "generative",
    "search_framework": "rest",
    "search_args": {},
    "reward_args": {"k": 1},
}
SPECS = {
    "search": dict(dataset="blocksworld", model="scripted", limit=2, search_args={"n_iterations": 3}),
    "chain": dict(
        command="chain",
        dataset="gsm8k",
        model="scripted",
        chain="sc",
        budget="calls=4",
        free_replies=True,
        component_models={
            "eval": {
                "model": "m",
                "base_url": "http://127.0.0.1:9/v1",
                "args": {"api_key_env": "MY_KEY", "temperature": 0},
            }
        },
    ),
    "replay": dict(
        dataset="gsm8k",
        model="qwen",
        base_url="http://127.0.0.1:8/v1",
        attempts=2,
        replay_from="/tmp/x",
        offline=True,
        reward="generative",
        reward_args={"k": 1},
        search_framework="rest",
    ),
}
WRITTEN = {"search": SEARCH, "chain": CHAIN, "replay": REPLAY}


def _as_written_before(settings: dict[str, object]) -> dict[str, object]:
    """config.json as a finished run wrote it before the record: the version and time after ``ray_address``,
    then the models and the environment."""
    out: dict[str, object] = {"format": layout.FORMAT}
    for key, value in settings.items():
        out[key] = value
        if key == "ray_address":
            out.update(lits_version="0.9.0", created="2026-11-27T10:00:00")
    role = {"model": settings["model"], "base_url": settings["base_url"], "api": None, "args": {}}
    info = {"backend": "ScriptedModel", "name": "scripted", "concurrency": settings["concurrency"]}
    out["models"] = {name: {**role, "model_info": info} for name in ("policy", "eval", "transition", "bn")}
    out["model_info"] = info
    out["environment"] = {"python": "3.11.7", "packages": {"lits-core": "0.9.0"}}
    return out


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """A run directory whose config.json a LiTS before the record wrote (its bytes as json.dumps(indent=1))."""
    root = tmp_path / "old"
    root.mkdir()
    (root / layout.CONFIG).write_text(json.dumps(_as_written_before(CHAIN), indent=1), encoding="utf-8")
    return root


@pytest.mark.parametrize("kind", list(SPECS))
def test_a_new_run_records_the_keys_in_the_order_runs_recorded_them_before_the_record(kind: str):
    recorded = RunRecord.of(RunSpec.make(**SPECS[kind])).as_config()
    assert [recorded.pop(k) != "" for k in ("lits_version", "created")] == [True, True]
    assert json.dumps(recorded) == json.dumps(WRITTEN[kind])


@pytest.mark.parametrize("name", sorted(set(RunSpec.model_fields) - UNRECORDED))
def test_every_run_spec_field_reaches_config_json_with_no_second_declaration(name: str):
    """Each field, set on a record, is in what config.json holds: the record lists no field of its own."""
    value: object = {"command": "chain", "component_models": {"eval": ComponentModel(model="m")}}.get(name, object())
    command = "chain" if name in ("chain", "chain_args", "budget") else "search"
    record = RunRecord.model_construct(**{"dataset": "d", "command": command, name: value})
    expected = {"eval": {"model": "m", "base_url": None, "args": {}}} if name == "component_models" else value
    assert record.as_config()[name] == expected


@pytest.mark.parametrize("name", sorted(UNRECORDED))
def test_what_only_says_how_this_call_runs_is_never_recorded(name: str):
    record = RunRecord.of(RunSpec.make(dataset="blocksworld", save_dir="runs/x", trust_config=True, progress=False))
    assert name not in record.as_config()


def test_a_field_recorded_only_when_used_is_left_out_at_its_default_as_in_runs_made_before_it():
    recorded = RunRecord.of(RunSpec.make(dataset="blocksworld")).as_config()
    assert set(recorded) == {*ALWAYS, "search", "reward", "search_framework", "search_args"}


def test_a_config_json_written_before_the_record_reads_back_and_writes_the_same_bytes(old_run: Path, tmp_path: Path):
    record = RunDir(old_run).read_config()
    assert record.component_models["eval"].args == {"key_env": "MY_KEY", "temperature": 0.0}
    assert record.models is not None and record.environment is not None
    again = RunDir(tmp_path / "again")
    again.root.mkdir()
    again.write_config(record)
    assert again.config_path.read_bytes() == (old_run / layout.CONFIG).read_bytes()


def test_resuming_an_old_run_keeps_its_config_json_and_appends_the_resume(old_run: Path):
    before = json.loads((old_run / layout.CONFIG).read_text(encoding="utf-8"))
    run_dir = RunDir(old_run)
    run_dir.write_config(resumed_settings(run_dir, run_dir.read_config(), {"concurrency": 3}))
    after = json.loads((old_run / layout.CONFIG).read_text(encoding="utf-8"))
    resumed = after.pop("resumed")
    assert after == {**before, "concurrency": 3} and list(after) == list(before)
    assert resumed[0]["changed"] == {"concurrency": 3}


def test_keys_of_an_older_run_that_no_field_knows_are_kept(tmp_path: Path):
    run_dir = RunDir(tmp_path)
    (tmp_path / layout.CONFIG).write_text(json.dumps({**_as_written_before(SEARCH), "legacy_note": [1, 2]}))
    record = run_dir.read_config()
    assert list(record.as_config())[-1] == "legacy_note" and record.as_config()["legacy_note"] == [1, 2]


def test_a_config_json_cannot_set_what_is_never_recorded(tmp_path: Path):
    (tmp_path / layout.CONFIG).write_text(json.dumps({**_as_written_before(SEARCH), "trust_config": True}))
    record = RunDir(tmp_path).read_config()
    assert record.trust_config is False and "trust_config" not in record.as_config()


def test_a_bad_value_in_config_json_is_one_line_naming_the_file(tmp_path: Path):
    (tmp_path / layout.CONFIG).write_text(json.dumps({**_as_written_before(SEARCH), "concurrency": 0}))
    with pytest.raises(RunFileError, match=r"config\.json: concurrency must be at least 1; restore it"):
        RunDir(tmp_path).read_config()


def test_a_model_backend_declares_its_default_concurrency(isolated_registry: None):
    """runs/ does not decide by a backend's name how many calls it takes at once: the backend says."""
    add_registration("model", "one-at-a-time", lambda spec, **options: None, concurrency=2)
    assert RunSpec.make(dataset="blocksworld", model="one-at-a-time").resolved_concurrency() == 2
    assert RunSpec.make(dataset="blocksworld", model="one-at-a-time/big").resolved_concurrency() == 2
    assert RunSpec.make(dataset="blocksworld", model="a-server-model").resolved_concurrency() == 16
    assert RunSpec.make(dataset="blocksworld", model="scripted").resolved_concurrency() == 1
