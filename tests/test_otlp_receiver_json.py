"""`groundwire.testing.OtlpHttpReceiver` takes OTLP/JSON as well as protobuf (what the gateway
forwards when the app sent JSON), and answers a body it cannot decode with 400, not a reset."""

from __future__ import annotations

import gzip

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.exporters import to_otlp_json
from groundwire.testing import OtlpHttpReceiver


def _spans() -> list[ReadableSpan]:
    """Two finished SDK spans of one trace, from a service called `app`."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with (
        tracer.start_as_current_span("parent"),
        tracer.start_as_current_span("child", attributes={"n": 3}),
    ):
        pass
    return list(exporter.get_finished_spans())


def test_an_otlp_json_post_is_decoded_like_protobuf() -> None:
    """JSON (plain and gzip) is answered 200 with JSON, and gives the same spans as protobuf."""
    spans = _spans()
    request = encode_spans(spans)
    body = to_otlp_json(request).encode()
    with OtlpHttpReceiver() as receiver:
        plain = httpx.post(
            receiver.traces_url, content=body, headers={"Content-Type": "application/json"}
        )
        zipped = httpx.post(
            receiver.traces_url,
            content=gzip.compress(body),
            headers={"Content-Type": "application/json; charset=utf-8", "Content-Encoding": "gzip"},
        )
        proto = httpx.post(
            receiver.traces_url,
            content=request.SerializeToString(),
            headers={"Content-Type": "application/x-protobuf"},
        )
        received = receiver.spans()
    assert (plain.status_code, plain.headers["content-type"], plain.json()) == (
        200,
        "application/json",
        {},
    )
    assert zipped.status_code == 200 and proto.status_code == 200
    by_kind = [received[0:2], received[2:4], received[4:6]]
    assert by_kind[0] == by_kind[1] == by_kind[2]
    child = next(span for span in by_kind[0] if span.name == "child")
    assert child.attributes == {"n": 3} and child.resource["service.name"] == "app"
    parent = next(span for span in by_kind[0] if span.name == "parent")
    assert child.parent_span_id == parent.span_id and len(parent.trace_id or "") == 32


def test_a_body_it_cannot_decode_is_a_400_and_the_receiver_goes_on() -> None:
    """Broken JSON, broken protobuf, a bad gzip: 400 naming the problem; later posts work."""
    with OtlpHttpReceiver() as receiver:
        json_type = {"Content-Type": "application/json"}
        bad_json = httpx.post(receiver.traces_url, content=b"{not json", headers=json_type)
        bad_proto = httpx.post(
            receiver.traces_url,
            content=b"\xff\xff\xff",
            headers={"Content-Type": "application/x-protobuf"},
        )
        bad_gzip = httpx.post(
            receiver.traces_url,
            content=b"not gzip",
            headers={**json_type, "Content-Encoding": "gzip"},
        )
        good = httpx.post(
            receiver.traces_url, content=to_otlp_json(encode_spans(_spans())), headers=json_type
        )
        count = len(receiver.spans())
    assert bad_json.status_code == 400 and "not an OTLP/JSON" in bad_json.text
    assert bad_proto.status_code == 400 and "not an OTLP protobuf" in bad_proto.text
    assert bad_gzip.status_code == 400 and "cannot decompress" in bad_gzip.text
    assert good.status_code == 200 and count == 2
