"""MapEval-SQL on SQLite and on PostgreSQL: what one tool call costs, and a ReAct run on both.

Starts a real PostgreSQL server (Debian's binaries, the tests' fixture: initdb + pg_ctl in a temp dir on a
free loopback port), builds the same city (seed 3) into it and into a SQLite file, then measures:

* the median and 90th-percentile wall time of one ``query_sql`` call (through ``execute_tool_action``, so
  the worker thread is included) for a one-row query and for a 50-row (capped) query, per backend;
* a ReAct run (``lits chain``) of every generated question against a loopback model that writes the right
  SQL, per backend (same answers asserted).

    python benchmarks/mapeval_postgres.py [--calls 200] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lits.tools import execute_tool_action  # noqa: E402
from lits_mapeval.database import build_database, build_postgres  # noqa: E402
from lits_mapeval.pg_database import ReadOnlyPostgres  # noqa: E402
from lits_mapeval.sql_tools import Database, ReadOnlyDatabase, make_tools  # noqa: E402
from tests.mapeval.postgres.conftest import READER_PASSWORD, SEED, running_postgres  # noqa: E402
from tests.mapeval.postgres.test_pg_runs import _agent  # noqa: E402

QUERIES = {
    "one row": "SELECT rating FROM places WHERE name = 'Maple Hotel'",
    "50 rows (capped)": "SELECT * FROM distances",
}


def _call_times(database: Database, sql: str, calls: int) -> dict[str, float]:
    tools = make_tools(database)
    action = json.dumps({"tool": "query_sql", "args": {"query": sql}})
    execute_tool_action(action, tools)  # warm: statement cache, pool
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        execute_tool_action(action, tools)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"median_ms": round(statistics.median(times), 2), "p90_ms": round(times[int(0.9 * len(times))], 2)}


def _react(db: str, save: Path) -> dict[str, Any]:
    from lits.testing.servers.openai_compat import FakeOpenAIServer

    env = {**os.environ, "LITS_CACHE_DIR": str(save.parent / "cache"), "PGPASSWORD": READER_PASSWORD}
    with FakeOpenAIServer(responder=_agent) as srv:
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "chain",
                "--dataset",
                "mapeval-sql",
                "--dataset-arg",
                f"db={db}",
                "--dataset-arg",
                f"seed={SEED}",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--save-dir",
                str(save),
                "--no-cache",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    summary = json.loads((save / "eval_results.json").read_text())
    answers = [
        json.loads((save / "results" / f"{k}.json").read_text())["eval"]["answer"] for k in range(summary["instances"])
    ]
    return {
        "instances": summary["instances"],
        "accuracy": summary["accuracy"],
        "wall_s": round(seconds, 2),
        "answers": answers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"calls": args.calls}
    with tempfile.TemporaryDirectory() as tmp, running_postgres() as server:
        os.environ["PGPASSWORD"] = READER_PASSWORD
        build_postgres(server.builder_url, seed=SEED, grant_select_to="reader")
        sqlite_path = build_database(Path(tmp) / "city.sqlite", seed=SEED)
        backends: dict[str, Database] = {
            "sqlite": ReadOnlyDatabase(sqlite_path),
            "postgresql": ReadOnlyPostgres(server.reader_url),
        }
        for name, database in backends.items():
            report[name] = {label: _call_times(database, sql, args.calls) for label, sql in QUERIES.items()}
            database.close()
        report["react_sqlite"] = _react(str(sqlite_path), Path(tmp) / "run-sqlite")
        report["react_postgresql"] = _react(server.reader_url, Path(tmp) / "run-postgresql")
    same = report["react_sqlite"].pop("answers") == report["react_postgresql"].pop("answers")
    report["same_answers"] = same
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
