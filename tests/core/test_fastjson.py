"""The fast JSON encoder: the standard library's values, or its errors."""

from __future__ import annotations

import json
import math

import pytest

from lits import fastjson


def test_compact_text_reads_back_as_the_value_written():
    value = {"id": 3, "text": "é \"q\" \\ \n\x00", "floats": [0.1, 1e-05, 1e22, -0.0, 5e-324], "flag": None,
             "tuple": (1, "two"), "big": 2**70, "nested": [{"b": True}]}
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
