"""``lits export``: training data from finished runs, in the columns TRL's trainers read, labels checked by hand.

The columns each trainer requires (TRL's "Dataset formats and types" page): SFTTrainer's conversational
prompt-completion ``prompt`` / ``completion`` (lists of messages), DPOTrainer's conversational preference
``prompt`` / ``chosen`` / ``rejected``, PRMTrainer's stepwise supervision ``prompt`` / ``completions`` (list of
str) / ``labels`` (list of bool); OpenRLHF's process reward dataset reads ``--input_key`` (text with a
placeholder token after each step) and ``--label_key`` (one reward token per placeholder).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lits
from lits.agents.tree.journal import TreeJournal
from lits.cli.main import main
from lits.export import export_runs
from lits.export.rows import RowOptions
from lits.structures.language_grounded import ThoughtState, ThoughtStep
from lits.structures.node import MCTSNode
from lits.testing.servers.openai_compat import FakeOpenAIServer

GOLD = "5"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def is_messages(value: object, role: str | None = None) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and set(m) == {"role", "content"} for m in value)
        and (role is None or all(m["role"] == role for m in value))
    )


def check_trl_columns(out: Path) -> None:
    """Each kind's rows have the columns and types TRL's SFT, DPO and PRM trainers read."""
    for row in read_jsonl(out / "sft.jsonl"):
        assert is_messages(row["prompt"]) and is_messages(row["completion"], "assistant")
    for row in read_jsonl(out / "preference.jsonl"):
        assert is_messages(row["prompt"]) and is_messages(row["chosen"], "assistant")
        assert is_messages(row["rejected"], "assistant") and row["chosen"] != row["rejected"]
        assert row["margin"] > 0
    for row in read_jsonl(out / "process.jsonl"):
        assert isinstance(row["prompt"], str) and row["completions"]
        assert all(isinstance(s, str) and s for s in row["completions"])
        assert [type(x) for x in row["labels"]] == [bool] * len(row["completions"])


def load_with_datasets(out: Path) -> dict[str, Any]:
    datasets = pytest.importorskip("datasets")
    return {
        kind: datasets.load_dataset("json", data_files=str(out / f"{kind}.jsonl"), split="train")
        for kind in ("sft", "preference", "process")
    }


# -- a hand-built tree -------------------------------------------------------------------------------------


def _node(node_id: int, parent: MCTSNode | None, text: str | None = None, answer: str | None = None) -> MCTSNode:
    state = ThoughtState() if parent is None else parent.state.copy()  # type: ignore[union-attr]
    step = None
    if text is not None:
        step = ThoughtStep(action=text, answer=answer)
        list.append(state, step)
    node = MCTSNode(id=node_id, step=step, action=text, state=state, is_terminal=answer is not None)
    if parent is not None:
        parent.add_child(node)
    return node


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    """A GSM8K MCTS run of one instance whose tree is written by hand (gold answer 5)::

        root ─ a "Add the apples." ─ a1 "The answer is 5"  (terminal, correct)
             │                    └ a2 "The answer is 6"  (terminal, wrong)
             └ b "Subtract."      ─ b1 "The answer is 7"  (terminal, wrong)

    backed-up rollouts ending at a1, a1, a2, b1 and b (a rollout stopped before a terminal).
    """
    run = tmp_path / "hand"
    root = _node(0, None)
    a = _node(1, root, "Add the apples.")
    b = _node(2, root, "Subtract.")
    a1 = _node(3, a, "The answer is 5", "5")
    a2 = _node(4, a, "The answer is 6", "6")
    b1 = _node(5, b, "The answer is 7", "7")
    journal = TreeJournal(run / "checkpoints" / "0.journal.jsonl")
    journal.append(5, 6, {}, [root, a, b, a1, a2, b1], [3, 3, 4, 5, 2])
    journal.compact()
    example = {"id": "q0", "query": "Tom has 2 apples and gets 3 more. How many?", "answer": GOLD}
    record = {
        "idx": 0,
        "id": "q0",
        "query": example["query"],
        "example": {"answer": GOLD},
        "mode": "search",
        "solved_by_agent": True,
        "stopped": None,
        "iterations": 5,
        "final_state": a1.state.to_dict(),
        "eval": {"solved": True, "answer": "5"},
        "answer_selection": None,
        "search_stats": None,
        "proposals": [],
    }
    config = {"format": 2, "command": "search", "dataset": "gsm8k", "search": "mcts", "search_args": {}}
    for relative, payload in (
        ("config.json", config),
        ("results/0.json", record),
        ("paths/0.json", [n.to_flat_dict() for n in (root, a, a1)]),
        ("terminal_nodes/0.json", [n.to_flat_dict() for n in (a1, a2, b1)]),
    ):
        (run / relative).parent.mkdir(parents=True, exist_ok=True)
        (run / relative).write_text(json.dumps(payload), encoding="utf-8")
    return run


def test_process_labels_are_the_share_of_rollouts_through_each_step_that_end_correct(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["process"])
    rows = {tuple(r["completions"]): (r["values"], r["labels"]) for r in read_jsonl(tmp_path / "out" / "process.jsonl")}
    # a: rollouts a1, a1, a2 -> 2/3; a1: 2 of 2; a2: 0 of 1; b: rollouts b1, b -> 0 of 2; b1: 0 of 1
    assert rows == {
        ("Add the apples.", "The answer is 5"): ([0.666667, 1.0], [True, True]),
        ("Add the apples.", "The answer is 6"): ([0.666667, 0.0], [True, False]),
        ("Subtract.", "The answer is 7"): ([0.0, 0.0], [False, False]),
        ("Subtract.",): ([0.0], [False]),  # the rollout that stopped at b
    }


def test_values_from_terminals_count_the_correct_terminal_nodes_under_each_step(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["process"], source="terminals")
    rows = {tuple(r["completions"]): r["values"] for r in read_jsonl(tmp_path / "out" / "process.jsonl")}
    assert rows[("Add the apples.", "The answer is 5")] == [0.5, 1.0]  # a: a1 of a1, a2
    assert rows[("Subtract.", "The answer is 7")] == [0.0, 0.0]


def test_a_step_with_fewer_outcomes_than_min_visits_ends_its_row(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["process"], options=RowOptions(min_visits=2))
    rows = sorted(r["completions"] for r in read_jsonl(tmp_path / "out" / "process.jsonl"))
    assert rows == [["Add the apples."], ["Add the apples.", "The answer is 5"], ["Subtract."]]


def test_preference_pairs_are_siblings_one_reaching_a_correct_answer_the_other_none(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["preference"])
    pairs = {
        (r["chosen"][0]["content"], r["rejected"][0]["content"]): r["margin"]
        for r in read_jsonl(tmp_path / "out" / "preference.jsonl")
    }
    assert pairs == {("Add the apples.", "Subtract."): 0.666667, ("The answer is 5", "The answer is 6"): 1.0}


def test_a_pair_prompt_is_the_policy_prompt_at_the_parent_state(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["preference"])
    by_chosen = {r["chosen"][0]["content"]: r["prompt"] for r in read_jsonl(tmp_path / "out" / "preference.jsonl")}
    last = by_chosen["The answer is 5"][-1]
    assert last["role"] == "user" and "Steps so far:\nStep 1: Add the apples." in last["content"]
    assert "Write only step 2" in last["content"]


def test_sft_completion_is_the_solved_path_and_never_the_gold(hand_run, tmp_path):
    (hand_run / "paths" / "0.json").write_text("[]")  # no chosen path: the first correct terminal's
    export_runs([hand_run], tmp_path / "out", kinds=["sft"])
    [row] = read_jsonl(tmp_path / "out" / "sft.jsonl")
    assert row["completion"] == [{"role": "assistant", "content": "Add the apples.\nThe answer is 5"}]
    assert row["instance_id"] == "q0" and "Tom has 2 apples" in row["prompt"][-1]["content"]


def test_sft_per_step_pairs_each_solved_step_with_the_policy_prompt_before_it(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["sft"], options=RowOptions(per_step=True))
    rows = read_jsonl(tmp_path / "out" / "sft.jsonl")
    assert [r["completion"][0]["content"] for r in rows] == ["Add the apples.", "The answer is 5"]
    assert "Steps so far" not in rows[0]["prompt"][-1]["content"]
    assert "Step 1: Add the apples.\nWrite only step 2" in rows[1]["prompt"][-1]["content"]


def test_no_examples_keeps_the_system_prompt_and_the_last_ask(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["preference"], options=RowOptions(examples=False))
    for row in read_jsonl(tmp_path / "out" / "preference.jsonl"):
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]


def test_a_policy_that_cannot_render_its_prompt_gets_the_problem_and_steps_and_the_card_says_so(
    hand_run, tmp_path, monkeypatch
):
    from lits.components.policy.concat import ConcatPolicy

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("needs a model")

    monkeypatch.setattr(ConcatPolicy, "messages", broken)
    report = export_runs([hand_run], tmp_path / "out", kinds=["preference"])
    prompts = {r["chosen"][0]["content"]: r["prompt"] for r in read_jsonl(tmp_path / "out" / "preference.jsonl")}
    assert prompts["The answer is 5"] == [
        {"role": "user", "content": "Tom has 2 apples and gets 3 more. How many?\nStep 1: Add the apples."}
    ]
    assert "could not render 2 prompt(s)" in (tmp_path / "out" / "README.md").read_text()
    assert len(report.notes) == 1


def test_openrlhf_style_puts_a_placeholder_after_each_step_and_a_reward_token_per_step(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out", kinds=["process"], options=RowOptions(style="openrlhf"))
    rows = {r["input"]: r["label"] for r in read_jsonl(tmp_path / "out" / "process.jsonl")}
    text = "Tom has 2 apples and gets 3 more. How many?\nAdd the apples. ки\nThe answer is 6 ки"
    assert rows[text] == ["+", "-"]
    assert all(key.count("ки") == len(labels) for key, labels in rows.items())


def test_a_hash_of_the_instance_id_holds_the_same_instances_out_every_time(hand_run, tmp_path):
    first = export_runs([hand_run], tmp_path / "a", kinds=["process"], holdout_share=0.999)
    second = export_runs([hand_run], tmp_path / "b", kinds=["process"], holdout_share=0.999)
    assert first.counts == second.counts == {"process": {"rows": 0, "holdout": 4}}
    assert (tmp_path / "a" / "process.holdout.jsonl").read_bytes() == (
        tmp_path / "b" / "process.holdout.jsonl"
    ).read_bytes()


def test_listed_holdout_ids_go_to_the_holdout_file(hand_run, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_text("# held out\nq0\n")
    assert (
        main(["export", str(hand_run), "--out", str(tmp_path / "out"), "--kind", "sft", "--holdout-ids", str(ids)]) == 0
    )
    assert (
        read_jsonl(tmp_path / "out" / "sft.jsonl") == []
        and len(read_jsonl(tmp_path / "out" / "sft.holdout.jsonl")) == 1
    )


def test_the_card_names_the_run_and_counts_rows_and_labels(hand_run, tmp_path):
    export_runs([hand_run], tmp_path / "out")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "| hand | search |" in card and "gsm8k" in card
    assert "| process | process.jsonl | 4 | 0 |" in card and "3 positive / 4 negative steps" in card
    assert "| preference | preference.jsonl | 2 | 0 |" in card


def test_identical_rows_from_two_runs_are_written_once(hand_run, tmp_path):
    import shutil

    shutil.copytree(hand_run, tmp_path / "again")
    report = export_runs([hand_run, tmp_path / "again"], tmp_path / "out", kinds=["sft", "process"])
    assert report.counts == {"sft": {"rows": 1, "holdout": 0}, "process": {"rows": 4, "holdout": 0}}


def test_export_leaves_the_run_unchanged(hand_run, tmp_path):
    before = {p: p.read_bytes() for p in hand_run.rglob("*") if p.is_file()}
    export_runs([hand_run], tmp_path / "out")
    assert {p: p.read_bytes() for p in hand_run.rglob("*") if p.is_file()} == before


# -- bad input ------------------------------------------------------------------------------------------------


def _one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_directory_that_is_not_a_run_is_one_line(tmp_path, capsys):
    assert "not a LiTS run directory" in _one_error(capsys, ["export", str(tmp_path), "--out", str(tmp_path / "o")])


def test_a_run_with_no_finished_instance_is_one_line_naming_resume(hand_run, tmp_path, capsys):
    (hand_run / "results" / "0.json").unlink()
    err = _one_error(capsys, ["export", str(hand_run), "--out", str(tmp_path / "o")])
    assert "no finished instances" in err and "--resume" in err


def test_preference_pairs_from_a_chain_run_alone_are_refused_in_one_line(tmp_path, capsys):
    lits.chain("blocksworld", model="scripted", limit=1, save_dir=str(tmp_path / "chain"))
    capsys.readouterr()
    err = _one_error(capsys, ["export", str(tmp_path / "chain"), "--kind", "preference", "--out", str(tmp_path / "o")])
    assert "need a search run" in err


# -- real runs: BlocksWorld MCTS and GSM8K ToT-BFS ------------------------------------------------------------


def search_blocksworld_mcts(save: Path) -> Path:
    """Two BlocksWorld instances, MCTS with 6 iterations, on the scripted model."""
    lits.search("blocksworld", model="scripted", limit=2, search_args={"n_iterations": 6}, save_dir=str(save))
    return save


@pytest.fixture(scope="module")
def blocksworld_mcts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return search_blocksworld_mcts(tmp_path_factory.mktemp("bw") / "bw-mcts")


def two_minded_solver(golds: dict[str, str]) -> Any:
    """A chat model whose first sample of step 1 works the problem out (and then states the gold answer) and
    whose second guesses (and then states a wrong one); it says Yes to every judge."""

    def reply(prompt: str, body: dict[str, Any], index: int) -> str:
        messages = body.get("messages") or []
        ask = str(messages[-1]["content"]) if messages else prompt
        if "Yes or No" in ask:
            return "Yes"
        if "Steps so far" not in ask:
            return "Work it out step by step." if index == 0 else "Guess."
        if "Step 1: Guess." in ask:
            return "The answer is 999999."
        gold = next((g for question, g in golds.items() if question in ask), "0")
        return f"The answer is {gold}."

    return reply


def search_gsm8k_tot(save: Path) -> Path:
    """Two GSM8K instances, ToT-BFS with beam 2, against the two-minded solver on a loopback server."""
    from lits_math.data import load_gsm8k

    with FakeOpenAIServer(responder=two_minded_solver({e["query"]: e["answer"] for e in load_gsm8k()})) as server:
        lits.search(
            "gsm8k",
            model="m",
            base_url=server.base_url,
            limit=2,
            search_framework="tot_bfs",
            search_args={"beam_width": 2},
            save_dir=str(save),
        )
    return save


@pytest.fixture(scope="module")
def gsm8k_tot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return search_gsm8k_tot(tmp_path_factory.mktemp("gsm") / "gsm-tot")


@pytest.mark.parametrize("run", ["blocksworld_mcts", "gsm8k_tot"])
def test_a_search_run_exports_all_three_kinds_in_trl_columns(run, request, tmp_path):
    source = request.getfixturevalue(run)
    report = export_runs([source], tmp_path / "out")
    assert all(report.counts[kind]["rows"] > 0 for kind in ("sft", "preference", "process")), report.counts
    check_trl_columns(tmp_path / "out")
    loaded = load_with_datasets(tmp_path / "out")
    assert {"prompt", "completion"} <= set(loaded["sft"].column_names)
    assert {"prompt", "chosen", "rejected"} <= set(loaded["preference"].column_names)
    assert {"prompt", "completions", "labels"} <= set(loaded["process"].column_names)
    assert loaded["process"].features["labels"].feature.dtype == "bool"


def test_gsm8k_pairs_prefer_the_worked_step_over_the_guess(gsm8k_tot, tmp_path):
    export_runs([gsm8k_tot], tmp_path / "out", kinds=["preference"])
    pairs = {
        (r["chosen"][0]["content"], r["rejected"][0]["content"])
        for r in read_jsonl(tmp_path / "out" / "preference.jsonl")
    }
    assert ("Work it out step by step.", "Guess.") in pairs


def test_the_cli_writes_parquet_that_datasets_reads(blocksworld_mcts, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    assert main(["export", str(blocksworld_mcts), "--format", "parquet", "--out", str(tmp_path / "out")]) == 0
    table = datasets.Dataset.from_parquet(str(tmp_path / "out" / "process.parquet"))
    assert {"prompt", "completions", "labels"} <= set(table.column_names)
    assert "process:" in capsys.readouterr().out


def test_a_chain_run_gives_sft_and_outcome_labels_and_says_it_has_no_pairs(tmp_path, capsys):
    lits.chain("blocksworld", model="scripted", limit=2, save_dir=str(tmp_path / "chain"))
    capsys.readouterr()
    assert main(["export", str(tmp_path / "chain"), "--out", str(tmp_path / "out")]) == 0
    assert "chain run: no preference pairs from it" in capsys.readouterr().err
    solved = {r["instance_id"] for r in read_jsonl(tmp_path / "out" / "sft.jsonl")}
    for row in read_jsonl(tmp_path / "out" / "process.jsonl"):  # one rollout: every step has its outcome
        assert set(row["labels"]) == {row["instance_id"] in solved}
        assert row["prompt"].startswith("Start: ") and "\nGoal: " in row["prompt"]


def test_a_tool_use_step_is_the_model_turn_without_the_tool_observation():
    from lits.export.rows import step_text
    from lits.structures.node import SearchNode
    from lits.structures.tool_use import ToolUseStep

    step = ToolUseStep(think="Look it up.", observation="rating: 4.3", assistant_message="Thought: Look it up.")
    assert step_text(SearchNode(step=step)) == "Thought: Look it up."
