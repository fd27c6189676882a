"""The run directory's layout: every file name a run writes, and the format's version.

One home for what the runner, the agents (their checkpoints), Ray workers, ``lits eval``,
``lits compare``, the Python API's result and the viewer read and write, so a change of
layout happens here and bumps :data:`FORMAT`.  ``config.json`` records the format a run
was written in; a reader refuses a run from a newer LiTS in one line instead of misreading it.

    config.json                 the run's settings (no secrets), ``format``
    inference.jsonl             one record per model call
    execution.log               what happened, tracebacks included
    cache.sqlite                the response cache (default place)
    checkpoints/{idx}.journal.jsonl  a search's tree, change by change
    checkpoints/{idx}.json      a chain's state
    checkpoints/attempt-{k}/    the same, for attempt k > 0 (``--attempts``)
    attempts/{idx}.{k}.json     attempt k's record and the memory after it (``--attempts``, ``--memory-arg``)
    terminal_nodes/{idx}.json   every terminal node a search found
    paths/{idx}.json            the path a search chose
    timings/{idx}.json          seconds, rounds, calls and parse counts of the instance
    results/{idx}.json          the instance's outcome; written last, it marks the instance done
    stats/process-{n}.json      one process's counters
    eval_results.json, eval.log the summary
    .lock                       held (an OS file lock) by the process running the run; the holder's pid
"""

from __future__ import annotations

from typing import Mapping

#: The layout's version, written into config.json as ``format``. 1: the layout above. 2: a journaled node's
#: state may hold only the steps after its parent's (``parent_steps``), which format 1's readers would misread.
FORMAT = 2

CONFIG = "config.json"
INFERENCE_LOG = "inference.jsonl"
EXECUTION_LOG = "execution.log"
CACHE = "cache.sqlite"
SUMMARY = "eval_results.json"
SUMMARY_TEXT = "eval.log"
CHECKPOINTS = "checkpoints"
ATTEMPTS = "attempts"
RESULTS = "results"
PATHS = "paths"
TERMINAL_NODES = "terminal_nodes"
TIMINGS = "timings"
STATS = "stats"
#: The file a running run holds an exclusive ``flock`` on (the kernel drops it when the process dies).
LOCK = ".lock"
#: The folders that hold one file per instance (what a Ray worker sends back for each instance).
INSTANCE_FOLDERS = (CHECKPOINTS, TERMINAL_NODES, PATHS, TIMINGS, RESULTS)


def result(idx: int) -> str:
    return f"{RESULTS}/{idx}.json"


def path(idx: int) -> str:
    return f"{PATHS}/{idx}.json"


def terminal_nodes(idx: int) -> str:
    return f"{TERMINAL_NODES}/{idx}.json"


def timing(idx: int) -> str:
    return f"{TIMINGS}/{idx}.json"


def attempt(idx: int, attempt: int) -> str:
    """Attempt ``attempt`` of instance ``idx``: its record, files, notes and the memory after it."""
    return f"{ATTEMPTS}/{idx}.{attempt}.json"


def attempt_checkpoints(attempt: int) -> str:
    """The checkpoint folder of attempt ``attempt`` (``--attempts``): attempt 0 keeps the usual one."""
    return f"{CHECKPOINTS}/attempt-{attempt}" if attempt else CHECKPOINTS


def journal_name(idx: int) -> str:
    """A search's journal, inside the checkpoint folder."""
    return f"{idx}.journal.jsonl"


def chain_checkpoint_name(idx: int) -> str:
    """A chain's checkpoint, inside the checkpoint folder."""
    return f"{idx}.json"


def newer_format(config: Mapping[str, object]) -> str | None:
    """One line when ``config`` was written in a format newer than this LiTS reads, else None."""
    found = config.get("format", FORMAT)
    if isinstance(found, int) and found > FORMAT:
        return (
            f"this run was written in run-dir format {found} by a newer LiTS ({config.get('lits_version')}); "
            f"this LiTS reads format {FORMAT}: upgrade lits-core"
        )
    return None
