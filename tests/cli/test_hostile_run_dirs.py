"""A run directory or a config file is data: a tampered one starts nothing and sends no key (issue 41).

Each case gives LiTS a tampered ``config.json`` or config file through one entry point -- ``--dry-run``,
``lits rerun`` (and its ``--dry-run``), ``--resume``, a real run with ``--config``, or the Python API
(:meth:`RunSpec.from_config` with :func:`lits.run`, :func:`lits.resume`) -- with secrets in the environment,
and checks: one clear line (a non-zero exit with one ``lits: error:`` line, or a dry run's ``to confirm``
line), no traceback, the sentinel command never ran, and the loopback collector never received a secret.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import first_listed_action

KEY = "sk-hostile-0123456789abcdefABCDEF"
AWS = "aws-secret-9f8e7d6c5b4a39281706XYZ"
GITHUB = "ghp-0123456789abcdefghijABCDEFGHIJ"
SECRETS = (KEY, AWS, GITHUB)
NAN, INF = float("nan"), float("inf")
#: Item 7 of issue 41 (nan and infinities) is another change: until it lands these are accepted and run.


class Collector:
    """A loopback HTTP server that answers anything and records every request it gets (headers and body)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size).decode("utf-8", "replace") if size else ""
                collector.requests.append(f"{self.command} {self.path}\n{self.headers}\n{body}")
                reply = json.dumps({"choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = _record

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def secrets_received(self) -> list[str]:
        return [request.split("\n", 1)[0] for request in self.requests if any(s in request for s in SECRETS)]


@dataclass
class Ctx:
    """What a tampering may point at: the collector, the sentinel command and the test's folder."""

    tmp: Path
    collector: str
    sentinel: Path

    @property
    def command(self) -> str:
        return f"{sys.executable} -c \"open(r'{self.sentinel}', 'w').close()\""


Tamper = Callable[[dict, Ctx], dict]


@dataclass
class Case:
    entry: str
    tamper: Tamper
    #: Flags given on the command line (``{collector}`` and ``{command}`` filled in), or the API call's keywords.
    given: list[str] = field(default_factory=list)


def _tool_run(config: dict, ctx: Ctx, **resource_args: object) -> dict:
    """A tool-use run whose MCP server command is the sentinel (the embedded scripted model calls nothing)."""
    return {
        **config,
        "dataset": "mapeval-sql",
        "dataset_args": {},
        "model": "scripted",
        "base_url": None,
        "resource": "mcp",
        "resource_args": {"command": ctx.command, **resource_args},
    }


def _command(config: dict, ctx: Ctx) -> dict:
    return _tool_run(config, ctx)


def _command_env(config: dict, ctx: Ctx) -> dict:
    return _tool_run(config, ctx, env={"PYTHONSTARTUP": str(ctx.tmp / "evil.py")})


def _command_cwd(config: dict, ctx: Ctx) -> dict:
    return _tool_run(config, ctx, cwd=str(ctx.tmp))


def _url(config: dict, ctx: Ctx) -> dict:
    return {**config, "base_url": f"{ctx.collector}/v1"}


def _eval_url(config: dict, ctx: Ctx) -> dict:
    return {**config, "component_models": {"eval": {"model": "m", "base_url": f"{ctx.collector}/evil/v1", "args": {}}}}


def _key_env(variable: str) -> Tamper:
    def tamper(config: dict, ctx: Ctx) -> dict:
        return {
            **config,
            "component_models": {"policy": {"model": "m", "base_url": None, "args": {"key_env": variable}}},
        }

    return tamper


def _userinfo_url(config: dict, ctx: Ctx) -> dict:
    return {**config, "base_url": ctx.collector.replace("http://", "http://user:pw@") + "/v1"}


def _masked_url(config: dict, ctx: Ctx) -> dict:
    return {**config, "base_url": f"{ctx.collector}/v1?***"}


def _ray_cluster(config: dict, ctx: Ctx) -> dict:
    return {**config, "model": "scripted", "base_url": None, "executor": "ray", "ray_address": "127.0.0.1:1"}


def _cache_on_a_file(config: dict, ctx: Ctx) -> dict:
    return {**config, "model": "scripted", "base_url": None, "cache": str(ctx.tmp / "precious.txt"), "no_cache": False}


def _gguf_path(config: dict, ctx: Ctx) -> dict:
    return {**config, "model": str(ctx.tmp / "nowhere" / ".." / "evil.gguf"), "base_url": None}


def _scripted(**changes: object) -> Tamper:
    def tamper(config: dict, ctx: Ctx) -> dict:
        out = {**config, "model": "scripted", "base_url": None}
        for key, value in changes.items():
            if key.startswith("search_args."):
                out["search_args"] = {**out["search_args"], key.split(".", 1)[1]: value}
            else:
                out[key] = value
        return out

    return tamper


CASES = {
    # commands: an MCP server's command, cwd or env from a file
    "command_rerun": Case("rerun", _command),
    "command_rerun_dry_run": Case("rerun-dry", _command),
    "command_resume": Case("resume", _command),
    "command_resume_dry_run": Case("resume-dry", _command),
    "command_config_file_dry_run": Case("config-dry", _command),
    "command_config_file_run": Case("config-run", _command),
    "command_api_from_config": Case("api-run", _command),
    "command_api_resume": Case("api-resume", _command),
    "command_given_but_env_from_the_file": Case("config-run", _command_env, ["--resource-arg", "command={command}"]),
    "command_given_again_but_cwd_from_config_json": Case(
        "resume", _command_cwd, ["--resource-arg", "command={command}"]
    ),
    # where the key goes
    "url_rerun": Case("rerun", _url),
    "url_rerun_dry_run": Case("rerun-dry", _url),
    "url_resume": Case("resume", _url),
    "url_resume_dry_run": Case("resume-dry", _url),
    "url_config_file_run": Case("config-run", _url),
    "url_api_from_config": Case("api-run", _url),
    "url_api_resume": Case("api-resume", _url),
    "component_url_resume": Case("resume", _eval_url, ["--base-url", "{collector}/v1"]),
    "component_url_config_file_run": Case("config-run", _eval_url, ["--base-url", "{collector}/v1"]),
    "userinfo_url_rerun": Case("rerun", _userinfo_url),
    "masked_url_resume": Case("resume", _masked_url),
    # which variable the key is read from
    "aws_key_env_resume": Case("resume", _key_env("AWS_SECRET_ACCESS_KEY"), ["--base-url", "{collector}/v1"]),
    "github_key_env_config_file_run": Case("config-run", _key_env("GITHUB_TOKEN"), ["--base-url", "{collector}/v1"]),
    "aws_key_env_api_from_config": Case("api-run", _key_env("AWS_SECRET_ACCESS_KEY"), ["base_url={collector}/v1"]),
    # a Ray cluster to join (its results are unpickled by the driver)
    "ray_cluster_rerun": Case("rerun", _ray_cluster),
    # paths
    "cache_on_a_precious_file_rerun": Case("rerun", _cache_on_a_file),
    "gguf_model_path_resume": Case("resume", _gguf_path),
    # huge and non-finite numbers
    "infinite_iterations_rerun": Case("rerun", _scripted(**{"search_args.n_iterations": INF})),
    "nan_depth_rerun_dry_run": Case("rerun-dry", _scripted(**{"search_args.max_depth": NAN})),
    "huge_concurrency_resume": Case("resume", _scripted(concurrency=1e300)),
    "huge_offset_resume": Case("resume", _scripted(offset=10**30)),
    "minus_infinite_call_budget_api_from_config": Case("api-run", _scripted(call_budget=-INF)),
    "nan_call_budget_rerun": Case("rerun", _scripted(call_budget=NAN)),
    "nan_price_resume": Case("resume", _scripted(price_in=NAN)),
    "infinite_read_timeout_api_resume": Case("api-resume", _scripted(read_timeout=INF)),
}

#: The fields a config file may hold (config.json records more: the environment, the models, ...).
SPEC_FIELDS = (
    "command",
    "dataset",
    "dataset_args",
    "limit",
    "resource",
    "resource_args",
    "model",
    "base_url",
    "component_models",
    "search_args",
    "cache",
    "concurrency",
    "call_budget",
    "price_in",
)

API = """
import json, sys
import lits
from lits.api import UserError
entry, run_dir, out, given = sys.argv[1], sys.argv[2], sys.argv[3], dict(a.split("=", 1) for a in sys.argv[4:])
try:
    if entry == "api-run":
        config = json.loads(open(run_dir + "/config.json", encoding="utf-8").read())
        lits.run(lits.RunSpec.from_config(config, save_dir=out, **given))
    else:
        lits.resume(run_dir, **given)
except UserError as exc:
    print(f"lits: error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lits-cache")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    """A small search run against a loopback model server: the run directory every case tampers with."""
    root = tmp_path_factory.mktemp("finished")
    env = {**os.environ, "OPENAI_API_KEY": KEY, "LITS_CACHE_DIR": str(cache_dir), "LITS_STATE_DIR": str(root / "state")}
    with FakeOpenAIServer(responder=first_listed_action) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "lits",
                "search",
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--dataset",
                "blocksworld",
                "--dataset-arg",
                "steps=2",
                "--limit",
                "1",
                "--search-arg",
                "n_iterations=1",
                "--save-dir",
                str(root / "run"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    return root / "run"


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    yield server
    server.close()


def _tampered(finished_run: Path, tmp_path: Path, case: Case, ctx: Ctx) -> Path:
    """A copy of the finished run with its config.json tampered and its results gone (so work is left)."""
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    shutil.rmtree(run / "results")
    config = case.tamper(json.loads((run / "config.json").read_text()), ctx)
    (run / "config.json").write_text(json.dumps(config))
    return run


def _invoke(case: Case, run: Path, ctx: Ctx, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    given = [arg.format(collector=ctx.collector, command=ctx.command) for arg in case.given]
    out = str(ctx.tmp / "out")
    if case.entry.startswith("api-"):
        argv = ["-c", API, case.entry, str(run), out, *given]
    elif case.entry.startswith("rerun"):
        argv = [
            "-m",
            "lits",
            "rerun",
            str(run),
            "--save-dir",
            out,
            *(["--dry-run"] if case.entry == "rerun-dry" else []),
        ]
    elif case.entry.startswith("resume"):
        argv = [
            "-m",
            "lits",
            "search",
            "--resume",
            "--save-dir",
            str(run),
            *given,
            *(["--dry-run"] if case.entry == "resume-dry" else []),
        ]
    else:
        config = json.loads((run / "config.json").read_text())
        spec = {key: config[key] for key in SPEC_FIELDS if config.get(key) is not None}
        for model in spec.get("component_models", {}).values():  # a file names it as the flag does
            model["args"] = {("api_key_env" if k == "key_env" else k): v for k, v in model["args"].items()}
        file = ctx.tmp / "run.yaml"
        file.write_text(json.dumps(spec))  # JSON is YAML
        argv = [
            "-m",
            "lits",
            "search",
            "--config",
            str(file),
            "--save-dir",
            out,
            *given,
            *(["--dry-run"] if case.entry == "config-dry" else []),
        ]
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=ctx.tmp,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


@pytest.mark.parametrize("name", list(CASES))
def test_a_tampered_run_dir_or_config_file_starts_nothing_sends_no_key_and_gets_one_line(
    name: str, finished_run: Path, cache_dir: Path, collector: Collector, tmp_path: Path
) -> None:
    case = CASES[name]
    ctx = Ctx(tmp_path, collector.url, tmp_path / "pwned")
    (tmp_path / "precious.txt").write_text("keep me")
    run = _tampered(finished_run, tmp_path, case, ctx)
    env = {
        **os.environ,
        "OPENAI_API_KEY": KEY,
        "AWS_SECRET_ACCESS_KEY": AWS,
        "GITHUB_TOKEN": GITHUB,
        "LITS_CACHE_DIR": str(cache_dir),
        "LITS_STATE_DIR": str(tmp_path / "state"),
        "LITS_HEDGE_SHARE": "0",
    }
    env.pop("OPENAI_BASE_URL", None)

    done = _invoke(case, run, ctx, env)

    assert "Traceback" not in done.stderr, done.stderr
    assert not ctx.sentinel.exists(), "the file's command ran"
    assert collector.secrets_received() == [], "a secret reached the collector"
    assert (tmp_path / "precious.txt").read_text() == "keep me"
    if done.returncode == 0:  # only a dry run may end well, saying what a run would ask to confirm
        assert case.entry.endswith("-dry"), done.stderr
        assert len([line for line in done.stdout.splitlines() if line.startswith("to confirm")]) == 1, done.stdout
    else:
        assert len([line for line in done.stderr.splitlines() if line.startswith("lits: error:")]) == 1, done.stderr
