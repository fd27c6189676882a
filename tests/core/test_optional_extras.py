"""Every optional extra, missing, is one line naming the pip command: through the real commands, no traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import lits
from lits.cli.main import main as lits_main
from lits.runtime.extras import MissingExtra

PG_URL = "postgresql://reader@127.0.0.1:1/city"


def _missing(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # the next import of it raises ImportError


def _one_error_line(capsys: pytest.CaptureFixture[str], code: int) -> str:
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


def test_build_db_into_postgresql_without_psycopg(monkeypatch, capsys) -> None:
    from lits_mapeval.cli import main

    _missing(monkeypatch, "psycopg")
    assert _one_error_line(capsys, main(["build-db", "--to", PG_URL])) == (
        "lits-mapeval: error: PostgreSQL needs psycopg 3: pip install 'lits-plugin-mapeval[postgresql]'"
    )


def test_a_run_on_postgresql_without_psycopg(monkeypatch, capsys, tmp_path: Path) -> None:
    _missing(monkeypatch, "psycopg")
    code = lits_main(
        [
            "chain",
            "--dataset",
            "mapeval-sql",
            "--dataset-arg",
            f"db={PG_URL}",
            "--model",
            "scripted",
            "--limit",
            "1",
            "--save-dir",
            str(tmp_path / "run"),
        ]
    )
    assert _one_error_line(capsys, code) == (
        "lits: error: MapEval-SQL on PostgreSQL needs psycopg 3: pip install 'lits-plugin-mapeval[postgresql]'"
    )


def test_the_mcp_resource_without_the_sdk(monkeypatch, capsys, tmp_path: Path) -> None:
    _missing(monkeypatch, "mcp")
    code = lits_main(
        [
            "chain",
            "--dataset",
            "mapeval-sql",
            "--resource",
            "mcp",
            "--resource-arg",
            "command=python -m nothing",
            "--model",
            "scripted",
            "--limit",
            "1",
            "--save-dir",
            str(tmp_path / "run"),
        ]
    )
    assert _one_error_line(capsys, code) == (
        "lits: error: the MCP resource needs the MCP SDK: pip install 'lits-core[mcp]'"
    )


def test_serve_mcp_without_the_sdk(monkeypatch, capsys) -> None:
    from lits_mapeval.cli import main

    _missing(monkeypatch, "mcp")
    assert _one_error_line(capsys, main(["serve-mcp"])) == (
        "lits-mapeval: error: serve-mcp needs the MCP SDK: pip install 'lits-core[mcp]'"
    )


def test_the_embedded_model_without_llama_cpp_python(monkeypatch, capsys, tmp_path: Path) -> None:
    _missing(monkeypatch, "llama_cpp")
    code = lits_main(["search", "--dataset", "blocksworld", "--limit", "1", "--save-dir", str(tmp_path / "run")])
    assert _one_error_line(capsys, code).startswith(
        "lits: error: the embedded model needs llama-cpp-python: pip install 'lits-core[local]' (compiles"
    )


def test_a_yaml_config_without_pyyaml(monkeypatch, capsys, tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("dataset: blocksworld\n")
    _missing(monkeypatch, "yaml")
    code = lits_main(["search", "--config", str(config), "--model", "scripted", "--dry-run"])
    assert _one_error_line(capsys, code) == (
        f"lits: error: {config} (YAML; or write it as TOML) needs PyYAML: pip install 'pyyaml'"
    )


def test_ray_without_ray(monkeypatch, capsys, tmp_path: Path) -> None:
    _missing(monkeypatch, "ray")
    code = lits_main(
        [
            "search",
            "--dataset",
            "blocksworld",
            "--model",
            "scripted",
            "--limit",
            "1",
            "--executor",
            "ray",
            "--save-dir",
            str(tmp_path / "run"),
        ]
    )
    assert _one_error_line(capsys, code) == "lits: error: --executor ray needs Ray: pip install 'lits-core[ray]'"


def test_a_result_table_without_pandas(monkeypatch, tmp_path: Path) -> None:
    result = lits.chain("blocksworld", model="scripted", limit=1, save_dir=tmp_path / "run")
    _missing(monkeypatch, "pandas")
    with pytest.raises(MissingExtra, match=r"^RunResult.to_pandas needs pandas: pip install 'pandas'$"):
        result.to_pandas()


def test_export_as_parquet_without_the_datasets_library(monkeypatch, capsys, tmp_path: Path) -> None:
    lits.search(
        "blocksworld", model="scripted", limit=1, search_args={"n_iterations": 2}, save_dir=str(tmp_path / "run")
    )
    _missing(monkeypatch, "datasets")
    code = lits_main(["export", str(tmp_path / "run"), "--format", "parquet", "--out", str(tmp_path / "out")])
    assert _one_error_line(capsys, code) == (
        "lits: error: --format parquet needs the datasets library: pip install 'lits-core[export]'"
    )
