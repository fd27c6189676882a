"""The fast JSON encoder: the standard library's values, or its errors."""

from __future__ import annotations

import json
import math

import pytest

from lits.io import fastjson


def test_compact_text_reads_back_as_the_value_written():
    value = {
        "id": 3,
        "text": 'é "q" \\ \n\x00',
        "floats": [0.1, 1e-05, 1e22, -0.0, 5e-324],
        "flag": None,
        "tuple": (1, "two"),
        "big": 2**70,
        "nested": [{"b": True}],
    }
    assert json.loads(fastjson.compact(value)) == json.loads(json.dumps(value))


def test_non_finite_numbers_are_written_as_python_writes_them():
    text = fastjson.compact([float("nan"), float("inf"), -float("inf")])
    assert text == "[NaN,Infinity,-Infinity]"
    assert math.isnan(json.loads(text)[0])


def test_what_json_refuses_raises_json_s_error_and_a_lone_surrogate_is_still_written():
    with pytest.raises(TypeError):
        fastjson.compact({"opaque": object()})
    assert json.loads(fastjson.compact(["\ud800"])) == ["\ud800"]


def test_compact_or_str_writes_an_unknown_object_as_its_string():
    class Opaque:
        def __str__(self) -> str:
            return "opaque"

    assert json.loads(fastjson.compact_or_str({"o": Opaque(), "n": float("nan")}))["o"] == "opaque"


def test_a_request_body_never_carries_a_non_finite_number_but_may_say_nan_in_text():
    assert json.loads(fastjson.request_body({"prompt": "NaN and Infinity é", "t": 0.7})) == {
        "prompt": "NaN and Infinity é",
        "t": 0.7,
    }
    with pytest.raises(ValueError):
        fastjson.request_body({"t": float("nan")})


def test_a_reply_reads_as_json_reads_it_and_fails_with_json_s_error():
    text = b'{"a": [1, 2.5, 1e-05, NaN, 123456789012345678901234567890], "s": "\\ud800", "a2": 1, "a2": 2}'
    parsed = fastjson.loads(text)
    expected = json.loads(text)
    assert parsed["a"][:3] == expected["a"][:3] and math.isnan(parsed["a"][3]) and parsed["a"][4] == expected["a"][4]
    assert (parsed["s"], parsed["a2"]) == (expected["s"], expected["a2"])
    with pytest.raises(json.JSONDecodeError):
        fastjson.loads(b"{not json")
