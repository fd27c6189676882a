"""Typed settings of the built-in agents (``--search-arg`` / ``--chain-arg``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class TreeSearchConfig(BaseModel):
    """Settings every tree search shares."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # "nan" read as a float too

    n_actions: int = Field(3, ge=1, description="children proposed per expansion")
    max_depth: int = Field(6, ge=1, description="deepest node searched")
    runtime_limit: float | None = Field(None, gt=0, description="seconds per instance")
    early_stop: bool = Field(True, description="stop at the first solution")
    temperature: float = Field(0.8, ge=0, description="policy sampling temperature")
    checkpoint_every: int = Field(1, ge=1, description="journal the tree every N iterations (or depths)")
    sibling_aware: bool = Field(
        False,
        description="when a node gets fewer distinct children than n_actions, "
        "ask again (twice at most, each time 0.4 hotter up to 1.0), showing the policy the "
        "siblings it already proposed",
    )
    add_continuation: bool = Field(
        False,
        description="Chain-in-Tree: before expanding a node, a branching-necessity "
        "(BN) evaluator decides whether it needs several children; if not, it gets one",
    )
    bn_method: Literal["entropy", "sc", "sc_exact", "direct", "confidence"] = Field(
        "sc_exact",
        description="BN evaluator: direct (ask --bn-model), sc/sc_exact (sample bn_k steps, branch when "
        "they differ in meaning/text; steps that state final answers compare their answers), entropy (branch when "
        "the entropy of the sampled steps passes bn_threshold), "
        "confidence (branch when the model's probability of its first step is below 1 - bn_threshold)",
    )
    bn_k: int | None = Field(
        None, ge=2, le=16, description="steps sampled by sc, sc_exact and entropy (default: n_actions, at least 2)"
    )
    bn_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="branch when the BN score (0: no need, "
        "1: surely needed) exceeds this (default: 0 for sc/sc_exact, 0.6 for "
        "entropy, 0.5 for direct, 0.4 for confidence)",
    )
    bn_confidence: Literal["step", "token"] = Field(
        "step",
        description="what confidence scores: step (the probability of the step's whole text: short steps, "
        "such as an action) or token (the geometric mean of its tokens' probabilities: long free-text steps, whose "
        "whole text is rarely likely however sure the model is)",
    )
    bn_temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="temperature of the steps sc, sc_exact "
        "and entropy sample (default: temperature); lower makes a confident "
        "policy's samples agree, so its settled steps continue",
    )
    whole_solution: bool = Field(
        False,
        description="language tasks: each child is the rest of the solution, "
        "written in one reply (the search then chooses among whole solutions)",
    )
    greedy_first: bool = Field(
        False,
        description="the first of a node's n_actions steps is decoded greedily "
        "(temperature 0), the rest at temperature: the chain's own step is always a "
        "candidate, and a vote over answers that ties goes to it",
    )


class MCTSConfig(TreeSearchConfig):
    """MCTS (``--search mcts``); adds to the shared settings."""

    n_iterations: int = Field(10, ge=1, description="rollouts per instance")
    w_exp: float = Field(1.0, ge=0, description="UCT exploration weight")
    rollout_depth: int | None = Field(None, ge=0, description="None: up to max_depth")
    aggregate: Literal["mean", "max"] = Field("mean", description="how a path's rewards make a node's return")
    simulate: Literal["greedy", "sample"] = Field("greedy", description="rollout: best fast reward, or sampled by it")
    seed: int = Field(0, description="seeds the sampled rollouts (with the instance and iteration)")
    parallel_iterations: int = Field(1, ge=1, description="rollouts run at once (tree-parallel MCTS with virtual loss)")
    # 0 keeps K rollouts' solve rate equal to sequential MCTS on the 30-case BlocksWorld benchmark (27/30;
    # 1.0, a return far below any real one on the 0..1 scale, solved 25/30).
    virtual_loss: float = Field(
        0.0, ge=0, description="a rollout still in flight counts as a visit returning minus this (0: the lowest reward)"
    )


class BFSConfig(TreeSearchConfig):
    """Breadth-first beam search (``--search bfs``); adds to the shared settings."""

    beam_width: int = Field(3, ge=1, description="nodes kept per depth")
    reward_aggregate: Literal["sum", "mean", "last"] = Field("sum", description="a path's score from its rewards")
    score_last_depth: bool = Field(
        True,
        description="score the children of the last depth too (false: skip those "
        "reward-model calls; their scores only pick the best path, which an unweighted "
        "vote over terminal nodes does not read)",
    )


class ChainConfig(BaseModel):
    """Chain agents (``lits chain``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # "nan" read as a float too

    max_steps: int = Field(10, ge=1, description="steps before the chain stops")
    temperature: float = Field(0.0, ge=0, description="policy sampling temperature")
    runtime_limit: float | None = Field(None, gt=0, description="seconds per instance")
    avoid_repeats: bool = Field(
        True,
        description="a step back into a state the chain has been in is taken back "
        "and the policy asked again without it (twice at most, policies that take exclude); "
        "a tool call that repeats an earlier one with the same result is told so in its "
        "observation; both counted in the summary",
    )


class CoTConfig(ChainConfig):
    """Chain of thought (``lits chain --chain cot``)."""

    whole_solution: bool = Field(
        False,
        description="the model writes the rest of the solution in one reply, one "
        "step per line (how chat models reason best), instead of one step per call",
    )


class SelfConsistencyConfig(CoTConfig):
    """Self-consistency (``lits chain --chain sc``): k sampled chains, then a majority vote."""

    k: int = Field(8, ge=1, le=256, description="chains sampled per instance")
    temperature: float = Field(0.7, ge=0, description="policy sampling temperature (0 makes every chain alike)")
    greedy_first: bool = Field(
        False,
        description="the first chain is decoded greedily (temperature 0), the rest "
        "sampled: the greedy answer always votes, and a vote with no majority goes to it",
    )


#: An agent's settings: a search's (``--search-arg``) or a chain's (``--chain-arg``); a plugin's subclass one.
AgentConfig = TreeSearchConfig | ChainConfig
