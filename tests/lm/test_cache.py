"""The persistent response cache."""

from __future__ import annotations

import hashlib

from lits.lm.cache import ResponseCache
from lits.runtime.observability import InferenceLog, collecting
from lits.testing import ScriptedModel


def test_a_repeated_request_is_served_from_the_cache_and_logged_as_a_hit(tmp_path):
    model = ScriptedModel()
    model.use_cache(ResponseCache(tmp_path / "c.sqlite"))
    log = InferenceLog()
    with collecting(log):
        first = model.generate("q", n=2, temperature=1.0)
        second = model.generate("q", n=2, temperature=1.0)
    assert first == second and len(model.calls) == 1
    assert log.summary()["calls"] == 1 and log.summary()["cache_hits"] == 1


def test_distinct_samples_stay_distinct(tmp_path):
    model = ScriptedModel()
    model.use_cache(ResponseCache(tmp_path / "c.sqlite"))
    outs = model.generate("q", n=3, temperature=1.0)
    assert len(set(outs)) == 3


def test_any_parameter_change_is_a_different_request(tmp_path):
    model = ScriptedModel()
    model.use_cache(ResponseCache(tmp_path / "c.sqlite"))
    model.generate("q", temperature=0.0)
    model.generate("q", temperature=0.5)
    model.generate("q", temperature=0.0, max_tokens=5)
    assert len(model.calls) == 3


def test_the_cache_survives_a_new_process_and_model_object(tmp_path):
    path = tmp_path / "c.sqlite"
    first = ScriptedModel(["answer"])
    first.use_cache(ResponseCache(path))
    first.generate("q")
    second = ScriptedModel(["different"])
    second.use_cache(ResponseCache(path))
    assert second.generate("q") == ["answer"] and second.calls == []


def test_scores_are_cached_too(tmp_path):
    path = tmp_path / "c.sqlite"
    ScriptedModel(scorer=lambda p, c: -1.0).use_cache(None)
    first = ScriptedModel(scorer=lambda p, c: -1.0)
    first.use_cache(ResponseCache(path))
    first.loglikelihood("p", ["a", "b"])
    second = ScriptedModel(scorer=lambda p, c: -5.0)
    second.use_cache(ResponseCache(path))
    assert second.loglikelihood("p", ["a", "b"]) == [-1.0, -1.0] and second.calls == []


def test_identical_requests_in_flight_together_are_paid_once(tmp_path):
    import threading
    import time

    class Slow(ScriptedModel):
        def _generate(self, prompt, params):
            time.sleep(0.1)
            return super()._generate(prompt, params)

    model = Slow(concurrency=8)
    model.use_cache(ResponseCache(tmp_path / "c.sqlite"))
    threads = [threading.Thread(target=model.generate, args=("same",)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(model.calls) == 1


def test_the_keys_of_several_samples_are_those_of_each_sample_alone():
    from lits.lm.cache import generate_keys, request_key

    payload = {"prompt": [{"role": "user", "content": 'Ünïcode "quoted" text'}], "params": {"temperature": 0.7}}
    assert generate_keys("m", payload["params"], payload["prompt"], 12) == [
        request_key("m", "generate", {**payload, "sample": i}) for i in range(12)
    ]


def test_many_answers_are_stored_at_once_and_read_back(tmp_path):
    from lits.lm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many([("a", {"text": "1"}), ("b", {"text": "2"})])
    assert (cache.get("a"), cache.get("b"), len(cache)) == ({"text": "1"}, {"text": "2"}, 2)
    cache.close()


def test_answers_of_a_process_killed_before_its_commit_are_stored_by_the_next_open(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "c.sqlite"
    script = (
        "import os, signal, sys\nfrom lits.lm.cache import ResponseCache\n"
        "cache = ResponseCache(sys.argv[1])\ncache.put('a', {'text': '1'})\n"
        "cache.put_many([('b', {'text': '2'}), ('c', {'text': '3'})])\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True)
    assert killed.returncode == -9, killed.stderr
    assert list(tmp_path.glob("c.sqlite.pending-*"))  # the answers were never committed
    cache = ResponseCache(path)
    assert [cache.get(k) for k in "abc"] == [{"text": "1"}, {"text": "2"}, {"text": "3"}]
    assert not list(tmp_path.glob("c.sqlite.pending-*"))
    cache.close()


def test_a_pending_line_cut_short_is_left_out_and_a_closed_cache_leaves_no_pending_file(tmp_path):
    (tmp_path / "c.sqlite.pending-dead").write_text('"a"\t{"text": "1"}\n"b"\t{"te', encoding="utf-8")
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert (cache.get("a"), cache.get("b")) == ({"text": "1"}, None)
    cache.put("c", {"text": "3"})
    cache.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "pending" in p.name) == []
    assert ResponseCache(tmp_path / "c.sqlite").get("c") == {"text": "3"}


def _reference_key(identity: str, kind: str, payload: object) -> str:
    """The key as ``json.dumps(sort_keys=True, ensure_ascii=False, default=str)`` gives its text."""
    import hashlib
    import json

    text = json.dumps([identity, kind, payload], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_keys_are_those_of_sorted_key_json_so_existing_caches_still_hit():
    from lits.lm.cache import generate_keys, request_key

    every_char = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c <= 0xDFFF) + "😀\U0010ffff"
    prompts: list[object] = [
        'plain text\nwith "quotes", \\backslashes\\ and\ttabs\x00\x1f\x7f',
        every_char,
        [{"role": "system", "content": every_char}, {"role": "user", "content": "é", "name": "x"}],
        [{"b": "two keys", "a": "not a message"}, {"content": "é", "role": 1}],
        [],
        {},
        [{}],
        ("a", 1, 2.5, None, True),
        {"b": [1.0, float("nan")], "a": {"z": "y"}},
        {2: "int keys", 10: "sort as numbers"},
        object.__new__(type("Opaque", (), {"__str__": lambda self: "opaque"})),
    ]
    params = {"n": 3, "temperature": 0.8, "stop": ("\n",), "reply_lines": (("Yes", "No"),), "seed": None}
    for prompt in prompts:
        payload = {"prompt": prompt, "params": params}
        assert request_key("m", "generate", {**payload, "sample": 1}) == _reference_key(
            "m", "generate", {**payload, "sample": 1}
        )
        assert generate_keys("m", params, prompt, 3) == [
            _reference_key("m", "generate", {**payload, "sample": i}) for i in range(3)
        ]


def test_keys_of_requests_that_repeat_messages_stay_those_of_sorted_key_json(monkeypatch):
    from lits.lm import cache

    monkeypatch.setattr(cache, "MESSAGE_CACHE_BYTES", 160)  # holds one of the two repeated messages
    system = {"role": "system", "content": 'Blocks rest on a table. "Quoted", ünïcode, \n lines. ' * 2}
    for turn in range(8):
        prompt = [system, {"role": "user", "content": "same example"}, {"role": "user", "content": f"state {turn}"}]
        payload = {"prompt": prompt, "params": {"n": 2}}
        assert cache.generate_keys("m", payload["params"], prompt, 2) == [
            _reference_key("m", "generate", {**payload, "sample": i}) for i in range(2)
        ]
    assert 0 < cache._MESSAGE_BYTES <= 160


def test_a_models_keys_encode_its_parameters_as_the_sorted_key_json_of_them():
    from lits.lm.base import GenerationParams, _key_body

    model = ScriptedModel()
    every = [
        GenerationParams(n=2, temperature=0.7, stop=("\n",), reply_lines=(("Yes", "Nö"),)),
        GenerationParams(n=2, temperature=1.0),
        GenerationParams(n=2, temperature=1),
    ]  # equal, not the same JSON
    for params in every * 2:  # the second time from the encoded parameters kept by the first
        assert model._sample_keys("prompt", params) == [
            _reference_key(model.identity(), "generate", {"prompt": "prompt", "params": _key_body(params), "sample": i})
            for i in range(2)
        ]


def test_several_keys_are_read_at_once_from_stored_and_pending_answers_in_their_order(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many([("stored", {"text": "a"}), ("also", [1.5, float("-inf")])])
    cache.commit()
    cache.put("pending", "é")
    values = cache.get_many(["pending", "absent", "also", "stored"])
    assert values[:2] == ["é", None] and values[2][1] == float("-inf") and values[3] == {"text": "a"}


def test_a_new_cache_answers_requests_it_never_stored_without_asking_sqlite(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    statements: list[str] = []
    cache._conn.set_trace_callback(statements.append)
    assert cache.get_many(["never", "stored"]) == [None, None]
    assert not [s for s in statements if s.startswith("SELECT")]


def test_a_new_cache_reads_back_the_answers_it_committed(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", {"answer": 1})
    cache.commit()
    assert cache.get("k") == {"answer": 1}


def test_a_new_cache_finds_what_another_connection_stored_once_it_commits_again(tmp_path):
    path = tmp_path / "c.sqlite"
    mine, theirs = ResponseCache(path), ResponseCache(path)
    theirs.put("theirs", "their answer")
    theirs.commit()
    mine.put("mine", "my answer")
    mine.commit()
    assert mine.get_many(["theirs", "mine"]) == ["their answer", "my answer"]


def _chat(turn: str) -> list[dict[str, str]]:
    head = [
        {"role": "system", "content": 'Blocks rest on a table. "Quoted", ünïcode, \n lines. ' * 20},
        {"role": "user", "content": "an example problem " * 20},
        {"role": "assistant", "content": "pick up the red block"},
    ]
    return [*head, {"role": "user", "content": turn}]


def test_a_models_keys_of_chat_prompts_that_share_a_head_stay_those_of_sorted_key_json():
    from lits.lm.base import GenerationParams, _key_body

    model = ScriptedModel()
    for params in [GenerationParams(n=2, temperature=0.8), GenerationParams(n=1, reply_lines=(("Yes", "No"),))] * 2:
        for turn in ("state 1", "state 2", 'state "3"\n'):
            prompt = _chat(turn)
            assert model._sample_keys(prompt, params) == [
                _reference_key(
                    model.identity(), "generate", {"prompt": prompt, "params": _key_body(params), "sample": i}
                )
                for i in range(params.n)
            ]


def test_a_chat_requests_key_hashes_the_shared_head_once_then_only_the_last_message(monkeypatch):
    from lits.lm import cache
    from lits.lm.base import GenerationParams

    model = ScriptedModel()
    params = GenerationParams(n=2, temperature=0.8)
    model._sample_keys(_chat("the first state"), params)
    hashed: list[int] = []
    sha256 = hashlib.sha256

    def counting(data: bytes = b"") -> object:
        hashed.append(len(data))
        return sha256(data)

    monkeypatch.setattr(cache.hashlib, "sha256", counting)
    model._sample_keys(_chat("the second state"), params)
    assert sum(hashed) < 100  # not the ~1.5 KB head again
