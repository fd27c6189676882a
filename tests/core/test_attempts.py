"""``attempts`` (pass@N) and ``memory_args`` (augmentors) from Python, with the scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import lits
from lits.memory import Augmentor, AugmentorContext, Outcome
from lits.errors import UserError
from lits.memory.notes import HEADING, notes_block, offering, with_notes
from lits.runs.spec import SpecError
from lits.registry import isolated_registry, register_augmentor
from lits.structures.base import Step

BLOCKS = {"dataset": "blocksworld", "model": "scripted", "limit": 4}


def _records(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "results").iterdir())}


def test_one_attempt_is_the_run_without_attempts(tmp_path):
    plain = lits.chain(**BLOCKS, save_dir=tmp_path / "plain")
    once = lits.chain(**BLOCKS, attempts=1, save_dir=tmp_path / "once")
    assert _records(tmp_path / "plain") == _records(tmp_path / "once")
    assert not (tmp_path / "once" / "attempts").exists()
    assert "attempts" not in json.loads((tmp_path / "once" / "config.json").read_text())
    assert "pass_at" not in plain.summary and plain.solved == once.solved


def test_first_attempt_is_the_run_without_attempts(tmp_path):
    lits.chain(**BLOCKS, save_dir=tmp_path / "plain")
    lits.chain(**BLOCKS, attempts=3, save_dir=tmp_path / "three")
    for name in ("0.json", "1.json"):
        first = json.loads((tmp_path / "three" / "attempts" / name.replace(".json", ".0.json")).read_text())
        plain = json.loads((tmp_path / "plain" / "results" / name).read_text())
        assert first["record"] == plain


def test_every_attempt_is_recorded_and_a_solving_attempt_ends_the_instance(tmp_path):
    result = lits.chain(**BLOCKS, attempts=3, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    for outcome in result.instances:
        attempts = outcome.record["attempts"]
        assert [a["attempt"] for a in attempts] == list(range(len(attempts)))
        assert all(not a["solved"] for a in attempts[:-1])
        assert len(attempts) == 3 or attempts[-1]["solved"]
        assert outcome.solved == attempts[-1]["solved"]


def test_pass_at_1_counts_first_attempts_and_pass_at_n_any(tmp_path):
    result = lits.chain(**BLOCKS, attempts=3, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    tried = result.summary["pass_at"]
    firsts = sum(bool(i.record["attempts"][0]["solved"]) for i in result.instances)
    assert (tried["n"], tried["solved_at_1"], tried["solved_at_n"]) == (3, firsts, result.solved)
    assert tried["solved_at_n"] > tried["solved_at_1"]  # the lessons changed the later attempts
    assert "pass@1 / pass@3" in (tmp_path / "r" / "eval.log").read_text()


def test_without_memory_a_greedy_attempt_repeats_itself(tmp_path):
    tried = lits.chain(**BLOCKS, attempts=3, save_dir=tmp_path / "r").summary["pass_at"]
    assert tried["solved_at_n"] == tried["solved_at_1"]


def test_a_reflection_lesson_is_shown_to_the_next_attempt(tmp_path):
    result = lits.chain(**BLOCKS, attempts=2, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    failed_first = [i for i in result.instances if not i.record["attempts"][0]["solved"]]
    assert failed_first
    for outcome in failed_first:
        first, second = outcome.record["attempts"]
        assert first["notes"] is None and second["notes"].startswith(f"{HEADING}\n- Lesson: ")
    calls = [json.loads(line) for line in (tmp_path / "r" / "inference.jsonl").read_text().splitlines()]
    assert sum(c["context"].get("component") == "memory" for c in calls) == len(failed_first)


def test_search_runs_attempts_and_writes_the_final_attempt_s_tree(tmp_path):
    result = lits.search(
        **BLOCKS,
        attempts=2,
        memory_args={"augmentors": "fact,critic"},
        search_args={"n_iterations": 2},
        save_dir=tmp_path / "s",
    )
    assert result.summary["pass_at"]["instances"] == 4
    for outcome in result.instances:
        last = len(outcome.record["attempts"]) - 1
        saved = json.loads((tmp_path / "s" / "attempts" / f"{outcome.idx}.{last}.json").read_text())
        path = json.loads((tmp_path / "s" / "paths" / f"{outcome.idx}.json").read_text())
        assert saved["files"][f"paths/{outcome.idx}.json"] == path


def test_the_plan_bounds_calls_over_every_attempt():
    once = lits.plan(command="chain", **BLOCKS)
    thrice = lits.plan(command="chain", **BLOCKS, attempts=3, memory_args={"augmentors": "reflection"})
    assert thrice["calls_per_instance"] == 3 * once["calls_per_instance"] + 2


def test_an_unknown_augmentor_is_one_line_naming_the_registered_ones(tmp_path):
    with pytest.raises(UserError, match=r"unknown augmentor 'facts'.*registered augmentors: .*fact"):
        lits.chain(**BLOCKS, memory_args={"augmentors": "facts"}, save_dir=tmp_path / "r")
    assert not (tmp_path / "r" / "results").exists()


def test_an_option_no_named_augmentor_reads_is_refused(tmp_path):
    with pytest.raises(UserError, match="--memory-arg max_fact is not an option.*max_facts"):
        lits.chain(**BLOCKS, memory_args={"augmentors": "fact", "max_fact": 3}, save_dir=tmp_path / "r")


def test_attempts_must_be_at_least_one(tmp_path):
    with pytest.raises(SpecError, match="attempts must be at least 1"):
        lits.chain(**BLOCKS, attempts=0, save_dir=tmp_path / "r")


def test_notes_reach_a_text_query_only_while_offered():
    block = notes_block(["Lesson: check the goal", " "])
    assert block == f"{HEADING}\n- Lesson: check the goal"
    with offering(block):
        assert with_notes("Stack A on B") == f"Stack A on B\n\n{block}"
        assert with_notes({"goal": 1}) == {"goal": 1}
    assert with_notes("Stack A on B") == "Stack A on B"


class Counting(Augmentor):
    """Remembers how many attempts failed and says so."""

    OPTIONS = {"label": "failed"}

    def on_trajectory_complete(self, trajectory: object, outcome: Outcome, context: AugmentorContext) -> None:
        if not outcome.solved:
            self.memory["count"] = int(str(self.memory.get("count", 0))) + 1

    def notes(self, context: AugmentorContext) -> list[str]:
        return [f"{self.options['label']}: {self.memory['count']}"] if "count" in self.memory else []


def test_a_registered_augmentor_runs_with_its_options_and_keeps_its_memory(tmp_path):
    with isolated_registry():
        register_augmentor("counting")(Counting)
        result = lits.chain(
            **BLOCKS,
            attempts=3,
            memory_args={"augmentors": "counting", "label": "misses"},
            chain_args={"avoid_repeats": False},  # the scripted chains must fail to retry
            save_dir=tmp_path / "r",
        )
    unsolved = [i for i in result.instances if not i.solved]
    assert unsolved
    notes = [a["notes"] for a in unsolved[0].record["attempts"]]
    assert notes == [None, f"{HEADING}\n- misses: 1", f"{HEADING}\n- misses: 2"]
    saved = json.loads((tmp_path / "r" / "attempts" / f"{unsolved[0].idx}.2.json").read_text())
    assert saved["memory"] == {"counting": {"count": 3}}


def test_the_viewer_draws_the_last_attempt_s_tree(tmp_path):
    result = lits.search(
        **BLOCKS,
        attempts=2,
        memory_args={"augmentors": "reflection"},
        search_args={"n_iterations": 2},
        save_dir=tmp_path / "s",
    )
    retried = next(i for i in result.instances if len(i.record["attempts"]) == 2)
    tree = result.tree(retried.idx)
    path = json.loads((tmp_path / "s" / "paths" / f"{retried.idx}.json").read_text())
    labels = {node["id"]: node["label"] for node in tree["nodes"]} if tree else {}
    assert [labels.get(node["id"]) for node in path[1:]] == [node["action"]["text"] for node in path[1:]]
    assert (tmp_path / "s" / "checkpoints" / "attempt-1" / f"{retried.idx}.journal.jsonl").exists()


def test_ray_refuses_memory_over_the_run_in_one_line(tmp_path):
    with pytest.raises(UserError, match="scope=run passes memory from instance to instance in order"):
        lits.chain(
            **BLOCKS,
            attempts=2,
            memory_args={"augmentors": "fact", "scope": "run"},
            executor="ray",
            save_dir=tmp_path / "r",
        )


class NoPickUp(Augmentor):
    """Refuses every pick-up, before it is executed."""

    def check_step(self, state: object, step: Step, context: AugmentorContext) -> str | None:
        return "picking up is not allowed here" if str(step.get_action()).startswith("pick up") else None


def test_a_step_an_augmentor_refuses_is_recorded_with_the_reason_and_not_executed(tmp_path):
    with isolated_registry():
        register_augmentor("no_pick_up")(NoPickUp)
        result = lits.chain(**BLOCKS, memory_args={"augmentors": "no_pick_up"}, save_dir=tmp_path / "r")
    steps = [s for i in result.instances for s in i.record["final_state"]["steps"]]
    refused = [s for s in steps if str(s["action"]["text"]).startswith("pick up")]
    assert refused and all(s["error"] == "picking up is not allowed here" for s in refused)
    assert all(s["error"] is None for s in steps if s not in refused)


def test_lits_eval_recomputes_pass_at_n_from_the_saved_attempts(tmp_path):
    from lits.cli.main import main

    result = lits.chain(**BLOCKS, attempts=3, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    written = result.summary["pass_at"]
    (tmp_path / "r" / "eval_results.json").unlink()
    assert main(["eval", "--save-dir", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "eval_results.json").read_text())["pass_at"] == written


def test_lits_plugins_shows_an_augmentor_s_options(capsys):
    from lits.cli.main import main

    assert main(["plugins", "--show", "fact"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "options (--memory-arg KEY=VALUE): max_facts=8"


def test_memory_never_crosses_instances_by_default(tmp_path):
    with isolated_registry():
        register_augmentor("counting")(Counting)
        result = lits.chain(**BLOCKS, attempts=2, memory_args={"augmentors": "counting"}, save_dir=tmp_path / "r")
    assert [i.record["attempts"][0]["notes"] for i in result.instances] == [None] * 4


def test_scope_run_carries_memory_from_each_instance_to_the_next(tmp_path):
    with isolated_registry():
        register_augmentor("counting")(Counting)
        result = lits.chain(**BLOCKS, memory_args={"augmentors": "counting", "scope": "run"}, save_dir=tmp_path / "r")
    failed_before = [sum(not j.solved for j in result.instances[:k]) for k in range(4)]
    shown = [i.record["attempts"][0]["notes"] for i in result.instances]
    assert shown == [None if n == 0 else f"{HEADING}\n- failed: {n}" for n in failed_before]
    assert failed_before[-1] >= 1
    with isolated_registry():
        register_augmentor("counting")(Counting)
        lits.chain(
            **BLOCKS, memory_args={"augmentors": "counting", "scope": "run"}, concurrency=4, save_dir=tmp_path / "c4"
        )
    assert _records(tmp_path / "c4") == _records(tmp_path / "r")


def test_an_unknown_memory_scope_is_one_line(tmp_path):
    with pytest.raises(UserError, match="--memory-arg scope=world is not a memory scope; scopes: instance, run"):
        lits.chain(**BLOCKS, memory_args={"augmentors": "fact", "scope": "world"}, save_dir=tmp_path / "r")


def test_on_resume_the_interrupted_attempt_continues_from_its_checkpoints(tmp_path, monkeypatch):
    # Attempt 0 was saved and attempt 1 was running when the process died: attempt 1 must resume, not restart
    # (a search that restarts deletes its journal and redoes the work it had done).
    from lits.io import layout
    from lits.runs import attempts
    from lits.runs.results.artifacts import RunDir

    resumed: list[tuple[str, bool]] = []

    class Agent:
        checkpoint_dir: Path | None = None

        def run(self, query, idx, example, *, resume=False):
            resumed.append((Path(str(self.checkpoint_dir)).name, resume))
            return object()

    run_dir = RunDir(tmp_path)
    run_dir.write_json(layout.attempt(0, 0), {"record": {"eval": {"solved": False}}, "files": {}, "memory": {}})
    monkeypatch.setattr(attempts, "result_record", lambda *args: {"eval": {"solved": False}, "stopped": "budget"})
    components = type("Components", (), {"task_type": "env_grounded", "policy": SimpleNamespace(base_model=None)})()
    runner = attempts.InstanceAttempts(Agent, components, run_dir, "chain", attempts.AttemptSettings(attempts=3))
    runner.run(0, {"query": "q"}, resume=True)
    assert resumed == [("attempt-1", True), ("attempt-2", False)]


@pytest.mark.parametrize("option", ["max_facts=abc", "max_facts=0", "reflection_tokens=-3"])
def test_a_bad_option_value_is_one_line_before_any_call(tmp_path, option):
    key, value = option.split("=")
    with pytest.raises(UserError) as caught:
        lits.chain(
            **BLOCKS, attempts=2, memory_args={"augmentors": "fact,reflection", key: value}, save_dir=tmp_path / "run"
        )
    assert f"--memory-arg {key} must be a whole number" in str(caught.value)
    assert not (tmp_path / "run" / "inference.jsonl").exists()


def test_lits_eval_rejudges_every_attempt_instead_of_trusting_its_saved_flag(tmp_path):
    from lits.cli.main import main

    result = lits.chain(**BLOCKS, attempts=3, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    written = result.summary["pass_at"]
    assert written["solved_at_n"] < written["instances"]  # some attempt failed, so a stale flag would show
    for path in (tmp_path / "r" / "results").iterdir():  # as if judged by another evaluator
        record = json.loads(path.read_text())
        record["attempts"] = [{**a, "solved": not a["solved"]} for a in record["attempts"]]
        path.write_text(json.dumps(record))
    assert main(["eval", "--save-dir", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "eval_results.json").read_text())["pass_at"] == written


class _FailsOnInstance1(Augmentor):
    def on_trajectory_complete(self, trajectory, outcome, context) -> None:
        if context.idx == 1:
            raise RuntimeError("the note store is down")


def test_with_scope_run_a_failed_instance_stops_the_run_before_the_next_starts_from_its_memory(tmp_path):
    # Running on, instance 2 would start from memory instance 1 never finished, and instance 1's retry later
    # would start from memory it was never meant to see: results would depend on a transient failure.
    with isolated_registry():
        register_augmentor("flaky")(_FailsOnInstance1)
        result = lits.chain(**BLOCKS, memory_args={"augmentors": "flaky", "scope": "run"}, save_dir=tmp_path / "r")
    assert result.summary["stopped"] == "breaker"
    assert sorted(result.failed) == [1, 2, 3] and result.failed[2] == result.failed[3] == "not finished"
    assert sorted(p.name for p in (tmp_path / "r" / "results").iterdir()) == ["0.json"]


class EveryFailure(Augmentor):
    """A plugin's augmentor without a cap of its own: one line per failed attempt, for ever."""

    def on_trajectory_complete(self, trajectory: object, outcome: Outcome, context: AugmentorContext) -> None:
        if not outcome.solved:
            self.memory["seen"] = int(str(self.memory.get("seen", 0))) + 1

    def notes(self, context: AugmentorContext) -> list[str]:
        return [f"attempt failed (#{k})" for k in range(1, int(str(self.memory.get("seen", 0))) + 1)]


def test_over_a_run_reflection_keeps_only_its_latest_lessons(tmp_path):
    # With scope=run, reflection and critic notes grew to 412 lines over 200 instances (fact capped at 8).
    result = lits.chain(
        **{**BLOCKS, "limit": 8},
        attempts=2,
        memory_args={"augmentors": "reflection", "scope": "run", "max_lessons": 2},
        save_dir=tmp_path / "r",
    )
    shown = [str(a["notes"]).count("- Lesson: ") for i in result.instances for a in i.record["attempts"]]
    assert max(shown) == 2
    assert result.summary["memory"]["notes_dropped"] >= 1


def test_any_augmentor_shows_at_most_max_notes_lines_its_latest(tmp_path):
    with isolated_registry():
        register_augmentor("every_failure")(EveryFailure)
        result = lits.chain(
            **{**BLOCKS, "limit": 8},
            attempts=2,
            memory_args={"augmentors": "every_failure", "scope": "run", "max_notes": 3},
            save_dir=tmp_path / "r",
        )
    blocks = [str(a["notes"]).splitlines()[1:] for i in result.instances for a in i.record["attempts"] if a["notes"]]
    assert max(len(block) for block in blocks) == 3
    assert result.summary["memory"]["notes_left_out"] >= 1
    last = blocks[-1]  # memory runs over the run: the last block has the most to show, and shows the latest
    assert last[0] != "- attempt failed (#1)" and last[-1].startswith("- attempt failed (#")


def test_the_summary_shows_what_memory_added_to_prompts(tmp_path):
    result = lits.chain(**BLOCKS, attempts=2, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    added = result.summary["memory"]
    notes = [a["notes"] for i in result.instances for a in i.record["attempts"]]
    assert added["max_chars"] == max(len(n) + 2 for n in notes if n)
    assert added["mean_chars"] == round(sum(len(n) + 2 for n in notes if n) / len(notes), 1)
    assert "memory in prompts" in (tmp_path / "r" / "eval.log").read_text()


def test_a_truncated_attempt_file_is_one_line_naming_it_and_how_to_redo_it(tmp_path):
    lits.chain(**BLOCKS, attempts=3, memory_args={"augmentors": "reflection"}, save_dir=tmp_path / "r")
    saved = tmp_path / "r" / "attempts" / "0.0.json"
    saved.write_bytes(saved.read_bytes()[:40])
    (tmp_path / "r" / "results" / "0.json").unlink()
    result = lits.resume(tmp_path / "r")
    reason = result.failed[0]
    assert str(saved) in reason and "is damaged" in reason and "delete it" in reason and "\n" not in reason
