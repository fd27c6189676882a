"""Models and agents are complete when built: what a run decides about them goes into their constructors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import BaseModel

from lits.agents import MCTS, ChainConfig, MCTSConfig
from lits.agents.chain.env_chain import EnvChain
from lits.errors import UserError
from lits.lm.factory import create_model
from lits.lm.limits import CallLimiter
from lits.runtime.observability import InferenceLog, collecting
from lits.registry import get_registration, register_model, register_search
from lits.runs.setup import create_run_models, make_config
from lits.runs.record import RunRecord
from lits.runs.spec import RunSpec
from lits.testing import ScriptedModel
from tests.agents.conftest import EXAMPLE, Parts
from tests.toy_domain import prefer

SOURCE = Path(__file__).resolve().parents[2] / "lits-core" / "src" / "lits"
#: What a run decides about a model or an agent it built.
WIRED = {"search_name", "chain_name", "bn_model", "log_prompts", "constrain_replies", "sampling", "limiter", "draws"}


@pytest.fixture
def parts(isolated_registry: None) -> Parts:
    return Parts(ScriptedModel(scorer=prefer("move right", "wait", "move left")))


def _searched_as(log: InferenceLog) -> set[object]:
    return {record.context.get("search") for record in log.records}


def test_a_built_in_backend_comes_back_with_the_runs_call_options() -> None:
    model = create_model("scripted", log_prompts=True, constrain_replies=False, sampling={"temperature": 0.2})
    assert (model.log_prompts, model.constrain_replies, model.sampling) == (True, False, {"temperature": 0.2})


def test_a_plugin_backend_that_drops_the_call_options_still_gets_them(isolated_registry: None) -> None:
    register_model("dropper")(lambda spec, **options: ScriptedModel())
    limiter = CallLimiter(3)
    model = create_model("dropper", log_prompts=True, limiter=limiter)
    assert model.log_prompts and model.limiter is limiter


def test_each_distinct_model_of_a_run_is_built_with_the_limiter_given_for_its_pool() -> None:
    settings = RunRecord.of(
        RunSpec.make(dataset="blocksworld", model="scripted", component_models={"eval": {"model": "scripted/judge"}})
    )
    limiters = [CallLimiter(1), CallLimiter(1)]
    models = create_run_models(settings, limiters.__getitem__)
    assert models["policy"].limiter is limiters[0] and models["eval"].limiter is limiters[1]


def test_a_search_tags_its_calls_with_the_name_it_was_built_with(parts: Parts) -> None:
    search = MCTS(MCTSConfig(n_iterations=2, n_actions=2), parts.policy, parts.transition, parts.reward, name="mine")
    with collecting(log := InferenceLog()):
        search.run("2", 0, EXAMPLE)
    assert _searched_as(log) == {"mine"}


def test_a_search_asks_its_branching_evaluator_through_the_model_it_was_built_with(parts: Parts) -> None:
    judge = ScriptedModel(name="judge")
    search = MCTS(MCTSConfig(), parts.policy, parts.transition, parts.reward, bn_model=judge)
    assert search.bn_model is judge


def test_a_chain_tags_its_calls_with_the_name_it_was_built_with(parts: Parts) -> None:
    chain = EnvChain(ChainConfig(max_steps=2), parts.policy, parts.transition, name="mine")
    with collecting(log := InferenceLog()):
        chain.run("2", 0, EXAMPLE)
    assert _searched_as(log) == {"mine"}


def test_no_code_in_runs_or_agents_sets_a_built_model_or_agent_afterwards() -> None:
    found = []
    for path in sorted([*(SOURCE / "runs").rglob("*.py"), *(SOURCE / "agents").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in (t for each in targets for t in ast.walk(each)):
                if isinstance(target, ast.Attribute) and target.attr in WIRED:
                    if not (isinstance(target.value, ast.Name) and target.value.id == "self"):
                        found.append(f"{path.relative_to(SOURCE)}:{node.lineno} sets .{target.attr}")
    assert not found, found


def test_a_search_whose_config_class_is_not_a_search_config_is_a_one_line_error(isolated_registry: None) -> None:
    class Loose(BaseModel):
        width: int = 1

    register_search("loose", config_class=Loose)(type("LooseSearch", (MCTS,), {}))
    with pytest.raises(UserError, match="loose: its config_class Loose must subclass lits.api.TreeSearchConfig"):
        make_config(get_registration("search", "loose"), {}, "search")
