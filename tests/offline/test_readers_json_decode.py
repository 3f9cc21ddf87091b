"""The readers' JSON decoding (`json_loads`: msgspec's decoder, the standard library behind it)
gives exactly what `json.loads` gives: the same values of the same types in the same key order,
and the same error, for valid JSON and for what only the standard library reads (NaN and
Infinity, numbers beyond the float range, integers beyond 64 bits, lone surrogates, a BOM)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundwire.offline.readers import Problems, read_spans
from groundwire.offline.readers import _json as _json_module
from groundwire.offline.readers._json import FAST_DECODER, json_loads

pytest.importorskip("msgspec")  # the `fast-json` extra; without it json_loads is json.loads


def _same(a: Any, b: Any) -> bool:
    """Equal values of identical types throughout; dict keys in the same order; floats by repr
    (so -0.0 differs from 0.0 and NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return bool(a == b)


def _outcome(data: bytes, loads: Any) -> tuple[str, Any]:
    """('value', the value) or ('error', its type and message)."""
    try:
        return "value", loads(data)
    except (ValueError, RecursionError) as error:
        return "error", (type(error), str(error))


def _assert_as_stdlib(data: bytes) -> None:
    fast, slow = _outcome(data, json_loads), _outcome(data, json.loads)
    assert fast[0] == slow[0], (data[:200], fast, slow)
    if slow[0] == "value":
        assert _same(fast[1], slow[1]), (data[:200], fast, slow)
    else:
        assert fast[1] == slow[1]


_WS = st.sampled_from(["", "", " ", "\n", "\t", " \r\n "])
_NUMBER = st.tuples(
    st.sampled_from(["", "-"]),
    st.one_of(st.integers(0, 2**70), st.integers(0, 10**45)).map(str),
    st.one_of(st.just(""), st.integers(0, 10**25).map(lambda n: f".{n}")),
    st.one_of(st.just(""), st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]))),
    st.integers(0, 999).map(str),
).map(lambda p: p[0] + p[1] + p[2] + ("".join(p[3]) + p[4] if p[3] else ""))
_ONLY_STDLIB = st.sampled_from(
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "1e400",
        "-1e400",
        "123.4e308",
        "18446744073709551616",  # 2**64: orjson would give a float here
        "-9223372036854775809",
        "123456789012345678901234567890",
        '"\\ud800"',  # a lone surrogate escape
        '"\\udc00\\ud83d"',  # surrogates in the wrong order
        "1e-400",
        "-0",
        "-0.0",
        "18446744073709551615",
    ]
)
_ESCAPE = st.integers(0, 0xFFFF).map(lambda code: f"\\u{code:04x}")  # surrogates included
# A raw character must encode to UTF-8 (no lone surrogate: the document would not be bytes);
# escaped ones above may be surrogates.
_CHARACTER = st.tuples(st.characters(codec="utf-8"), st.booleans()).map(
    lambda pair: json.dumps(pair[0], ensure_ascii=pair[1])[1:-1]
)
_STRING = st.lists(st.one_of(_CHARACTER, _ESCAPE), max_size=8).map(
    lambda parts: '"' + "".join(parts) + '"'
)
_KEY = st.one_of(st.sampled_from(['"a"', '"b"', '"spanId"']), _STRING)  # repeated keys too


def _padded(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(_WS, text, _WS).map("".join)


def _containers(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    array = st.lists(_padded(inner), max_size=5).map(lambda items: "[" + ",".join(items) + "]")
    pair = st.tuples(_padded(_KEY), _padded(inner)).map(lambda kv: kv[0] + ":" + kv[1])
    obj = st.lists(pair, max_size=5).map(lambda pairs: "{" + ",".join(pairs) + "}")
    return st.one_of(array, obj)


_VALUE = st.recursive(
    st.one_of(_NUMBER, _ONLY_STDLIB, _STRING, st.sampled_from(["true", "false", "null"])),
    _containers,
    max_leaves=25,
)


@st.composite
def _documents(draw: st.DrawFn) -> bytes:
    """A JSON document as bytes, now and then with a BOM, in UTF-16, or with one byte changed."""
    data = draw(_padded(_VALUE)).encode("utf-8")
    change = draw(st.sampled_from(["none"] * 6 + ["bom", "utf-16", "byte"]))
    if change == "bom":
        return b"\xef\xbb\xbf" + data
    if change == "utf-16":
        return data.decode("utf-8").encode("utf-16-le")
    if change == "byte" and data:
        place = draw(st.integers(0, len(data) - 1))
        return data[:place] + bytes([draw(st.integers(0, 255))]) + data[place + 1 :]
    return data


def test_the_fast_decoder_is_in_use_where_msgspec_is_installed() -> None:
    assert FAST_DECODER is not None
    assert json_loads is not json.loads


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents())
def test_json_loads_gives_what_the_standard_library_gives(data: bytes) -> None:
    _assert_as_stdlib(data)


@pytest.mark.parametrize(
    "data",
    [
        b'{"v": 123456789012345678901234567890}',
        b'{"v": -9223372036854775809}',
        b'{"v": 18446744073709551616}',
        b'{"v": NaN, "w": -Infinity}',
        b'{"v": 1e400}',
        b'{"v": "\\ud800"}',
        b'{"\\udfff": 1}',
        b'{"v": "\xed\xa0\x80"}',  # a surrogate encoded in UTF-8: the stdlib passes it through
        b"\xef\xbb\xbf{}",
        b"[" * 5_000 + b"]" * 5_000,
        b"1" * 5_000,
        b'{"v": 1,}',
        b'{"v": "\xff"}',
        b'"tab\there"',
        b'{"a": 1, "a": 2, "b": [1.5, -0.0, 0.1, 5e-324]}',
    ],
)
def test_the_inputs_only_the_standard_library_reads_give_its_value_or_error(data: bytes) -> None:
    _assert_as_stdlib(data)


def _span_line(int_value: str, double_value: str) -> bytes:
    """One OTLP/JSON line whose span has an intValue and a doubleValue written unquoted."""
    return (
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c",'
        '"spanId":"b7ad6b7169203331","name":"x","attributes":['
        f'{{"key":"i","value":{{"intValue":{int_value}}}}},'
        f'{{"key":"d","value":{{"doubleValue":{double_value}}}}}]}}]}}]}}]}}\n'
    ).encode()


def test_a_trace_file_keeps_integers_beyond_64_bits_exact_and_reads_nan(tmp_path: Path) -> None:
    """What a fast decoder alone would change (orjson gives a float for the integer, msgspec
    refuses NaN): the rows stay the standard library's."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(_span_line("123456789012345678901234567890", "1.5") + _span_line("-7", "NaN"))
    problems = Problems(strict=True)
    spans = [span for batch in read_spans([path], problems) for span in batch.spans]
    first, second = (dict(span.attributes) for span in spans)
    assert first["i"] == 123456789012345678901234567890
    assert type(first["i"]) is int
    assert first["d"] == 1.5
    assert second["i"] == -7
    assert math.isnan(second["d"])


def test_without_msgspec_the_standard_library_decodes() -> None:
    """The extra is optional: without msgspec, `json_loads` is `json.loads` itself."""
    script = (  # the module alone, by path: it needs nothing else of groundwire
        "import importlib.util, json, sys; sys.modules['msgspec'] = None\n"
        "spec = importlib.util.spec_from_file_location('decode', sys.argv[1])\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "assert module.FAST_DECODER is None and module.json_loads is json.loads\n"
        "print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, _json_module.__file__ or ""],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_a_loader_built_now_decodes_fast_and_falls_back_for_what_only_json_reads() -> None:
    """The builder behind `json_loads`, called here rather than at import (so mutation testing
    sees it): the fast decoder's value where it reads the input, `json.loads`'s where it refuses,
    and `json.loads`'s error for bad JSON."""
    assert FAST_DECODER is not None
    loads = _json_module._loads_with(FAST_DECODER)
    assert loads(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    nan = loads(b'{"v": NaN}')["v"]
    assert math.isnan(nan)
    with pytest.raises(json.JSONDecodeError, match="Expecting property name"):
        loads(b'{"v": 1,}')
