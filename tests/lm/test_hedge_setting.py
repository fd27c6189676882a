"""Where hedged copies may go: a server on this machine by default; a server elsewhere bills each copy, so
only when asked for (``LITS_HEDGE=on`` or ``hedge="on"``), and the console says so before the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

import lits
from lits.api import EnvAction, EnvStep, Policy
from lits.lm.http.hedging import hedge_mode_from_env, is_loopback
from lits.lm.openai_compat import OpenAICompatibleModel

HOSTED = "https://api.example.invalid/v1"  # never called: these tests only build the backend


@pytest.fixture
def model() -> Iterator[Any]:
    made: list[OpenAICompatibleModel] = []

    def make(base_url: str, **options: Any) -> OpenAICompatibleModel:
        made.append(OpenAICompatibleModel("m", base_url, api_key="k", hedge_share=0.1, **options))
        return made[-1]

    yield make
    for each in made:
        each.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.53", "localhost", "::1"])
def test_loopback_hosts_are_this_machine(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["api.openai.com", "10.0.0.5", "192.168.1.2", "localhost.example.com"])
def test_other_hosts_are_not(host):
    assert not is_loopback(host)


def test_a_server_on_this_machine_gets_hedged_copies_by_default(model, monkeypatch):
    monkeypatch.delenv("LITS_HEDGE", raising=False)
    local = model("http://127.0.0.1:9/v1")
    assert local._transport.hedges.enabled and local.notices() == []


def test_a_hosted_server_gets_no_hedged_copies_unless_asked_for(model, monkeypatch):
    monkeypatch.delenv("LITS_HEDGE", raising=False)
    hosted = model(HOSTED)
    assert not hosted._transport.hedges.enabled and hosted.notices() == []


def test_hedged_copies_to_a_hosted_server_when_asked_for_are_announced(model, monkeypatch):
    monkeypatch.setenv("LITS_HEDGE", "on")
    hosted = model(HOSTED)
    assert hosted._transport.hedges.enabled
    [notice] = hosted.notices()
    assert "hedged copies are on for https://api.example.invalid/v1 (LITS_HEDGE=on)" in notice
    assert "10%" in notice and "bills each copy" in notice


def test_hedge_off_sends_no_copies_even_to_this_machine(model):
    assert not model("http://127.0.0.1:9/v1", hedge="off")._transport.hedges.enabled


@pytest.mark.parametrize("value", ["yes", "1", "loopback"])
def test_a_bad_hedge_setting_in_the_environment_is_a_one_line_error(monkeypatch, value):
    monkeypatch.setenv("LITS_HEDGE", value)
    with pytest.raises(
        ValueError,
        match=r"^\$LITS_HEDGE must be auto \(copies only to a server on this "
        r"machine\), on or off, got",
    ) as info:
        hedge_mode_from_env()
    assert "\n" not in str(info.value)


class LegalMoves(Policy):  # type: ignore[type-arg]
    """A policy that never calls its model (so its hosted backend is only built, never reached)."""

    def _get_actions(
        self, state: Any, n_actions: int, temperature: float, query_idx: Any = None, **kwargs: Any
    ) -> list[Any]:
        from lits_blocksworld.world import generate_actions

        return [EnvStep(action=EnvAction(move)) for move in generate_actions(state.env_state)[:n_actions]]


def test_the_console_says_before_the_run_that_copies_go_to_a_hosted_server(model, monkeypatch, tmp_path: Path, capsys):
    monkeypatch.setenv("LITS_HEDGE", "on")
    policy = LegalMoves(base_model=model(HOSTED), n_actions=2)
    lits.search(
        "blocksworld",
        policy=policy,
        model="scripted",
        limit=1,
        search_args={"n_iterations": 2},
        save_dir=tmp_path / "run",
    )
    err = capsys.readouterr().err
    started = err.index("lits: search blocksworld with")
    assert err.index("lits: hedged copies are on for https://api.example.invalid/v1") > started
