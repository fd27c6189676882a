"""The ``mapeval-sql`` dataset, its resource (the tools) and its evaluation."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from lits.api import register_dataset, register_resource
from lits_mapeval.database import build_database
from lits_mapeval.pg_url import is_postgres_url
from lits_mapeval.questions import generate_questions, generate_questions_from

if TYPE_CHECKING:  # the tools (and pydantic) load only when a run asks for them
    from lits.api import BaseTool
    from lits_mapeval.sql_tools import Database
from lits_mapeval.validation import check_items

NOTES = (
    "Questions name places; the other tables refer to them by place_id. distances has one row per travel mode "
    "(walking, driving, transit); duration_s is in seconds. The question lists numbered options: answer with "
    "the option number only, or 0 when the database cannot answer it."
)


def tool_context(database: Database) -> str:
    """Tables and columns read from the database itself, so the context cannot drift from the schema."""
    tables = "; ".join(f"{t}({', '.join(database.columns(t))})" for t in database.tables())
    return f"The map database is {database.dialect}, with these tables (columns): {tables}.\n{NOTES}"


def default_db(seed: int = 0) -> Path:
    """The plugin's own city, built once per seed into the cache dir."""
    root = Path(os.environ.get("LITS_CACHE_DIR") or Path.home() / ".cache" / "lits") / "mapeval"
    path = root / f"city-{seed}.sqlite"
    if path.exists():
        return path
    with _BUILDING:  # built aside and renamed: a reader (a thread, another process) never sees half a city
        if not path.exists():
            aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            build_database(aside, seed=seed)
            os.replace(aside, path)
    return path


_BUILDING = threading.Lock()


def to_example(item: dict[str, Any]) -> dict[str, object]:
    """A MapEval-format item -> an example whose query shows the numbered options."""
    answer = item.get("answer") or {}
    options = list(answer.get("options") or [])
    if not item.get("question") or not options:
        raise ValueError(f"MapEval item {item.get('id')!r} needs a question and answer.options")
    listed = "\n".join(f"{i}. {o}" for i, o in enumerate(options, 1))
    return {
        "id": str(item.get("id")),
        "query": f"{item['question']}\nOptions:\n{listed}",
        "answer": answer,
        "classification": item.get("classification"),
        "context": item.get("context"),
    }


def chosen_option(final_answer: object) -> int | None:
    """0-based option index from an answer like "2" or "Option 2"; -1 for unanswerable; None if unreadable."""
    text = str(final_answer or "").strip().lower()
    if not text:
        return None
    if "unanswerable" in text or "cannot be answered" in text:
        return -1
    m = re.search(r"-?\d+", text)
    if m is None:
        return None
    n = int(m.group())
    return -1 if n <= 0 else n - 1


def evaluate(example: dict[str, Any], final_answer: object) -> dict[str, object]:
    """Multiple-choice accuracy; "unanswerable" (correct = -1) is right only when the answer says so."""
    picked = chosen_option(final_answer)
    correct = int(example["answer"]["correct"])
    return {"solved": picked == correct, "option_chosen": str(picked), "unanswerable": correct == -1}


@register_dataset("mapeval-sql", task_type="tool_use", evaluate=evaluate)
def load_mapeval_sql(
    path: str | None = None,
    db: str | None = None,
    seed: int = 0,
    per_class: int = 2,
    allow_privileged_role: object = False,
    **kwargs: object,
) -> list[dict[str, object]]:
    """Questions generated from the plugin's city, or a MapEval JSON file (``path``) with its ``db`` (a SQLite
    file or a ``postgresql://user@host:port/name`` URL; ``allow_privileged_role``: run the tools even as a role
    that may do more than read)."""
    if kwargs:
        raise ValueError(
            f"unknown mapeval-sql dataset argument(s): {', '.join(sorted(kwargs))} "
            "(known: path, db, seed, per_class, allow_privileged_role)"
        )
    if path is not None:
        file = Path(path).expanduser()
        if not file.exists():
            raise FileNotFoundError(f"MapEval question file not found: {file}")
        try:
            items = json.loads(file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{file} is not a MapEval JSON file: {exc}") from None
        if not isinstance(items, list):
            raise ValueError(f"{file} is not a MapEval JSON file: expected a list of questions")
        check_items(items, str(file))
    elif is_postgres_url(db):
        from lits_mapeval.pg_database import ReadOnlyPostgres

        database = ReadOnlyPostgres(str(db), allow_privileged_role=_flag(allow_privileged_role))
        try:
            items = generate_questions_from(database.question_rows(), seed=int(seed), per_class=int(per_class))
        except Exception as exc:  # e.g. a database without the city's tables
            raise ValueError(
                f"cannot generate questions from {database.url}: {' '.join(str(exc).split())[:200]} "
                "(build the city with `lits-mapeval build-db --to URL`, or pass path=QUESTIONS.json)"
            ) from None
        finally:
            database.close()
        check_items(items, f"the questions generated for seed {seed} from {database.url}")
    else:
        items = generate_questions(_database(db, seed), seed=int(seed), per_class=int(per_class))
        check_items(items, f"the questions generated for seed {seed}")
    return [to_example(item) for item in items]


def _flag(value: object) -> bool:
    """A true/false dataset arg (``allow_privileged_role=true``); anything else is refused in one line."""
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false", "1", "0"):
        return str(value).lower() in ("true", "1")
    raise ValueError(f"allow_privileged_role must be true or false, not {value!r}")


def _database(db: str | None, seed: int) -> Path:
    """The user's SQLite file (which must exist), or the plugin's own city for ``seed``."""
    if db is None:
        return default_db(int(seed))
    path = Path(db).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"SQLite database not found: {path}")
    return path


class SqlResource(TypedDict):
    """What ``--resource mapeval-sql`` gives the run."""

    tools: list[BaseTool]
    tool_context: str


@register_resource("mapeval-sql")
def load_mapeval_sql_resource(
    db: str | None = None, seed: int = 0, allow_privileged_role: object = False, **kwargs: object
) -> SqlResource:
    from lits_mapeval.sql_tools import ReadOnlyDatabase, make_tools

    if is_postgres_url(db):
        from lits_mapeval.pg_database import ReadOnlyPostgres

        database: Database = ReadOnlyPostgres(str(db), allow_privileged_role=_flag(allow_privileged_role))
    else:
        database = ReadOnlyDatabase(_database(db, seed))
    return {"tools": make_tools(database), "tool_context": tool_context(database)}
