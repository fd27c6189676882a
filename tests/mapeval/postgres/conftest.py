"""A real PostgreSQL server for the MapEval-SQL tests: Debian's binaries, initdb + pg_ctl in a temp dir.

The server runs on a free loopback port, with its socket in the temp dir, as the ``postgres`` system user
when the tests run as root (initdb refuses root); it is stopped (``pg_ctl stop -m immediate``) and removed
at the end, also when a test or the set-up fails. Roles: ``postgres`` (superuser), ``builder`` (owns the ``city`` database, no
superuser) and ``reader`` (password-authenticated, SELECT only, ``default_transaction_read_only``).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")
START_TIMEOUT_S = 30
READER_PASSWORD = "reader-secret"
SEED = 3


@dataclass(frozen=True)
class PgServer:
    port: int
    socket_dir: Path

    def url(self, user: str, database: str = "city") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    @property
    def reader_url(self) -> str:
        return self.url("reader")

    @property
    def superuser_url(self) -> str:
        return self.url("postgres")

    @property
    def builder_url(self) -> str:
        return self.url("builder")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(*args: str, timeout: float = START_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run a server binary as ``postgres`` when we are root (initdb refuses root), else as ourselves."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=timeout)


def _as_postgres(*args: str, timeout: float = START_TIMEOUT_S) -> None:
    done = _as_server_user(*args, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")


def _grant_reader(server: PgServer) -> None:
    """The roles: ``builder`` owns the database; ``reader`` is the read-only role the plugin README documents."""
    import psycopg

    with psycopg.connect(server.url("postgres", "postgres"), autocommit=True) as conn:
        conn.execute("CREATE ROLE builder LOGIN")
        conn.execute("CREATE DATABASE city OWNER builder")
        conn.execute(f"CREATE ROLE reader LOGIN PASSWORD '{READER_PASSWORD}'")
        conn.execute("ALTER ROLE reader SET default_transaction_read_only = on")
        conn.execute("ALTER ROLE reader SET temp_file_limit = '256MB'")
        conn.execute("REVOKE ALL ON DATABASE city FROM PUBLIC")
        conn.execute("GRANT CONNECT ON DATABASE city TO reader")
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute("GRANT USAGE ON SCHEMA public TO reader")
        # SELECT on the tables: `build-db --grant-select-to reader` (the pg_city fixture)


def _options(server: PgServer) -> str:
    return (
        f"-c listen_addresses=127.0.0.1 -c port={server.port} -c unix_socket_directories={server.socket_dir} "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )


def stop_postgres(server: PgServer) -> None:
    """Kill the server as a crash or an outage would (``pg_ctl stop -m immediate``)."""
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(server.socket_dir / "data"), "-m", "immediate", "-w", "stop")


def start_postgres(server: PgServer) -> None:
    """Start a stopped server again on its data directory and port."""
    _as_postgres(
        str(PG_BIN / "pg_ctl"),
        "-D",
        str(server.socket_dir / "data"),
        "-l",
        str(server.socket_dir / "server.log"),
        "-o",
        _options(server),
        "-w",
        "-t",
        str(START_TIMEOUT_S),
        "start",
        timeout=START_TIMEOUT_S + 5,
    )


@contextmanager
def running_postgres() -> Iterator[PgServer]:
    """A fresh server with the roles and the empty ``city`` database; stopped and removed on exit."""
    root = Path(tempfile.mkdtemp(prefix="lits-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, log = root / "data", root / "server.log"
    server = PgServer(port=_free_port(), socket_dir=root)
    started = False
    try:
        _as_postgres(
            str(PG_BIN / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        )
        (data / "pg_hba.conf").write_text(
            "local all all trust\nhost all reader 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n"
        )
        started = True
        _as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(log),
            "-o",
            _options(server),
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "start",
            timeout=START_TIMEOUT_S + 5,
        )
        _grant_reader(server)
        yield server
    finally:
        if started:
            _as_server_user(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop", timeout=30)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL 15 binaries not found in {PG_BIN}: apt-get install postgresql")
    with running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def reader_env() -> dict[str, str]:
    """The environment of a process that connects as ``reader``: the password only in PGPASSWORD."""
    return {**os.environ, "PGPASSWORD": READER_PASSWORD}


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str


def build_db(*args: str) -> Finished:
    """``lits-mapeval build-db ...`` (the command's entry point, in this process)."""
    from lits_mapeval.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["build-db", *args])
    return Finished(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def pg_city(pg_server: PgServer) -> str:
    """The city for SEED, built by ``lits-mapeval build-db`` into PostgreSQL; the reader's URL."""
    done = build_db("--to", pg_server.builder_url, "--seed", str(SEED), "--grant-select-to", "reader")
    assert done.returncode == 0, done.stderr
    return pg_server.reader_url


@pytest.fixture(scope="session")
def sqlite_city(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same city built by ``lits-mapeval build-db`` into a SQLite file."""
    path = tmp_path_factory.mktemp("sqlite-city") / "city.sqlite"
    done = build_db("--to", str(path), "--seed", str(SEED))
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture
def reader_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process connects as ``reader`` with the password from PGPASSWORD only."""
    monkeypatch.setenv("PGPASSWORD", READER_PASSWORD)


CITY_TABLES = ("places", "nearby", "distances", "directions")


def table_checksums(server: PgServer) -> dict[str, str]:
    """The list of tables and the md5 of each city table's rows in a fixed order (read as the superuser)."""
    import psycopg

    with psycopg.connect(server.superuser_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()[0]
        return {"tables": tables} | {
            t: conn.execute(
                f"SELECT md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '')) FROM {t} AS r"
            ).fetchone()[0]
            for t in CITY_TABLES
        }
