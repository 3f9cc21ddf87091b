"""Readers under fuzzing: cut, flipped, mistyped, deeply nested and oversized input never crashes
a read, never loses a good record and never drops a bad one silently.

Inputs are small real files (three one-span traces from the real SDK) in OTLP/JSON, OTLP protobuf
(both framings) and Jaeger JSON, plain, gzip and zstd. Invariants checked on every input:
- no exception escapes (with `strict`, only the documented `BadRecordError`);
- every message names the file;
- every record the damage did not touch is read (plain files, where records have known bytes);
- when a span of the original is missing, at least one problem was reported (nothing silent).
The default run is bounded (a few seconds: 15 examples per property, 40 cuts per file); with
`GROUNDWIRE_FUZZ_EXAMPLES=N` (N > 15) every byte offset is cut and each property runs N examples;
`GROUNDWIRE_FUZZ_REPORT=FILE` records how many inputs were read (docs/reliability.md quotes a long
run).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.offline.readers import BadRecordError, Problems, read_spans
from tests.offline._traces import jaeger_traces, varint, write_groundwire_jsonl, write_protobuf

EXAMPLES = int(os.environ.get("GROUNDWIRE_FUZZ_EXAMPLES", "15"))
LONG = EXAMPLES > 15
INPUTS = [0]
"""Inputs read so far (each mutated or cut file counts once)."""
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=not LONG,
)
FORMATS = ("otlp-json", "proto-fixed32", "proto-varint", "jaeger")
CODECS = ("plain", "gzip", "zstd")


def _spans() -> list[ReadableSpan]:
    """Three one-span traces, made by the real SDK, with a little of everything in them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "s"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("fuzz")
    for index in range(3):
        with tracer.start_as_current_span(
            f"r{index}", attributes={"input.value": f"q{index}", "n": index, "f": 0.5}
        ):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


@dataclass(frozen=True)
class Sample:
    """One small file's bytes, its span ids in order, and each record's byte range."""

    data: bytes
    ids: list[str]
    units: list[tuple[int, int, list[str]]]
    """(start, end, span ids) per record: a line, a framed message or a Jaeger trace."""


def _sample(fmt: str, folder: Path) -> Sample:
    """The three traces written in `fmt`, one trace per record."""
    spans = _spans()
    ids = [format(span.get_span_context().span_id, "016x") for span in spans]
    if fmt == "otlp-json":
        data = write_groundwire_jsonl(spans, folder / "f.jsonl", batch=1).read_bytes()
        lines = data.splitlines(keepends=True)
    elif fmt.startswith("proto"):
        framing = fmt.split("-")[1]
        lines = [
            write_protobuf([span], folder / "f.pb", framing=framing).read_bytes() for span in spans
        ]
        data = b"".join(lines)
    else:
        traces = [json.dumps(trace).encode() for trace in jaeger_traces(spans)]
        data = b'{"data": [' + b", ".join(traces) + b'], "total": 3}'
        starts = [data.index(trace) for trace in traces]
        units = [(s, s + len(t), [i]) for s, t, i in zip(starts, traces, ids, strict=True)]
        return Sample(data, ids, units)
    units, at = [], 0
    for line, span_id in zip(lines, ids, strict=True):
        units.append((at, at + len(line), [span_id]))
        at += len(line)
    return Sample(data, ids, units)


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    return data


@pytest.fixture(scope="module", autouse=True)
def _count_inputs() -> Iterator[None]:
    """After the module, write how many inputs were read to $GROUNDWIRE_FUZZ_REPORT (if set)."""
    yield
    report = os.environ.get("GROUNDWIRE_FUZZ_REPORT")
    if report:
        Path(report).write_text(f"{INPUTS[0]}\n")


class Samples(dict[str, Sample]):
    """The samples, shown by name only in failure reports (their bytes would flood them)."""

    def __repr__(self) -> str:
        return f"samples({', '.join(self)})"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Sample]:
    """One small file per format."""
    folder = tmp_path_factory.mktemp("fuzz")
    return Samples({fmt: _sample(fmt, folder) for fmt in FORMATS})


@dataclass
class Outcome:
    """What a read gave: span ids in order, and the problems reported."""

    ids: list[str]
    messages: list[str]
    problems: Problems
    wheres: list[str]
    """Where each batch read came from."""


def _read(path: Path, problems: Problems | None = None) -> Outcome:
    """Read `path` with every invariant that holds for any input checked."""
    INPUTS[0] += 1
    stream = io.StringIO()
    problems = problems or Problems(stream=stream)
    problems.stream = stream
    batches = list(read_spans([path], problems))
    ids = [span.span_id for batch in batches for span in batch.spans]
    messages = stream.getvalue().splitlines()
    for message in messages:
        assert message.startswith(f"groundwire: {path}"), message
    strict = Problems(strict=True, max_record_bytes=problems.max_record_bytes)
    where = str(path)
    try:
        list(read_spans([path], strict))
    except BadRecordError as error:
        where = error.where
    assert where.startswith(str(path))
    return Outcome(ids, messages, problems, [batch.where for batch in batches])


def _check(
    outcome: Outcome,
    sample: Sample,
    touched: Callable[[int, int], bool] | None = None,
    *,
    counted: bool = True,
) -> None:
    """Nothing lost silently (fewer spans than written means a report; a flip may change an id,
    so spans are counted); untouched records (when `touched` is given) all read, ids intact.
    `counted=False` where a change can validly empty a record (`"spans": []`)."""
    if counted and len(outcome.ids) < len(sample.ids):
        assert outcome.problems.stats.bad_records >= 1, outcome.messages
    if touched is not None:
        for start, end, ids in sample.units:
            if not touched(start, end):
                assert set(ids) <= set(outcome.ids), (start, end, outcome.messages)


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_truncation_at_every_byte_offset(
    samples: dict[str, Sample], tmp_path: Path, fmt: str, codec: str
) -> None:
    """Cut at every byte offset (the default run: 40 of them plus every record boundary +-1):
    what is read is a prefix of the file's spans, every record before the cut is read, and a
    record the cut went through (or a cut compressed stream, or a Jaeger document left open) is
    reported, once."""
    sample = samples[fmt]
    packed = _compress(codec, sample.data)
    cuts = list(range(len(packed)))
    if not LONG:
        edges = {
            edge + d for start, end, _ in sample.units for edge in (start, end) for d in (-1, 0, 1)
        }
        picked = random.Random(f"{fmt}-{codec}").sample(cuts, min(40, len(cuts)))
        cuts = sorted((set(picked) | edges if codec == "plain" else set(picked)) & set(cuts))
    for cut in cuts:
        path = _write(tmp_path, f"cut-{fmt}.{codec}", packed[:cut])
        outcome = _read(path)
        assert outcome.ids == sample.ids[: len(outcome.ids)], (cut, outcome)
        if codec != "plain":
            assert outcome.problems.stats.bad_records == 1, (cut, outcome)
            continue
        optional = 1 if fmt == "otlp-json" else 0  # a last line may lack its newline
        before = [ids for start, end, ids in sample.units if end - optional <= cut]
        assert outcome.ids == [i for ids in before for i in ids], (cut, outcome)
        through = any(start < cut < end - optional for start, end, _ in sample.units)
        if fmt == "jaeger":
            through = cut <= sample.data.rindex(b"]")
        assert outcome.problems.stats.bad_records == (1 if through or cut == 0 else 0), (
            cut,
            outcome,
        )


@FUZZ
@given(data=st.data())
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_random_byte_flips(
    samples: dict[str, Sample], tmp_path: Path, fmt: str, codec: str, data: st.DataObject
) -> None:
    """Flipped bytes anywhere: no crash, nothing silent; in plain files every record the flips
    did not touch (nor its delimiter) is read."""
    sample = samples[fmt]
    packed = bytearray(_compress(codec, sample.data))
    positions = data.draw(
        st.lists(st.integers(0, len(packed) - 1), min_size=1, max_size=3, unique=True)
    )
    for position in positions:
        packed[position] ^= data.draw(st.integers(1, 255))
    path = _write(tmp_path, f"flip-{fmt}.{codec}", bytes(packed))
    outcome = _read(path)

    def touched(start: int, end: int) -> bool:
        # A record's bytes, the delimiter before it, and (framing) the prefix of the next one.
        return any(start - 1 <= p < end + (10 if fmt.startswith("proto") else 1) for p in positions)

    _check(outcome, sample, touched if codec == "plain" and fmt != "jaeger" else None)
    if codec == "plain" and fmt == "jaeger":
        _check(outcome, sample, _jaeger_touched(sample, positions))


def _jaeger_touched(sample: Sample, positions: list[int]) -> Callable[[int, int], bool]:
    """Jaeger traces are found again after damage unless the flip hit the wrapper before them
    or the separator after them."""

    def touched(start: int, end: int) -> bool:
        return any(start - 2 <= p < end + 2 for p in positions)

    return touched


def _json_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a decoded JSON document."""
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _json_paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _json_paths(value, (*path, index))
    return found


def _replace(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`node` with the value at `path` replaced."""
    if not path:
        return value
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _replace(node[path[0]], path[1:], value)
    return copy


WRONG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", "0" * 15, "0" * 17, "f" * 32, "g" * 32, "AAAA", "STATUS_CODE_NOPE"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.integers(1000, 20000).map(lambda depth: Deep(depth)),
)


@dataclass(frozen=True)
class Deep:
    """An array nested `depth` deep (spliced in as text: building it would recurse too deep)."""

    depth: int


@FUZZ
@given(data=st.data())
@pytest.mark.parametrize("fmt", ["otlp-json", "jaeger"])
def test_wrong_json_types_in_every_field(
    samples: dict[str, Sample], tmp_path: Path, fmt: str, data: st.DataObject
) -> None:
    """Any field of one record replaced by a value of another type, NaN/Infinity, a deeply nested
    array, an id of the wrong length or an unknown enum: the other records are read, the changed
    one is read or reported."""
    sample = samples[fmt]
    index = data.draw(st.integers(0, 2))
    start, end, _ = sample.units[index]
    record = json.loads(sample.data[start:end])
    path = data.draw(st.sampled_from(_json_paths(record)))
    value = data.draw(WRONG_VALUES)
    marker = "\ue000deep\ue000"
    text = json.dumps(_replace(record, path, marker if isinstance(value, Deep) else value))
    if isinstance(value, Deep):
        text = text.replace(json.dumps(marker), "[" * value.depth + "]" * value.depth)
    newline = b"\n" if fmt == "otlp-json" else b""
    mutated = sample.data[:start] + text.encode() + newline + sample.data[end:]
    file = _write(tmp_path, f"typed-{fmt}.json", mutated)
    outcome = _read(file)
    _check(outcome, sample, lambda s, e: s == start, counted=False)
    place = f"{file}:{index + 1}" if fmt == "otlp-json" else f"(data[{index}])"
    read = any(where.startswith(place) or where.endswith(place) for where in outcome.wheres)
    reported = any(place in message for message in outcome.messages)
    assert read or reported, (path, value, outcome.messages)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_record_over_the_size_limit_is_reported_and_skipped(
    samples: dict[str, Sample], tmp_path: Path, fmt: str
) -> None:
    """A record larger than `max_record_bytes` is one report; the records around it are read."""
    sample = samples[fmt]
    start, end, _ = sample.units[1]
    limit = max(e - s for s, e, _ in sample.units) + 64
    record = sample.data[start:end]
    if fmt == "otlp-json":
        big = json.loads(record)
        big["padding"] = "x" * limit * 3
        record = json.dumps(big).encode() + b"\n"
    elif fmt == "jaeger":
        big = json.loads(record)
        big["warnings"] = ["x" * limit * 3]
        record = json.dumps(big).encode()
    else:
        from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

        framing = fmt.split("-")[1]
        prefix = 4 if framing == "fixed32" else len(record) - len(record.lstrip(b"\x80\xff"))
        message = TracesData.FromString(record[prefix if framing == "fixed32" else 2 :])
        message.resource_spans[0].scope_spans[0].spans[0].name = "x" * limit * 3
        body = message.SerializeToString()
        size = len(body)
        header = size.to_bytes(4, "big") if framing == "fixed32" else varint(size)
        record = header + body
    path = _write(tmp_path, f"big-{fmt}", sample.data[:start] + record + sample.data[end:])
    outcome = _read(path, Problems(max_record_bytes=limit))
    assert outcome.ids == [sample.ids[0], sample.ids[2]]
    assert len(outcome.messages) == 1 and outcome.problems.stats.bad_records == 1


@FUZZ
@given(
    trace_len=st.integers(0, 40),
    span_len=st.integers(0, 20),
    status=st.integers(-5, 2**31 - 1),
    kind=st.integers(-5, 2**31 - 1),
)
def test_protobuf_ids_of_the_wrong_length_and_unknown_enums(
    samples: dict[str, Sample],
    tmp_path: Path,
    trace_len: int,
    span_len: int,
    status: int,
    kind: int,
) -> None:
    """A protobuf span with ids of any length and any status or kind number: read when the ids
    are valid, reported otherwise; the records around it are read."""
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    sample = samples["proto-fixed32"]
    start, end, _ = sample.units[1]
    message = TracesData.FromString(sample.data[start + 4 : end])
    span = message.resource_spans[0].scope_spans[0].spans[0]
    span.trace_id = random.Random(trace_len).randbytes(trace_len)
    span.span_id = b"\x01" * span_len
    span.status.code = status  # type: ignore[assignment]
    span.kind = kind  # type: ignore[assignment]
    body = message.SerializeToString()
    data = sample.data[:start] + len(body).to_bytes(4, "big") + body + sample.data[end:]
    outcome = _read(_write(tmp_path, "ids.pb", data))
    assert outcome.ids[0] == sample.ids[0] and outcome.ids[-1] == sample.ids[2]
    valid = trace_len == 16 and span_len == 8
    assert len(outcome.ids) == (3 if valid else 2)
    assert outcome.problems.stats.bad_records == (0 if valid else 1)
