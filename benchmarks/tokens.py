"""What a real model's server has to read: requests, prompt tokens, prefix re-use and evaluated tokens per solved.

Each workload is a real ``lits search`` process against a fresh llama-cpp-python server on 127.0.0.1 (one slot,
one context).  That server keeps its context from one request to the next and re-uses the longest token prefix
the new prompt shares with it, but reports no cached tokens; started verbose, it logs each re-use
("Llama.generate: N prefix-match hit, remaining M prompt tokens to eval"), and this script adds those up.
Evaluated prompt tokens are the prompt tokens LiTS recorded (the server's own ``usage.prompt_tokens``) less the
re-used ones.  Token counts are deterministic for a given model file and code; the seconds are not.

    python benchmarks/tokens.py [--data ../shared/data] [--workloads blocksworld,gsm8k] [--gsm8k-limit 3]
    python benchmarks/tokens.py --server llama-server [--slots 2] --workloads blocksworld
    python benchmarks/tokens.py --emulate [--cache slot|paged] [--workloads blocksworld]
    python benchmarks/tokens.py --workloads blocksworld-chain,mapeval-react [--repeats-off] [--emulate]

``--server llama-server`` serves the GGUF with upstream llama.cpp's C++ server (built once by
``python -m lits.testing.llama_cpp_build``), whose replies report the prompt tokens it re-used
(``timings.cache_n``, recorded by LiTS as cached tokens); with ``--slots N`` each request names its slot.
The chain workloads also count repeats in the final chains (steps back into a visited state, tool calls whose
call and result repeat an earlier step's) beside the summary's own counts; ``--repeats-off`` runs them with
``--chain-arg avoid_repeats=false``, today's chains before steering, to compare.

``--emulate`` runs the same workload against the loopback server with the scripted model's obedient replies
(a listed action, Yes to each question) instead of the real model, renders each chat request as
llama-cpp-python's server does for this GGUF (its chat template, see ``TEMPLATES``; the model's own tokenizer,
loaded without weights) and re-uses prefixes by the server's rule (the longest common prefix with the previous
request, never the whole prompt); ``--cache paged`` instead serves as a batching server (``n`` samples in one
request) with vLLM's paged prefix cache (16-token blocks, only behind an identical prefix, never the last token).  It needs seconds, not hours, and isolates the prompts' layout: the replies,
and so the tree, do not depend on the model.  The previous reply is not counted in the context (it matters only
to a prompt that repeats it, a re-ask).

Workloads (the issue 42 settings):

* ``blocksworld``: BlocksWorld MCTS on the 5 two-step RAP cases, 10 iterations, 3 actions, the embedded
  Gemma 3 270M GGUF (``~/.cache/lits/models``), default settings otherwise.
* ``gsm8k``: GSM8K ToT-BFS (beam 2, 2 actions, depth 3) with Qwen2.5-Coder-0.5B-Instruct (the real-model
  tier's GGUF) on the first ``--gsm8k-limit`` problems.

Measured with ``--emulate`` (issue 42; deterministic once instances go one after another, before that the
order of the interleaved instances' requests varied the re-use from run to run):

| BlocksWorld MCTS, 5 cases | requests | prompt tokens | re-used | evaluated / solved | solved |
|---|---|---|---|---|---|
| before (e139bb1), 3 runs | 139 | 74,977 | 57.8-60.9 % | 5,866-6,326 | 5/5 |
| after | 174 | 105,995 | 89.8 % | 2,161 | 5/5 |

| GSM8K ToT-BFS, 3 problems | requests | prompt tokens | re-used | evaluated |
|---|---|---|---|---|
| before (judge with its own system prompt) | 24 | 8,391 | 54.1 % | 3,848 |
| after (the judge asks after the policy's prompt) | 24 | 10,296 | 90.1 % | 1,021 |

With ``--cache paged`` (a batching server), in Gemma's and Qwen's own tokens: BlocksWorld MCTS 84.1 % (94
requests), GSM8K ToT-BFS 87.8 % (33).  ``--dump DIR`` writes each request with its 16-token blocks, where its
re-used prefix ends and where the longest prefix it shares with any earlier prompt ends, and the row gives the
share a cache matching to the token would re-use: BlocksWorld 85.3 %, GSM8K 89.8 %.  What bounds the share is what
each node must say, not the cache: a BlocksWorld node's policy request adds its action (~9 tokens), its state
(~47) and its legal actions (~26), its judge the candidates (~35) and the judge's question (~37), ~150 of a
~1,250-token pair where 90 % allows ~96 once the cold head and each instance's first request are paid; a GSM8K
request adds its step, the role's cue (~12-20 tokens) and the chat template's turn end to a ~440-token prompt,
and 3 problems pay the 421-token head once (2.9 %; 10 problems: 89.8 %).  A layout that asked the policy's
question once in the chat head and had the judge repeat the policy's whole prompt (legal actions too) reached
85.2 % (one slot: 2,062 evaluated per solved, emulated) but on the real Gemma server solved 4 of 5 (the fifth
cycled put-down/pick-up to its 10 iterations) at 3,101 evaluated per solved (212 requests, 90.5 % re-used), so
it was not kept.

The real Gemma run at the issue's settings (135 requests, 58.9 % re-used, 5,986 evaluated per solved) matches
the emulated "before"; on the loaded 2-core machine of the measurement (load 26-42) the real server took
1-3 minutes a request, and the real "after" run could not finish.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REUSED = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


#: The chat template llama-cpp-python's server applies to each GGUF: Gemma 270M has none (the server falls back to
#: llama-2's); Qwen's own is ChatML-shaped (emulated as plain ChatML: its default system turn is left out).
TEMPLATES = {"blocksworld": "llama-2", "blocksworld-chain": "llama-2", "mapeval-react": "llama-2", "gsm8k": "chatml"}


def workloads(
    data: Path, gsm8k_limit: int, chain_limit: int = 5, blocksworld_limit: int = 5
) -> dict[str, tuple[str, list[str]]]:
    """name -> (model file name in LiTS's model cache, lits arguments)."""
    return {
        "blocksworld": (
            "gemma-3-270m-q4_k_m.gguf",
            [
                "search",
                "--dataset",
                "blocksworld",
                "--dataset-arg",
                f"path={data / 'blocksworld'}",
                "--dataset-arg",
                "steps=2",
                "--limit",
                str(blocksworld_limit),
                "--search",
                "mcts",
                "--search-arg",
                "n_iterations=10",
                "--search-arg",
                "n_actions=3",
            ],
        ),
        "blocksworld-chain": (
            "gemma-3-270m-q4_k_m.gguf",
            [
                "chain",
                "--dataset",
                "blocksworld",
                "--dataset-arg",
                f"path={data / 'blocksworld'}",
                "--dataset-arg",
                "steps=4",
                "--limit",
                str(chain_limit),
            ],
        ),
        "mapeval-react": (
            "gemma-3-270m-q4_k_m.gguf",
            ["chain", "--dataset", "mapeval-sql", "--limit", str(chain_limit)],
        ),
        "gsm8k": (
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            [
                "search",
                "--dataset",
                "gsm8k",
                "--dataset-arg",
                f"path={data / 'math'}",
                "--limit",
                str(gsm8k_limit),
                "--search-framework",
                "tot_bfs",
                "--search-arg",
                "beam_width=2",
                "--search-arg",
                "n_actions=2",
                "--search-arg",
                "max_depth=3",
            ],
        ),
    }


def server_reuse(log_text: str) -> dict[str, int]:
    """Prompt tokens the server re-used from its context, and how often it said so, from its verbose log."""
    hits = [(int(a), int(b)) for a, b in REUSED.findall(log_text)]
    return {
        "reused": sum(a for a, _ in hits),
        "hit_lines": len(hits),
        "full_prompt_cached": log_text.count("full prompt already cached"),
        "no_partial_removal": log_text.count("partial kv removal not supported"),
    }


def repeats(save: Path) -> dict[str, int]:
    """Repeats in a run's final chains, whatever ``avoid_repeats`` was: steps into an env state the chain had been
    in (its start or an earlier step's), and tool calls whose call and result repeat an earlier step's; with the
    summary's own counts (``repeats_steered_away``, ``repeats_kept``: only with ``avoid_repeats`` on)."""
    states = calls = 0
    for path in sorted((save / "results").glob("*.json")):
        final = json.loads(path.read_text()).get("final_state") or {}
        seen_states = {final.get("init_state")} if isinstance(final.get("init_state"), str) else set()
        seen_calls: set[tuple[str, str]] = set()
        for step in final.get("steps") or []:
            after = step.get("next_state")
            if isinstance(after, str):
                states += after in seen_states
                seen_states.add(after)
            observation = step.get("observation")
            if step.get("action") is not None and observation is not None and not step.get("error"):
                # the note a repeated call's observation gained (lits.agents.chain.repeats) is not its result
                key = (json.dumps(step["action"], sort_keys=True), str(observation).split("\n(Note: step ")[0])
                calls += key in seen_calls
                seen_calls.add(key)
    summary = json.loads((save / "eval_results.json").read_text()).get("diversity") or {}
    return {
        "repeated_states": states,
        "identical_tool_calls": calls,
        "steered_away": int(summary.get("repeats_steered_away") or 0),
        "repeats_kept": int(summary.get("repeats_kept") or 0),
    }


def run(
    name: str, model_file: str, args: list[str], out: Path, server: str = "llama-cpp-python", slots: int = 1
) -> dict[str, Any]:
    from lits.testing.llama_cpp_build import server_binary
    from lits.testing.llama_server import llama_server

    model = Path.home() / ".cache" / "lits" / "models" / model_file
    if not model.exists():
        raise SystemExit(f"{model} is missing: run `lits` once (the embedded model) or the real-model tests")
    binary = server_binary() if server == "llama-server" else None
    if server == "llama-server" and binary is None:
        raise SystemExit("--server llama-server: not built yet; run `python -m lits.testing.llama_cpp_build`")
    log = out / f"{name}-server.log"
    save = out / name
    started = time.perf_counter()
    # llama-cpp-python's server says what it re-used only in its verbose log; llama-server reports timings.cache_n,
    # which LiTS records as each call's cached tokens.
    serving = (
        llama_server(model, log=log, binary=binary, slots=slots)
        if binary
        else llama_server(model, log=log, extra=["--verbose", "true"])
    )
    with serving as url:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                *args,
                "--model",
                model.stem,
                "--base-url",
                url,
                "--save-dir",
                str(save),
                "--no-cache",
            ],
            capture_output=True,
            text=True,
        )
    seconds = time.perf_counter() - started
    if done.returncode != 0 or not (save / "eval_results.json").exists():
        raise SystemExit(
            f"{name}: lits exited {done.returncode}: {(done.stderr.strip().splitlines() or ['no output'])[-1]}"
        )
    results = json.loads((save / "eval_results.json").read_text())
    spend = results.get("spend") or {}
    reuse = server_reuse(log.read_text(errors="replace"))
    if binary:
        reuse["reused"] = int(spend.get("cached_prompt_tokens") or 0)
    prompt = int(spend.get("prompt_tokens") or 0)
    evaluated = prompt - reuse["reused"]
    solved = int(results.get("solved") or 0)
    return {
        "workload": f"{name} ({server}{f', {slots} slots' if binary and slots > 1 else ''})",
        "model": model.stem,
        "solved": solved,
        "instances": results.get("instances"),
        "calls": spend.get("calls"),
        "requests": spend.get("requests"),
        "prompt_tokens": prompt,
        "reused_prompt_tokens": reuse["reused"],
        "reused_share": round(reuse["reused"] / prompt, 4) if prompt else None,
        "evaluated_prompt_tokens": evaluated,
        "evaluated_per_solved": round(evaluated / solved, 1) if solved else None,
        "prompt_tokens_per_solved": round(prompt / solved, 1) if solved else None,
        "generated_tokens": spend.get("generated_tokens"),
        "server_log": reuse,
        "wall_seconds": round(seconds, 1),
        **(repeats(save) if args[0] == "chain" else {}),
    }


def emulate(
    name: str, model_file: str, args: list[str], out: Path, cache: str = "slot", dump: Path | None = None
) -> dict[str, Any]:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import format_chatml, format_llama2

    from lits.lm.base import GenerationParams
    from lits.testing.scripted import obedient_reply
    from lits.testing import FakeOpenAIServer
    from lits.testing.prefix_cache import PagedPrefixCache

    model = Path.home() / ".cache" / "lits" / "models" / model_file
    save = out / f"{name}-emulated"

    def obedient(prompt: str, body: dict[str, Any], index: int) -> str:
        return obedient_reply(prompt, GenerationParams(), index)

    started = time.perf_counter()
    # Served as llama-cpp-python's server serves (one request at a time, one sample per request), or as a
    # batching server with a paged cache (vLLM: requests at once, ``n`` samples in one request).
    slot = cache != "paged"
    with FakeOpenAIServer(responder=obedient, ignore_n=slot, owned_by="me" if slot else None) as srv:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                *args,
                "--model",
                model.stem,
                "--base-url",
                srv.base_url,
                "--save-dir",
                str(save),
                "--no-cache",
            ],
            capture_output=True,
            text=True,
        )
    if done.returncode != 0 or not (save / "eval_results.json").exists():
        raise SystemExit(
            f"{name}: lits exited {done.returncode}: {(done.stderr.strip().splitlines() or ['no output'])[-1]}"
        )
    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    template = format_llama2 if TEMPLATES[name] == "llama-2" else format_chatml
    paged = PagedPrefixCache(block_size=16, capacity=1 << 20) if cache == "paged" else None
    context: list[int] = []
    prompt = reused = exact = 0
    dumped: list[list[int]] = []
    sent = srv.requests  # one body per request (a request for n samples calls the responder n times)
    for index, body in enumerate(sent):
        messages = body.get("messages")
        text = template(messages=messages).prompt if messages else str(body.get("prompt") or "")
        tokens = vocab.tokenize(text.encode(), add_bos=True, special=True)
        prompt += len(tokens)
        if paged is not None:  # vLLM's automatic prefix caching, in the model's own tokens
            hit = paged.serve([str(t) for t in tokens])
        else:
            common = common_prefix(context, tokens)
            hit = common - 1 if common == len(tokens) else common
            context = tokens
        reused += hit
        if dump is not None:
            # what a cache matching to the token (any earlier prompt, never the last token) would re-use: the rest
            # of ``hit``'s shortfall is the blocks' rounding
            shared = max((common_prefix(tokens, seen) for seen in dumped), default=0)
            exact += min(shared, len(tokens) - 1)
            dumped.append(tokens)
            write_dump(dump / name, index, vocab, tokens, hit, min(shared, len(tokens) - 1), 16 if paged else 0)
    results = json.loads((save / "eval_results.json").read_text())
    solved = int(results.get("solved") or 0)
    evaluated = prompt - reused
    return {
        "workload": f"{name} (emulated, {'paged cache' if paged else 'one slot'})",
        "model": model.stem,
        "solved": solved,
        "instances": results.get("instances"),
        "calls": (results.get("spend") or {}).get("calls"),
        "requests": len(sent),
        "prompt_tokens": prompt,
        "reused_prompt_tokens": reused,
        "reused_share": round(reused / prompt, 4) if prompt else None,
        "evaluated_prompt_tokens": evaluated,
        "evaluated_per_solved": round(evaluated / solved, 1) if solved else None,
        "prompt_tokens_per_solved": round(prompt / solved, 1) if solved else None,
        "wall_seconds": round(time.perf_counter() - started, 1),
        **({"reused_if_matched_to_the_token": round(exact / prompt, 4)} if dump is not None and prompt else {}),
        **(repeats(save) if args[0] == "chain" else {}),
    }


def common_prefix(a: list[int], b: list[int]) -> int:
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return common


def write_dump(folder: Path, index: int, vocab: Any, tokens: list[int], hit: int, shared: int, block: int) -> None:
    """One emulated request as the server read it: ``|`` at each block boundary, ``[[NEW]]`` where the re-used
    prefix ends and ``[[SHARED]]`` where the longest prefix it shares with an earlier prompt ends, so what each
    request adds (and what the blocks' rounding costs) can be read."""
    folder.mkdir(parents=True, exist_ok=True)
    pieces = []
    for position, token in enumerate(tokens):
        if position == hit:
            pieces.append("[[NEW]]")
        elif block and position and position % block == 0:
            pieces.append("|")
        if position == shared and shared != hit:
            pieces.append("[[SHARED]]")
        pieces.append(vocab.detokenize([token]).decode(errors="replace"))
    head = f"# request {index}: {len(tokens)} tokens, {hit} re-used, {len(tokens) - hit} new, {shared} shared\n"
    (folder / f"{index:04d}.txt").write_text(head + "".join(pieces) + "\n")


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| workload | model | solved | requests | prompt tokens | re-used by the server | evaluated | "
        "evaluated / solved | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    chains = [r for r in rows if "repeated_states" in r]
    for r in rows:
        per = "-" if r["evaluated_per_solved"] is None else f"{r['evaluated_per_solved']:,.0f}"
        lines.append(
            f"| {r['workload']} | {r['model']} | {r['solved']}/{r['instances']} | {r['requests']} | "
            f"{r['prompt_tokens']:,} | {r['reused_prompt_tokens']:,} ({(r['reused_share'] or 0):.1%}) | "
            f"{r['evaluated_prompt_tokens']:,} | {per} | {r['wall_seconds']:.0f} |"
        )
    if chains:
        lines += [
            "",
            "| chain | solved | repeated states | identical tool calls | steered away | repeats kept |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['workload']} | {r['solved']}/{r['instances']} | {r['repeated_states']} | "
            f"{r['identical_tool_calls']} | {r['steered_away']} | {r['repeats_kept']} |"
            for r in chains
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data")
    parser.add_argument("--workloads", default="blocksworld,gsm8k")
    parser.add_argument("--gsm8k-limit", type=int, default=3)
    parser.add_argument("--blocksworld-limit", type=int, default=5, help="cases of the BlocksWorld MCTS workload")
    parser.add_argument("--chain-limit", type=int, default=5, help="cases of the chain workloads")
    parser.add_argument(
        "--server",
        choices=["llama-cpp-python", "llama-server"],
        default="llama-cpp-python",
        help="the real model's server: llama-cpp-python's (one slot; re-use read from its verbose log) or upstream "
        "llama-server (built by `python -m lits.testing.llama_cpp_build`; its timings.cache_n)",
    )
    parser.add_argument("--slots", type=int, default=1, help="llama-server's slots (requests name theirs: id_slot)")
    parser.add_argument(
        "--repeats-off",
        action="store_true",
        help="chains run with --chain-arg avoid_repeats=false (today's chains before steering), to compare",
    )
    parser.add_argument("--out", type=Path, default=None, help="keep the runs and server logs here")
    parser.add_argument(
        "--emulate", action="store_true", help="obedient scripted replies on a loopback server, tokens counted offline"
    )
    parser.add_argument(
        "--cache",
        choices=["slot", "paged"],
        default="slot",
        help="with --emulate: a one-slot server's re-use (llama-cpp-python: the prefix shared with the previous "
        "request) or vLLM's paged prefix cache (16-token blocks, only behind an identical prefix, never the last "
        "token; capacity for the whole run)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    parser.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="with --emulate: write each request as the server read it (block boundaries, where the re-used prefix "
        "ends) to DIR/<workload>/NNNN.txt",
    )
    args = parser.parse_args()
    chosen = [w for w in args.workloads.split(",") if w]
    known = workloads(args.data, args.gsm8k_limit, args.chain_limit, args.blocksworld_limit)
    unknown = [w for w in chosen if w not in known]
    if unknown:
        raise SystemExit(f"--workloads: unknown {unknown[0]!r}; choose from {', '.join(known)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        for name in chosen:
            model_file, lits_args = known[name]
            if args.repeats_off and lits_args[0] == "chain":
                lits_args = [*lits_args, "--chain-arg", "avoid_repeats=false"]
            if args.emulate:
                rows.append(emulate(name, model_file, lits_args, out, args.cache, args.dump))
            else:
                rows.append(run(name, model_file, lits_args, out, args.server, args.slots))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
