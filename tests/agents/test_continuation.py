"""Chain-in-Tree continuation passes the search conformance kit: same tree twice, and after kills at any point."""

from __future__ import annotations

import pytest

from lits.testing import check_search
from lits.testing.search_conformance import TOY_EXAMPLE, first_difference


@pytest.mark.parametrize("search", ["mcts", "bfs"])
@pytest.mark.parametrize("method", ["direct", "sc", "sc_exact", "entropy", "confidence"])
def test_each_bn_method_resumes_exactly_after_a_kill(search, method):
    result = check_search(search, {"add_continuation": True, "bn_method": method, "n_actions": 3})
    assert result.stats["bn_decisions"] >= 1
    verdicts = [n.branching for n in result.root.iter_tree() if n.branching is not None]
    assert verdicts and all(v["method"] == method for v in verdicts)


def _tree_of_a_parallel_run(seed: int, width: int) -> tuple[dict, int]:
    """Tree-parallel MCTS with continuation on the kit's toy domain, the policy's replies delayed at random."""
    import random
    import tempfile
    import time
    from pathlib import Path

    from lits.runtime.concurrency import fan_out_width
    from lits.registry import get_registration, isolated_registry
    from lits.structures.base import step_key
    from lits.testing import search_conformance as kit

    with isolated_registry(), fan_out_width(width), tempfile.TemporaryDirectory() as tmp:
        kit._register_toy()
        config = kit._config(
            "x",
            get_registration("search", "mcts"),
            {
                "add_continuation": True,
                "bn_method": "sc_exact",
                "n_actions": 3,
                "max_depth": 3,
                "n_iterations": 24,
                "parallel_iterations": 4,
                "early_stop": False,
            },
        )
        run = kit._Run(get_registration("search", "mcts").obj, config, Path(tmp))
        propose, rng = run.search.policy.get_actions, random.Random(seed)

        def late(*args, **kwargs):
            time.sleep(rng.uniform(0, 0.02))
            return propose(*args, **kwargs)

        run.search.policy.get_actions = late
        root = run.run().root
    twins = sum(len(n.children) - len({step_key(c.step) for c in n.children}) for n in root.iter_tree())
    return root.to_dict(), twins


def test_tree_parallel_rollouts_that_end_below_one_node_reopen_it_once_and_alike_every_run():
    # Two rollouts of a batch reopening one continued node at once gave it twin children and a tree that
    # changed from run to run; reopens now run one after another in selection order.
    trees = [_tree_of_a_parallel_run(seed, width=4) for seed in range(4)]
    sequential, _ = _tree_of_a_parallel_run(0, width=1)
    assert all(twins == 0 for _tree, twins in trees)
    assert [first_difference(tree, sequential) for tree, _twins in trees] == [None] * 4  # NaN values equal too


def test_the_bn_evaluator_samples_at_bn_temperature_and_the_search_elsewhere_at_its_own():
    import tempfile
    from pathlib import Path

    from lits.registry import get_registration, isolated_registry
    from lits.testing import search_conformance as kit

    seen: list[tuple[str, float]] = []
    with isolated_registry(), tempfile.TemporaryDirectory() as tmp:
        kit._register_toy()
        config = kit._config(
            "x",
            get_registration("search", "mcts"),
            {
                "add_continuation": True,
                "bn_method": "sc_exact",
                "bn_temperature": 0.3,
                "temperature": 0.8,
                "n_actions": 2,
                "max_depth": 3,
                "n_iterations": 12,
                "early_stop": False,
            },
        )
        run = kit._Run(get_registration("search", "mcts").obj, config, Path(tmp))
        propose = run.search.policy.get_actions

        def recorded(*args, **kwargs):
            seen.append((kwargs["from_phase"], kwargs["temperature"]))
            return propose(*args, **kwargs)

        run.search.policy.get_actions = recorded
        stats = run.run().stats
    assert stats["bn_samples"] >= 2 and stats.get("bn_reopened", 0) >= 1
    assert {t for phase, t in seen if phase != "reopen"} == {0.3}
    assert {t for phase, t in seen if phase == "reopen"} == {0.8}


def _toy_search(tmp_path, search_args: dict, model):
    """MCTS on the conformance kit's counter domain with ``model`` as policy and judge (actions sampled)."""
    from lits.components.factory import create_components
    from lits.registry import get_registration
    from lits.testing import search_conformance as kit

    kit._register_toy()
    reg = get_registration("search", "mcts")
    config = kit._config(
        "x", reg, {"n_actions": 2, "max_depth": 3, "n_iterations": 6, "early_stop": False, **search_args}
    )
    parts = create_components(kit.TOY_DOMAIN, model, n_actions=config.n_actions, temperature=config.temperature)
    parts.policy.strategy = "generate"  # a model with a scorer would otherwise rank the actions
    return reg.obj(config, parts.policy, parts.transition, parts.reward_model, checkpoint_dir=tmp_path)


#: One step from the start: "add 1", the first action listed, solves it (a settled root is never reopened).
REACH_2 = {**TOY_EXAMPLE, "query": "reach 2"}


def _run(search):
    """``search`` on the kit's example: reach 10 from 1."""
    return search.run(TOY_EXAMPLE["query"], 0, dict(TOY_EXAMPLE))


def _sure_only_at_the_start(prompt: str, reply: str) -> float:
    """The log-probability a model gives its reply: 0.95 while the counter is at 1, 0.5 elsewhere."""
    import math

    return math.log(0.95 if "Now: count: 1\n" in prompt else 0.5)


@pytest.fixture
def toy_registry():
    from lits.registry import isolated_registry

    with isolated_registry():
        yield


def test_confidence_gives_a_step_the_model_is_sure_of_no_siblings(tmp_path, toy_registry):
    from lits.testing.scripted import ScriptedModel

    search = _toy_search(
        tmp_path,
        {"add_continuation": True, "bn_method": "confidence"},
        ScriptedModel(chat_native=True, scorer=_sure_only_at_the_start),
    )
    # "add 1", the first action listed, reaches 2 at once: the chain ends solved and is not reopened.
    root = search.run(REACH_2["query"], 0, dict(REACH_2)).root
    assert root.branching == {
        "method": "confidence",
        "branch": False,
        "score": 0.05,
        "why": "the model gave its step probability 0.95",
    }
    assert [c.action for c in root.children] == ["add 1"]


@pytest.mark.parametrize(("probability", "settled"), [(0.65, True), (0.55, False)])
def test_confidence_by_default_settles_a_step_the_model_gives_at_least_0_6(
    tmp_path, toy_registry, probability, settled
):
    import math

    from lits.testing.scripted import ScriptedModel

    model = ScriptedModel(chat_native=True, scorer=lambda _prompt, _reply: math.log(probability))
    search = _toy_search(tmp_path, {"add_continuation": True, "bn_method": "confidence"}, model)
    root = search.run(REACH_2["query"], 0, dict(REACH_2)).root
    assert root.branching is not None and root.branching["branch"] is not settled


def test_confidence_per_token_scores_a_long_step_by_its_tokens_geometric_mean():
    import math

    from lits.agents.tree.continuation import reply_probability
    from lits.lm.base import Completion, TokenLogprob

    long_and_sure = Completion("x " * 20, logprobs=[TokenLogprob("x ", math.log(0.9))] * 20)
    assert reply_probability(long_and_sure) == pytest.approx(0.9**20)  # 0.12: the whole text would branch
    assert reply_probability(long_and_sure, per_token=True) == pytest.approx(0.9)


@pytest.mark.parametrize(("scored", "settled"), [("step", False), ("token", True)])
def test_bn_confidence_token_settles_a_step_whose_every_token_is_likely(tmp_path, toy_registry, scored, settled):
    import math

    from lits.lm.base import Completion, TokenLogprob
    from lits.testing.scripted import ScriptedModel

    class WordByWord(ScriptedModel):
        """Each word of a reply its own token, each given 0.7 ("add 1": 0.49 as a whole)."""

        def _generate(self, prompt, params):
            return [
                Completion(
                    str(c),
                    tokens_in=c.tokens_in,
                    tokens_out=c.tokens_out,
                    finish_reason="stop",
                    logprobs=[TokenLogprob(w, math.log(0.7)) for w in str(c).split()],
                )
                if c.logprobs
                else c
                for c in super()._generate(prompt, params)
            ]

    model = WordByWord(chat_native=True, scorer=lambda _prompt, _reply: 0.0)
    search = _toy_search(
        tmp_path, {"add_continuation": True, "bn_method": "confidence", "bn_confidence": scored}, model
    )
    root = search.run(REACH_2["query"], 0, dict(REACH_2)).root
    assert root.branching is not None and root.branching["branch"] is not settled
    assert root.branching["why"] == (
        "the model gave its step's tokens a mean probability 0.70"
        if scored == "token"
        else "the model gave its step probability 0.49"
    )


def _record_proposals(search, phase: str = "") -> list[tuple[str, int, list]]:
    """Each policy request of ``search`` (of ``phase`` only, when given): its state, n_actions, exclude."""
    asked: list[tuple[str, int, list]] = []
    propose = search.policy.get_actions

    def recorded(state, **kwargs):
        if not phase or kwargs["from_phase"] == phase:
            asked.append((state.env_state, kwargs["n_actions"], list(kwargs.get("exclude", []))))
        return propose(state, **kwargs)

    search.policy.get_actions = recorded
    return asked


def test_confidence_asks_a_one_sample_server_for_the_rest_only_where_unsure_without_the_first_step(
    tmp_path, toy_registry
):
    from lits.testing.scripted import ScriptedModel

    model = ScriptedModel(chat_native=True, scorer=_sure_only_at_the_start)
    model.batches_samples = False  # as llama.cpp's server: one sample per request
    search = _toy_search(tmp_path, {"add_continuation": True, "bn_method": "confidence", "n_actions": 3}, model)
    asked = _record_proposals(search)
    root = _run(search).root
    child = root.children[0]
    assert child.branching is not None and child.branching["branch"] and child.branching["score"] == 0.5
    first = child.children[0]
    assert [(n, exclude) for where, n, exclude in asked if where == root.state.env_state][0] == (1, [])
    assert [(n, exclude) for where, n, exclude in asked if where == child.state.env_state][:2] == [
        (1, []),
        (2, [first.action]),
    ]
    assert len({c.action for c in child.children}) == 3


def test_confidence_asks_a_batching_model_for_every_child_in_one_request_and_keeps_the_first_where_sure(
    tmp_path, toy_registry
):
    from lits.testing.scripted import ScriptedModel

    search = _toy_search(
        tmp_path,
        {"add_continuation": True, "bn_method": "confidence", "n_actions": 3, "n_iterations": 1},
        ScriptedModel(chat_native=True, scorer=_sure_only_at_the_start),
    )
    asked = _record_proposals(search)
    root = _run(search).root
    assert root.branching is not None and not root.branching["branch"] and len(root.children) == 1
    child = root.children[0]
    assert child.branching is not None and child.branching["branch"] and len(child.children) == 3
    assert [n for where, n, _ in asked if where in (root.state.env_state, child.state.env_state)][:2] == [3, 3]


def test_confidence_branches_when_the_model_gives_no_log_probabilities(tmp_path, toy_registry):
    from lits.testing.scripted import ScriptedModel

    search = _toy_search(
        tmp_path, {"add_continuation": True, "bn_method": "confidence"}, ScriptedModel(chat_native=True)
    )
    root = _run(search).root
    assert root.branching is not None and root.branching["branch"]
    assert root.branching["why"] == "the model gave no log-probabilities: branch to be safe"
    assert len(root.children) == 2


def test_confidence_without_log_probabilities_grows_the_tree_the_search_grows_without_continuation(
    tmp_path, toy_registry
):
    from lits.testing.scripted import ScriptedModel

    def tree(search_args: dict, where: str) -> tuple[list[tuple], int]:
        model = ScriptedModel(chat_native=True)
        root = _run(_toy_search(tmp_path / where, search_args, model)).root
        return [(n.id, n.action, n.parent.id if n.parent else None) for n in root.iter_tree()], len(model.calls)

    assert tree({"add_continuation": True, "bn_method": "confidence"}, "with") == tree({}, "without")


def test_with_greedy_first_only_the_first_bn_sample_is_greedy(tmp_path, toy_registry):
    from lits.testing.scripted import ScriptedModel

    model = ScriptedModel(chat_native=True)
    search = _toy_search(
        tmp_path, {"add_continuation": True, "bn_method": "sc_exact", "greedy_first": True, "n_iterations": 1}, model
    )
    _run(search)
    first_decision = [params.temperature for _prompt, params in model.calls[:2]]
    assert sorted(first_decision) == [0.0, 0.8]


def test_a_reopened_node_is_asked_only_for_the_steps_it_was_spared(tmp_path, toy_registry):
    from lits.testing.scripted import ScriptedModel

    model = ScriptedModel(chat_native=True)
    search = _toy_search(
        tmp_path, {"add_continuation": True, "bn_method": "sc_exact", "n_actions": 3, "n_iterations": 12}, model
    )
    asked = _record_proposals(search, phase="reopen")
    result = _run(search)
    assert result.stats.get("bn_reopened", 0) >= 1
    assert asked and all(n == 2 and len(exclude) == 1 for _state, n, exclude in asked)
