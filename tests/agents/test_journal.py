"""The checkpoint journal: what changed per iteration, replayed into the same tree."""

from __future__ import annotations

import json

import pytest

from lits.io import fastjson
from lits.agents import BFS, MCTS, BFSConfig, MCTSConfig
from lits.agents.tree.journal import JournalError, TreeJournal
from tests.agents.conftest import EXAMPLE

FAR = {"query": "9", "init_state_str": "0"}  # unreachable in 6 steps: the tree keeps growing


@pytest.fixture(autouse=True)
def line_per_checkpoint(monkeypatch):
    """Write every checkpoint on its own line (a fast search would merge them)."""
    monkeypatch.setattr("lits.agents.tree.journal.FLUSH_SECONDS", 0.0)


class Interrupted(Exception):
    """Stands in for a kill: raised from inside the search after some model calls."""


def _interrupt_after(parts, calls: int) -> None:
    budget = {"left": calls}
    original = parts.policy.get_actions

    def get_actions(*args, **kwargs):
        budget["left"] -= 1
        if budget["left"] < 0:
            raise Interrupted()
        return original(*args, **kwargs)

    parts.policy.get_actions = get_actions


def _journal_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_checkpoint_line_holds_only_what_changed(parts, tmp_path):
    _interrupt_after(parts, 40)
    search = MCTS(
        MCTSConfig(n_iterations=50, early_stop=False),
        parts.policy,
        parts.transition,
        parts.reward,
        checkpoint_dir=tmp_path,
    )
    with pytest.raises(Interrupted):
        search.run("9", 0, FAR)
    lines = _journal_lines(tmp_path / "0.journal.jsonl")
    assert len(lines) == search.iteration >= 5
    ids = [n["id"] for line in lines for n in line["nodes"]]
    # A node is written when created and when its state is computed, never again for a visit.
    assert max(ids.count(i) for i in set(ids)) <= 2
    assert all(len(line["paths"]) == 1 for line in lines[1:])  # one backed-up leaf per iteration
    assert all("children" not in n and "cum_rewards" not in n for line in lines for n in line["nodes"])


def test_checkpoint_lines_do_not_grow_with_the_tree(parts, tmp_path):
    search = MCTS(
        MCTSConfig(n_iterations=60, max_depth=3, early_stop=False),
        parts.policy,
        parts.transition,
        parts.reward,
        checkpoint_dir=tmp_path,
    )
    _interrupt_after(parts, 10_000)
    original = search.save_checkpoint
    sizes = []

    def measure(iteration, **kwargs):
        before = search.recorder.journal.bytes_written
        original(iteration, **kwargs)
        sizes.append(search.recorder.journal.bytes_written - before)

    search.save_checkpoint = measure
    search.run("9", 0, FAR)
    # Once the small tree (depth 3) is fully grown, an iteration only backs up one path:
    # a few hundred bytes, the same at iteration 60 as at iteration 30.
    assert max(sizes[:5]) > 2000
    assert max(sizes[-10:]) < 400 and max(sizes[-10:]) <= max(sizes[25:35]) + 20


def _resumed_and_whole(parts, tmp_path, search_cls, config, stop_after):
    """The tree of an uninterrupted search, and of one stopped after ``stop_after`` policy calls and resumed."""
    whole = search_cls(config, parts.policy, parts.transition, parts.reward)
    whole.run("9", 0, FAR)
    original = parts.policy.get_actions
    _interrupt_after(parts, stop_after)
    with pytest.raises(Interrupted):
        search_cls(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path).run("9", 0, FAR)
    parts.policy.get_actions = original
    resumed = search_cls(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path)
    resumed.run("9", 0, FAR, resume=True)
    return resumed, whole


@pytest.mark.parametrize("stop_after", [1, 3, 7, 12])
def test_mcts_resumed_from_the_journal_equals_the_uninterrupted_tree(parts, tmp_path, stop_after):
    config = MCTSConfig(n_iterations=8, early_stop=False, simulate="sample")
    resumed, whole = _resumed_and_whole(parts, tmp_path, MCTS, config, stop_after)
    assert resumed.root.to_dict() == whole.root.to_dict()
    assert resumed.stats == whole.stats


@pytest.mark.parametrize("stop_after", [2, 5])
def test_bfs_resumed_from_the_journal_equals_the_uninterrupted_tree(parts, tmp_path, stop_after):
    config = BFSConfig(beam_width=2, max_depth=4, early_stop=False)
    resumed, whole = _resumed_and_whole(parts, tmp_path, BFS, config, stop_after)
    assert resumed.root.to_dict() == whole.root.to_dict()


def test_a_torn_last_line_is_dropped_with_a_warning_and_the_search_resumes(parts, tmp_path):
    _interrupt_after(parts, 6)
    config = MCTSConfig(n_iterations=6, early_stop=False)
    with pytest.raises(Interrupted):
        MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path).run("9", 0, FAR)
    journal = tmp_path / "0.journal.jsonl"
    whole_lines = journal.read_text().count("\n")
    with journal.open("a") as fh:
        fh.write('{"iteration": 99, "nodes": [{"id"')
    with pytest.warns(UserWarning, match="torn last line"):
        root, counters = TreeJournal(journal).replay(MCTS(config, None, None, None).backup_values)
    assert counters["iteration"] == whole_lines and journal.read_text().endswith("\n")


def test_a_damaged_line_before_the_last_is_a_clear_error(tmp_path):
    journal = tmp_path / "0.journal.jsonl"
    journal.write_text('{"broken\n{"iteration": 1, "next_id": 1, "stats": {}, "nodes": [], "paths": []}\n')
    with pytest.raises(JournalError, match="line 1 is damaged"):
        TreeJournal(journal).replay()


def test_checkpoint_every_n_writes_fewer_lines_and_loses_nothing(parts, tmp_path):
    _interrupt_after(parts, 30)
    config = MCTSConfig(n_iterations=40, early_stop=False, checkpoint_every=3)
    search = MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path)
    with pytest.raises(Interrupted):
        search.run("9", 0, FAR)
    lines = _journal_lines(tmp_path / "0.journal.jsonl")
    assert [line["iteration"] for line in lines] == list(range(3, search.iteration + 1, 3))[: len(lines)]
    root, _ = TreeJournal(tmp_path / "0.journal.jsonl").replay(search.backup_values)
    assert root.visits == lines[-1]["iteration"]


def test_fast_checkpoints_share_a_line_and_replay_to_the_same_tree(parts, tmp_path, monkeypatch):
    monkeypatch.setattr("lits.agents.tree.journal.FLUSH_SECONDS", 3600.0)
    _interrupt_after(parts, 30)
    search = MCTS(
        MCTSConfig(n_iterations=40, early_stop=False),
        parts.policy,
        parts.transition,
        parts.reward,
        checkpoint_dir=tmp_path,
    )
    with pytest.raises(Interrupted):
        search.run("9", 0, FAR)
    lines = _journal_lines(tmp_path / "0.journal.jsonl")
    assert len(lines) == 1 and lines[0]["iteration"] == search.iteration  # every checkpoint, written at close
    root, _ = TreeJournal(tmp_path / "0.journal.jsonl").replay(search.backup_values)
    assert root.visits == search.iteration and len(list(root.iter_tree())) <= len(list(search.root.iter_tree()))


def test_a_fresh_run_does_not_replay_an_old_journal(parts, tmp_path):
    config = MCTSConfig(n_iterations=3, early_stop=False)
    MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path).run("9", 0, FAR)
    again = MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path)
    assert again.run("2", 0, EXAMPLE).iterations <= 3 and again.root.visits <= 3


def _merged_in_memory(lines: list[str]) -> str:
    """The compact line as the journal's first, whole-file compaction wrote it: the golden reference."""
    records = [json.loads(line) for line in lines if line.strip()]
    nodes: dict[int, dict] = {}
    merged: dict = {"compact": True, "nodes": [], "paths": [], "proposals": []}
    for record in records:
        for flat in record["nodes"]:
            nodes[int(flat["id"])] = flat
        merged["paths"].extend(record.get("paths") or [])
        merged["proposals"].extend(record.get("proposals") or [])
    merged.update({k: records[-1][k] for k in ("iteration", "next_id", "stats")})
    merged["nodes"] = [nodes[i] for i in sorted(nodes)]
    return fastjson.compact(merged) + "\n"


@pytest.mark.parametrize(
    "search_cls, config",
    [
        (MCTS, MCTSConfig(n_iterations=25, early_stop=False, simulate="sample")),
        (BFS, BFSConfig(beam_width=2, max_depth=4, early_stop=False)),
    ],
    ids=["mcts", "bfs"],
)
def test_streamed_compaction_writes_the_bytes_of_the_whole_file_merge(parts, tmp_path, search_cls, config, monkeypatch):
    path = tmp_path / "0.journal.jsonl"
    monkeypatch.setattr(TreeJournal, "compact", lambda self: self.close())  # keep the lines of the run
    search_cls(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path).run("9", 0, FAR)
    monkeypatch.undo()
    lines = path.read_text().splitlines()
    assert len(lines) > 3  # a line per checkpoint, nodes written again as they changed
    TreeJournal(path).compact()
    assert path.read_text() == _merged_in_memory(lines)
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed into place


def test_a_compacted_journal_replays_to_the_tree_of_its_lines(parts, tmp_path):
    config = MCTSConfig(n_iterations=12, early_stop=False, simulate="sample")
    search = MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path)
    search.run("9", 0, FAR)  # the run compacts its journal when the instance finishes
    assert (tmp_path / "0.journal.jsonl").read_text().count("\n") == 1
    root, counters = TreeJournal(tmp_path / "0.journal.jsonl").replay(search.backup_values)
    assert root.to_dict() == search.root.to_dict() and counters["iteration"] == search.iteration


def test_streamed_compaction_keeps_proposals_and_the_latest_node_fields_like_the_whole_file_merge(tmp_path):
    path = tmp_path / "0.journal.jsonl"
    lines = [
        '{"iteration":1,"next_id":2,"stats":{"n":1},"nodes":[{"id":0,"parent":null,"v":0.5},'
        '{"id":1,"parent":0,"v":"é\\n"}],"paths":[1],"proposals":[["a",true]]}',
        '{"iteration":2,"next_id":3,"stats":{"n":2},"nodes":[{"id":2,"parent":0,"v":1e-7},{"id":0,"parent":null,'
        '"v":0.25}],"paths":[2,1],"proposals":[["b",false],["c",true]]}',
        '{"iteration":3,"next_id":3,"stats":{"n":3},"nodes":[],"paths":[],"proposals":[]}',
    ]
    path.write_text("\n".join(lines) + "\n")
    TreeJournal(path).compact()
    assert path.read_text() == _merged_in_memory(lines)
    assert json.loads(path.read_text())["proposals"] == [["a", True], ["b", False], ["c", True]]


@pytest.mark.parametrize(
    "search_cls, config",
    [
        (MCTS, MCTSConfig(n_iterations=25, early_stop=False, simulate="sample")),
        (BFS, BFSConfig(beam_width=2, max_depth=4, early_stop=False)),
    ],
    ids=["mcts", "bfs"],
)
def test_the_journal_that_wrote_the_lines_compacts_them_from_memory_to_the_same_bytes(
    parts, tmp_path, search_cls, config, monkeypatch
):
    path = tmp_path / "0.journal.jsonl"
    compact = TreeJournal.compact
    seen: list[str] = []

    def compact_without_reading(self: TreeJournal) -> None:
        self.flush()
        seen.extend(path.read_text().splitlines())
        monkeypatch.setattr(TreeJournal, "_records", lambda self: pytest.fail("compaction read the file back"))
        compact(self)

    monkeypatch.setattr(TreeJournal, "compact", compact_without_reading)
    search_cls(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path).run("9", 0, FAR)
    assert len(seen) > 3
    assert path.read_text() == _merged_in_memory(seen)


def _journaled_node(path, node_id):
    return next(n for line in _journal_lines(path) for n in line["nodes"] if n["id"] == node_id)


def _env_tree():
    """A root, a child whose state is its parent's plus a step (as a transition copies it), and a grandchild
    whose state was rebuilt from scratch (it shares no step object with its parent's)."""
    from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
    from lits.structures.node import MCTSNode

    def step(text):
        return EnvStep(action=EnvAction(text), next_state=f"after {text}")

    root = MCTSNode(id=0, state=EnvState(init_state="start"))
    child = root.add_child(MCTSNode(id=1, state=root.state.copy()))
    child.state.append(step("a"))
    rebuilt = EnvState(init_state="start")
    rebuilt.extend([step("a"), step("b")])
    grandchild = child.add_child(MCTSNode(id=2, state=rebuilt))
    return root, child, grandchild


@pytest.fixture
def journaled_env_tree(tmp_path):
    """The tree of :func:`_env_tree` journaled in one checkpoint: the journal's path, the root and the child."""
    journal = TreeJournal(tmp_path / "0.journal.jsonl")
    root, child, grandchild = _env_tree()
    journal.append(0, 3, {}, [root, child, grandchild], [])
    journal.close()
    return journal.path, root, child


def test_a_childs_state_is_journaled_as_the_steps_after_its_parents(journaled_env_tree):
    path, _root, _child = journaled_env_tree
    state = _journaled_node(path, 1)["state"]
    assert state["parent_steps"] == 0 and [s["action"]["text"] for s in state["steps"]] == ["a"]
    assert "init_state" not in state


def test_a_state_that_does_not_share_its_parents_steps_is_journaled_whole(journaled_env_tree):
    path, _root, _child = journaled_env_tree
    state = _journaled_node(path, 2)["state"]
    assert "parent_steps" not in state and len(state["steps"]) == 2 and state["init_state"] == "start"


def test_states_journaled_as_their_parents_plus_steps_replay_to_the_same_states(journaled_env_tree):
    path, root, child = journaled_env_tree
    replayed, _ = TreeJournal(path).replay()
    assert replayed.to_dict() == root.to_dict()
    assert type(replayed.children[0].state) is type(child.state)


def test_a_deep_nodes_journal_record_is_no_larger_than_a_shallow_ones(parts, tmp_path):
    config = MCTSConfig(n_iterations=30, max_depth=8, early_stop=False)
    MCTS(config, parts.policy, parts.transition, parts.reward, checkpoint_dir=tmp_path).run("9", 0, FAR)
    nodes = [n for line in _journal_lines(tmp_path / "0.journal.jsonl") for n in line["nodes"] if n.get("state")]
    size = {n["depth"]: len(json.dumps(n["state"])) for n in nodes}
    assert max(size) >= 5 and size[max(size)] <= size[1] + 20


def test_a_state_that_writes_itself_its_own_way_is_journaled_whole(tmp_path):
    from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
    from lits.structures.node import MCTSNode
    from lits.type_registry import register_type

    @register_type
    class NotedEnvState(EnvState):
        def to_dict(self):
            return {**super().to_dict(), "note": f"{len(self)} steps"}

        @classmethod
        def from_dict(cls, payload):
            return super().from_dict({k: v for k, v in payload.items() if k != "note"})

    root = MCTSNode(id=0, state=NotedEnvState(init_state="start"))
    child = root.add_child(MCTSNode(id=1, state=root.state.copy()))
    child.state.append(EnvStep(action=EnvAction("a"), next_state="after a"))
    journal = TreeJournal(tmp_path / "0.journal.jsonl")
    journal.append(0, 2, {}, [root, child], [])
    journal.close()
    assert _journaled_node(journal.path, 1)["state"]["note"] == "1 steps"
    assert TreeJournal(journal.path).replay()[0].to_dict() == root.to_dict()
