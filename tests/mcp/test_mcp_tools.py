"""An MCP server's tools as LiTS tools: listing, schemas, and every failure as an observation."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Iterator

import pytest
from pydantic import ValidationError

from lits.tools import ToolUnavailable, execute_tool_action
from lits.tools.mcp import args_model, load_mcp_resource
from tests.mcp.conftest import TOY, serve_mapeval_http


def _call(tools: list[Any], name: str, timeout: float | None = None, **args: Any) -> str:
    return execute_tool_action(json.dumps({"tool": name, "args": args}), tools, timeout)


@pytest.fixture(scope="module")
def toy() -> Iterator[dict[str, Any]]:
    """One toy server for the tests that leave it running."""
    resource = load_mcp_resource(command=f"{sys.executable} {TOY}", timeout=20)
    yield resource
    resource["connection"].close()


@pytest.fixture
def fresh_toy(in_env: dict[str, str], toy_command: str) -> Iterator[dict[str, Any]]:
    """A toy server of its own, for a test that kills it."""
    resource = load_mcp_resource(command=toy_command, timeout=20)
    yield resource
    resource["connection"].close()


def test_the_tools_are_listed_in_the_servers_order_with_their_schemas(toy):
    tools = toy["tools"]
    assert [t.name for t in tools] == ["add", "paint", "refuse", "sleep", "blob", "flaky", "crash"]
    add = tools[0].spec()
    assert add["description"] == "Add two integers."
    assert add["parameters"]["required"] == ["a"]
    assert add["parameters"]["properties"]["a"] == {"description": "first addend", "title": "A", "type": "integer"}
    assert add["parameters"]["properties"]["b"]["default"] == 2
    assert "add, paint, refuse, sleep, blob, flaky, crash" in toy["tool_context"]


def test_arguments_are_checked_against_the_schema_before_the_call(toy):
    tools = toy["tools"]
    assert _call(tools, "add", a=1) == "3"
    assert _call(tools, "paint", color="red", sizes=[1, 2]) == "red 3 none"
    assert _call(tools, "add", a="x") == (
        "Invalid arguments for add: a: Input should be a valid integer, unable to parse string as an integer"
    )
    assert (
        _call(tools, "paint", color="green", sizes=[1])
        == "Invalid arguments for paint: color: Input should be 'red' or 'blue'"
    )
    assert _call(tools, "add", b=1) == "Invalid arguments for add: a: Field required"


def test_a_refused_call_and_a_time_out_become_observations_and_the_server_goes_on(toy):
    tools = toy["tools"]
    assert _call(tools, "refuse", reason="not today") == "Tool refuse failed: Error executing tool refuse: not today"
    assert _call(tools, "sleep", timeout=1, seconds=3) == "Tool sleep timed out after 1 s"
    assert _call(tools, "add", a=40) == "42"


def test_a_server_that_dies_is_restarted_once_then_calls_fail_for_good(fresh_toy):
    tools = fresh_toy["tools"]
    assert _call(tools, "flaky") == "recovered"  # died on the first call, answered after the restart
    with pytest.raises(ToolUnavailable, match=r"MCP server `.*toy_server.py` stopped again after a restart"):
        _call(tools, "crash")
    with pytest.raises(ToolUnavailable, match="stopped again after a restart"):
        _call(tools, "add", a=1)


def test_an_http_server_that_goes_away_is_reconnected_once_then_the_call_fails_in_one_line(cache_dir):
    with serve_mapeval_http(cache_dir) as (url, server):
        resource = load_mcp_resource(url=url)
        assert _call(resource["tools"], "list_tables") == "directions, distances, nearby, places"
        server.kill()
        server.wait(10)
        with pytest.raises(
            ToolUnavailable,
            match=rf"^MCP server {url} stopped \(.*\), and then could not be "
            "reached: ",
        ):
            _call(resource["tools"], "list_tables")
        resource["connection"].close()


def test_the_mapeval_server_serves_the_in_process_tools_unchanged(in_env):
    from lits_mapeval.dataset import load_mapeval_sql_resource

    local = load_mapeval_sql_resource()
    served = load_mcp_resource(command="lits-mapeval serve-mcp")
    try:
        assert [t.spec() for t in served["tools"]] == [t.spec() for t in local["tools"]]
        assert json.dumps([t.spec() for t in served["tools"]]) == json.dumps([t.spec() for t in local["tools"]])
        assert served["tool_context"] == local["tool_context"]
        for name, args in (
            ("list_tables", {}),
            ("describe_table", {"table": "places"}),
            ("query_sql", {"query": "SELECT name FROM places ORDER BY name LIMIT 3"}),
            ("query_sql", {"query": "DELETE FROM places"}),
            ("describe_table", {"tabel": "x"}),
        ):
            assert _call(served["tools"], name, **args) == _call(local["tools"], name, **args)
    finally:
        served["connection"].close()


def test_a_server_that_cannot_start_is_one_line_naming_it(in_env):
    with pytest.raises(
        ValueError,
        match=r"^MCP server `\S+ -m no_such_mcp_module` could not be started: .*"
        r"No module named no_such_mcp_module$",
    ):
        load_mcp_resource(command=f"{sys.executable} -m no_such_mcp_module")
    with pytest.raises(ValueError, match="could not be started: .*No such file"):
        load_mcp_resource(command="/nonexistent/mcp-server")


def test_without_the_sdk_the_error_says_how_to_install_it(monkeypatch, toy_command):
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(ValueError, match=r"pip install 'lits-core\[mcp\]'"):
        load_mcp_resource(command=toy_command)


def test_a_json_schema_becomes_a_pydantic_model_keyed_by_the_json_names():
    model = args_model(
        "t",
        {
            "type": "object",
            "required": ["model_config", "kind"],
            "properties": {
                "model_config": {"type": "string", "description": "a name pydantic reserves"},
                "kind": {"enum": ["a", "b"]},
                "limit": {"type": ["integer", "null"], "default": 5},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        },
    )
    value = model.model_validate({"model_config": "x", "kind": "b", "tags": ["t"]})
    assert value.model_dump(by_alias=True) == {"model_config": "x", "kind": "b", "limit": 5, "tags": ["t"]}
    assert model.model_fields["field_0"].description == "a name pydantic reserves"
    with pytest.raises(ValidationError):
        model.model_validate({"model_config": "x", "kind": "c"})
    with pytest.raises(ValidationError):
        model.model_validate({"model_config": "x", "kind": "a", "tags": [1]})


def test_a_server_that_never_answers_is_given_up_after_the_start_timeout(in_env):
    with pytest.raises(ValueError, match=r"^MCP server `.*` did not answer within 1 s of starting$"):
        load_mcp_resource(command=f"{sys.executable} -c 'import time; time.sleep(60)'", start_timeout=1)


def test_every_page_of_the_listing_is_read_and_an_unstable_order_falls_back_to_the_names():
    resource = load_mcp_resource(command=f"{sys.executable} {TOY.with_name('paged_server.py')}")
    try:
        assert [t.name for t in resource["tools"]] == ["alpha", "mid", "zeta"]
        assert _call(resource["tools"], "mid") == "mid ok"
    finally:
        resource["connection"].close()


def test_a_50_mb_result_is_read_with_a_byte_limit_and_cut_to_4000_characters_saying_so(toy):
    observation = _call(toy["tools"], "blob", timeout=20, megabytes=50)
    head, note = observation.rsplit("\n", 1)
    assert head == "x" * 4000
    assert re.fullmatch(r"\[result cut at 4,000 characters of [\d,]+ bytes\]", note), note
    assert int(note.split(" of ")[1].split()[0].replace(",", "")) > 50_000_000


def test_a_result_over_4000_characters_is_cut_with_its_size(toy):
    observation = _call(toy["tools"], "blob", timeout=20, megabytes=0.01)
    assert observation == "x" * 4000 + "\n[result cut at 4,000 characters of 10,000 characters]"


def test_a_small_result_is_given_whole(toy):
    assert _call(toy["tools"], "blob", timeout=20, megabytes=0.001) == "x" * 1000


def test_lines_split_in_any_chunking_come_out_the_same_and_a_long_one_keeps_its_head():
    from lits.tools.mcp_stdio import CutLine, LineSplitter

    data = b'{"a": 1}\n' + b"y" * 300 + b"\n" + b'{"b": 2}\n'
    for size in (1, 7, 64, len(data)):
        splitter = LineSplitter(limit=100, head=10)
        lines = [line for start in range(0, len(data), size) for line in splitter.feed(data[start : start + size])]
        assert lines == [b'{"a": 1}', CutLine(b"y" * 10, 300), b'{"b": 2}']


def test_a_cut_reply_answers_its_request_with_the_head_of_its_text():
    from lits.tools.mcp_stdio import CutLine, cut_reply

    reply = cut_reply(CutLine(b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ab\\"c\\u00', 999))
    assert reply is not None and reply["id"] == 7
    assert reply["result"]["content"][0]["text"] == 'ab"c\n[reply cut: the server sent 999 bytes]'
