"""Core's own components and algorithms, registered like any plugin's (pluggy hookimpls)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

from lits.plugin_host.hookspecs import hookimpl

if TYPE_CHECKING:
    from lits.lm.base import LanguageModel

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Options passed through to :class:`~lits.lm.openai_compat.OpenAICompatibleModel`.
SERVER_OPTIONS = (
    "api_key",
    "price_in",
    "price_out",
    "timeout",
    "call_budget",
    "connect_timeout",
    "read_timeout",
    "max_attempts",
    "adaptive_read_timeout",
    "patience_floor",
    "hedge_share",
    "hedge",
    "constraints",
)


# Registered as "module:attribute": imported when a run uses them, not at start-up.


@hookimpl
def register_policies(register: Callable[..., object]) -> None:
    register("env_grounded", "lits.components.policy.env_grounded:EnvGroundedPolicy", task_type="env_grounded")
    register("tool_use", "lits.components.policy.tool_use:ToolUsePolicy", task_type="tool_use")
    register("concat", "lits.components.policy.concat:ConcatPolicy", task_type="language_grounded")


@hookimpl
def register_reward_models(register: Callable[..., object]) -> None:
    register("env_grounded", "lits.components.reward.env_grounded:EnvGroundedPRM", task_type="env_grounded")
    register("tool_use", "lits.components.reward.tool_use:ToolUsePRM", task_type="tool_use")
    register("generative", "lits.components.reward.generative:GenerativePRM", task_type="language_grounded")


@hookimpl
def register_transitions(register: Callable[..., object]) -> None:
    register("tool_use", "lits.components.transition.tool_use:ToolUseTransition", task_type="tool_use")
    register("concat", "lits.components.transition.concat:ConcatTransition", task_type="language_grounded")


@hookimpl
def register_resources(register: Callable[..., object]) -> None:
    # `--resource mcp`: the tools of an MCP server (the SDK loads only when a run uses it).
    register("mcp", "lits.tools.mcp:load_mcp_resource")


@hookimpl
def register_prompts(register: Callable[..., object]) -> None:
    from lits.prompts import continuation
    from lits.prompts import env_grounded as env
    from lits.prompts import language_grounded as lang
    from lits.prompts import tool_use

    for key in ("env_grounded", "default"):
        register("policy", "env_grounded", key, env.POLICY_SYSTEM)
        register("policy", "env_grounded", key, env.POLICY_USER, user=True)
        register("reward", "env_grounded", key, env.REWARD_SYSTEM)
        register("reward", "env_grounded", key, env.REWARD_USER, user=True)
    for key in ("tool_use", "default"):
        register("policy", "tool_use", key, tool_use.POLICY_SYSTEM)
        register("policy", "tool_use", key, tool_use.POLICY_USER, user=True)
    for key in ("language_grounded", "default"):
        register("policy", "concat", key, lang.POLICY_SYSTEM)
        register("policy", "concat", key, lang.POLICY_USER, user=True)
        register("reward", "generative", key, lang.REWARD_SYSTEM)
        register("reward", "generative", key, lang.REWARD_USER, user=True)
    register("bn", "continuation", "default", continuation.SYSTEM)
    register("bn", "continuation", "default", continuation.USER, user=True)


@hookimpl
def register_searches(register: Callable[..., object]) -> None:
    register("mcts", "lits.agents.tree.mcts:MCTS", config_class="lits.agents.config:MCTSConfig")
    register("bfs", "lits.agents.tree.breadth_first:BFS", config_class="lits.agents.config:BFSConfig")


@hookimpl
def register_chains(register: Callable[..., object]) -> None:
    register("env_chain", "lits.agents.chain.env_chain:EnvChain", config_class="lits.agents.config:ChainConfig")
    register("react", "lits.agents.chain.react:ReActChat", config_class="lits.agents.config:ChainConfig")
    register("cot", "lits.agents.chain.cot:CoTChain", config_class="lits.agents.config:CoTConfig")
    register(
        "sc",
        "lits.agents.chain.self_consistency:SelfConsistencyChain",
        config_class="lits.agents.config:SelfConsistencyConfig",
    )


@hookimpl
def register_augmentors(register: Callable[..., object]) -> None:
    register(
        "fact",
        "lits.memory.builtin:FactMemory",
        description="facts a failed attempt established (observations, refusals), shown to the next",
    )
    register(
        "reflection",
        "lits.memory.builtin:Reflection",
        description="after a failed attempt, a model-written lesson shown to the next",
    )
    register(
        "critic",
        "lits.memory.builtin:Critic",
        description="after a failed attempt, the model names its first wrong step, shown to the next",
    )


@hookimpl
def register_search_frameworks(register: Callable[..., object]) -> None:
    # Chain-of-thought components under two algorithms: the paper's component-reuse demonstration.
    register(
        "rest",
        policy="concat",
        transition="concat",
        reward_model="generative",
        search="mcts",
        search_args={"early_stop": False},
        description="ReST-MCTS*: step-by-step thoughts, a generative process reward, MCTS",
    )
    # The answer is a vote over terminal nodes, so the last depth's scores would be paid for nothing.
    register(
        "tot_bfs",
        policy="concat",
        transition="concat",
        reward_model="generative",
        search="bfs",
        search_args={"early_stop": False, "score_last_depth": False},
        description="Tree of Thoughts: the same components under breadth-first beam search",
    )


@hookimpl
def register_models(register: Callable[..., object]) -> None:
    register(
        "local",
        "lits.builtins:local_model",
        description="embedded Gemma 3 270M on llama.cpp, in-process (the default)",
        concurrency=1,
    )
    register("scripted", scripted_model, description="deterministic offline stand-in, for smoke tests", concurrency=1)
    register(
        "openai",
        server_model,
        description="a model served by an OpenAI-compatible server at --base-url "
        "(vLLM, llama.cpp, Ollama, OpenAI); any unregistered name",
    )


def local_model(spec: str, *, base_url: str | None = None, concurrency: int = 1, **options: object) -> LanguageModel:
    if base_url:
        raise ValueError("--base-url is for server models; give --model NAME too (not 'local')")
    from lits.lm.local import LocalLlamaModel

    from lits.lm.base import call_options

    return LocalLlamaModel(concurrency=concurrency, **call_options(options))


def scripted_model(spec: str, *, concurrency: int = 1, **options: object) -> LanguageModel:
    from lits.testing.scripted import ScriptedModel

    from lits.lm.base import call_options

    return ScriptedModel(concurrency=concurrency, chat_native=True, **call_options(options))


def server_model(
    spec: str, *, base_url: str | None = None, api: str | None = None, concurrency: int = 1, **options: Any
) -> LanguageModel:
    from lits.lm.base import call_options
    from lits.lm.openai_compat import OpenAICompatibleModel

    return OpenAICompatibleModel(
        spec,
        base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        api=api or "chat",  # type: ignore[arg-type]
        concurrency=concurrency,
        **{k: v for k, v in options.items() if k in SERVER_OPTIONS},
        **call_options(options),
    )
