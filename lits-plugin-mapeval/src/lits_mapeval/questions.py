"""Questions in the MapEval format, generated from the database with gold answers computed by SQL."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence


class Rows(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class QuestionSource(Protocol):
    """The part of ``sqlite3.Connection`` the generator uses (``?`` placeholders); the PostgreSQL backend has
    one too (:class:`lits_mapeval.pg_database.QmarkConnection`), so both backends give the same questions."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Rows: ...


CLASSES = ("poi", "nearby", "routing", "trip", "unanswerable")


def _mcq(rng: random.Random, right: str, wrong: list[str]) -> tuple[list[str], int]:
    options = [right] + [w for w in dict.fromkeys(wrong) if w != right][:3]
    rng.shuffle(options)
    return options, options.index(right)


def _poi(conn: QuestionSource, rng: random.Random) -> tuple[str, str, list[str]]:
    pid, name = rng.choice(conn.execute("SELECT place_id, name FROM places ORDER BY place_id").fetchall())
    (rating,) = conn.execute("SELECT rating FROM places WHERE place_id = ?", (pid,)).fetchone()
    wrong = [
        f"{r:.1f}"
        for (r,) in conn.execute(
            "SELECT DISTINCT rating FROM places WHERE rating != ? ORDER BY rating", (rating,)
        ).fetchall()
    ]
    return f"What is the rating of {name}?", f"{rating:.1f}", rng.sample(wrong, min(3, len(wrong)))


def _nearby(conn: QuestionSource, rng: random.Random) -> tuple[str, str, list[str]]:
    rows = conn.execute(
        "SELECT DISTINCT p.place_id, p.name, n.type FROM nearby n JOIN places p ON p.place_id = n.place_id "
        "ORDER BY p.place_id, n.type"
    ).fetchall()
    pid, name, kind = rng.choice(rows)
    ranked = conn.execute(
        "SELECT q.name FROM nearby n JOIN places q ON q.place_id = n.nearby_place_id "
        "WHERE n.place_id = ? AND n.type = ? ORDER BY n.distance_m, q.name",
        (pid, kind),
    ).fetchall()
    others = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM places WHERE types = ? AND place_id != ? ORDER BY name", (kind, pid)
        ).fetchall()
    ]
    return (
        f"Which {kind} is closest to {name}?",
        ranked[0][0],
        [o for o in others if o != ranked[0][0]] or ["none of these"],
    )


def _minutes(conn: QuestionSource, a: str, b: str, mode: str) -> int:
    (secs,) = conn.execute(
        "SELECT duration_s FROM distances WHERE origin_id = ? AND destination_id = ? AND mode = ?", (a, b, mode)
    ).fetchone()
    return round(secs / 60)


def _routing(conn: QuestionSource, rng: random.Random) -> tuple[str, str, list[str]]:
    (a, an), (b, bn) = rng.sample(conn.execute("SELECT place_id, name FROM places ORDER BY place_id").fetchall(), 2)
    mode = rng.choice(["walking", "driving", "transit"])
    right = _minutes(conn, a, b, mode)
    return (
        f"How many minutes does it take to go from {an} to {bn} by {mode}?",
        f"{right} min",
        [f"{right + d} min" for d in (-7, 5, 12) if right + d > 0] + [f"{right * 2 + 3} min"],
    )


def _trip(conn: QuestionSource, rng: random.Random) -> tuple[str, str, list[str]]:
    (a, an), (b, bn), (c, cn) = rng.sample(
        conn.execute("SELECT place_id, name FROM places ORDER BY place_id").fetchall(), 3
    )
    right = _minutes(conn, a, b, "driving") + _minutes(conn, b, c, "driving")
    return (
        f"Driving from {an} to {bn} and then on to {cn}, how many minutes does the trip take in total?",
        f"{right} min",
        [f"{right + d} min" for d in (-4, 3, 9) if right + d > 0] + [f"{right + 15} min"],
    )


def _unanswerable(conn: QuestionSource, rng: random.Random) -> tuple[str, str, list[str]]:
    (name,) = rng.choice(conn.execute("SELECT name FROM places ORDER BY place_id").fetchall())
    fake = [f"+34 91 {rng.randint(100, 999)} {rng.randint(1000, 9999)}" for _ in range(4)]
    return f"What is the phone number of {name}?", "", fake


_MAKERS: dict[str, Callable[[QuestionSource, random.Random], tuple[str, str, list[str]]]] = {
    "poi": _poi,
    "nearby": _nearby,
    "routing": _routing,
    "trip": _trip,
    "unanswerable": _unanswerable,
}


def generate_questions(db_path: str | Path, seed: int = 0, per_class: int = 2) -> list[dict[str, Any]]:
    """``per_class`` questions of each class from a SQLite file, deterministic for a seed."""
    conn = sqlite3.connect(f"file:{Path(db_path).resolve()}?mode=ro", uri=True)
    try:
        return generate_questions_from(conn, seed=seed, per_class=per_class)
    finally:
        conn.close()


def generate_questions_from(conn: QuestionSource, seed: int = 0, per_class: int = 2) -> list[dict[str, Any]]:
    """``per_class`` questions of each class, deterministic for a seed and the database's rows."""
    rng = random.Random(seed)
    out = []
    for cls in CLASSES:
        for k in range(per_class):
            question, right, wrong = _MAKERS[cls](conn, rng)
            if cls == "unanswerable":
                options, correct = wrong[:4], -1
            else:
                options, correct = _mcq(rng, right, wrong)
            out.append(
                {
                    "id": f"city-{seed}-{cls}-{k}",
                    "question": question,
                    "answer": {"type": "mcq", "options": options, "correct": correct},
                    "classification": cls,
                    "context": "Use the map database tools.",
                }
            )
    return out
