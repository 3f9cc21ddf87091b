"""Documents read from a span's fields: each malformed field lost on its own and logged at debug
level naming the span and the field (docs/assembly.md, "What is read").
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from groundwire import Context
from groundwire.assembly import turns_from_spans
from groundwire.assembly._documents import document, document_list, metadata
from tests.assembly_records import OP, oi, rag_trace, record, sid

SPAN = record(2)


def _debug(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "groundwire.assembly"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": 1, 2: "b"}, {"a": 1, "2": "b"}),
        ('{"page": 3}', {"page": 3}),
        ("[1, 2]", None),
        ("not json", None),
        (5, None),
    ],
)
def test_metadata_is_a_json_object(value: Any, expected: dict[str, Any] | None) -> None:
    """A mapping or a JSON object string, keys as strings; anything else is none."""
    assert metadata(value) == expected


def test_document_fields_are_each_checked(caplog: pytest.LogCaptureFixture) -> None:
    """Bad id, score or metadata is dropped and logged; the text keeps the document."""
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        built = document(
            SPAN, "docs.0", {"content": "t", "id": True, "score": "x", "metadata": "[1]"}, 4
        )
    assert built == Context(text="t", rank=4)
    assert _debug(caplog) == [
        f"span {sid(2)}: docs.0.id is not a string or int; dropped",
        f"span {sid(2)}: docs.0.score is not a number; dropped",
        f"span {sid(2)}: docs.0.metadata is not a JSON object; dropped",
    ]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert document(SPAN, "docs.1", {"content": 3, "id": "i"}, 0) is None
        good = document(SPAN, "docs.2", {"content": "t", "id": 7, "score": 1, "metadata": {}}, 0)
    assert good == Context(text="t", id="7", score=1.0, rank=0)
    assert _debug(caplog) == [f"span {sid(2)}: docs.1 has no text content; document skipped"]


def test_document_list_reads_text_keys_in_order(caplog: pytest.LogCaptureFixture) -> None:
    """`content`, `text`, `page_content`, `document`; non-objects and textless ones skipped."""
    items = [
        {"document": "d", "page_content": "p"},
        "not an object",
        {"text": "t", "content": 5, "id": "i", "score": 0.5, "metadata": {"k": "v"}},
        {"id": "no text"},
        {"content": "c", "text": "t"},
    ]
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        documents = document_list(SPAN, "out", items)
    assert documents == [
        Context(text="p", rank=0),
        Context(text="t", id="i", score=0.5, rank=1, metadata={"k": "v"}),
        Context(text="c", rank=2),
    ]
    assert _debug(caplog) == [
        f"span {sid(2)}: out[1] is no object",
        f"span {sid(2)}: out[3] has no text content; document skipped",
    ]


@pytest.mark.parametrize("value", ["text", b"bytes", {"content": "x"}, 5])
def test_document_list_needs_a_list(caplog: pytest.LogCaptureFixture, value: Any) -> None:
    """Strings, bytes, objects and scalars are no document list (logged)."""
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert document_list(SPAN, "out", value) is None
    assert _debug(caplog) == [f"span {sid(2)}: out is not a list of documents"]


def test_malformed_genai_documents_are_logged_and_later_dialects_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Unparseable GenAI documents are logged; MLflow's list on the same span is read."""
    retriever = {
        OP: "retrieval",
        "gen_ai.retrieval.documents": "{broken",
        "mlflow.spanOutputs": '[{"page_content": "from mlflow"}]',
    }
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=retriever,
        model=oi("LLM"),
    )
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        (turn,) = turns_from_spans(records)
    assert turn.context_texts == ["from mlflow"]
    assert _debug(caplog)[:2] == [
        "value declared as JSON does not parse; reading it as text",
        f"span {sid(2)}: gen_ai.retrieval.documents is not a list of documents",
    ]


def test_malformed_flattened_document_keys_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    """An OpenInference document key without index or `document.` part is named in the log."""
    retriever = oi(
        "RETRIEVER",
        **{"retrieval.documents.0.document.content": "d", "retrieval.documents.a.b": "x"},
    )
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=retriever,
        model=oi("LLM"),
    )
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        (turn,) = turns_from_spans(records)
    assert turn.context_texts == ["d"]
    assert (
        f"span {sid(2)}: malformed document attribute 'retrieval.documents.a.b' skipped"
        in _debug(caplog)
    )


def test_document_keys_read_the_same_every_time(caplog: pytest.LogCaptureFixture) -> None:
    """A document key taken apart once (remembered) reads the same on later spans: the good
    ones regrouped by index, a malformed one skipped and logged again each time."""
    attributes = {
        "retrieval.documents.1.document.content": "second",
        "retrieval.documents.0.document.content": "first",
        "retrieval.documents.0.document.id": "d0",
        "retrieval.documents.x.document.content": "bad",
    }
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=oi("RETRIEVER", **attributes),
        model=oi("LLM"),
    )
    key = "retrieval.documents.x.document.content"
    malformed = f"span {sid(2)}: malformed document attribute '{key}' skipped"
    for _ in range(3):
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
            (turn,) = turns_from_spans(records)
        assert turn.context_texts == ["first", "second"]
        assert [context.id for context in turn.contexts] == ["d0", None]
        assert malformed in _debug(caplog)


def test_remembered_document_keys_are_bounded() -> None:
    """However many distinct document keys come, at most a bounded number are remembered."""
    from groundwire.assembly._dialects import _openinference

    many = {f"retrieval.documents.{i}.document.content": f"d{i}" for i in range(5_000)}
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=oi("RETRIEVER", **many),
        model=oi("LLM"),
    )
    (turn,) = turns_from_spans(records)
    assert len(turn.contexts) == 5_000
    assert turn.contexts[4_999].text == "d4999"
    known = _openinference._DOCUMENT_KEYS["retrieval.documents."]
    assert len(known) <= _openinference._KNOWN_KEYS


def test_broken_metadata_json_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Metadata declared JSON that does not parse is logged, then dropped."""
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        built = document(SPAN, "docs.0", {"content": "t", "metadata": "{broken"}, 0)
    assert built == Context(text="t", rank=0)
    assert _debug(caplog) == [
        "value declared as JSON does not parse; reading it as text",
        f"span {sid(2)}: docs.0.metadata is not a JSON object; dropped",
    ]


@pytest.mark.parametrize("index", ["²", "①", "٣"])
def test_document_index_in_other_digits_keeps_the_trace(
    index: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An index that `str.isdigit` accepts but `int` may not ("²", "①") is a malformed key,
    skipped and logged; one `int` reads (Arabic-Indic "٣") is an index. The trace is never lost."""
    key = f"retrieval.documents.{index}.document.content"
    retriever = oi("RETRIEVER", **{"retrieval.documents.0.document.content": "d", key: "x"})
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=retriever,
        model=oi("LLM"),
    )
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        (turn,) = turns_from_spans(records)
    if index.isdecimal():
        assert turn.context_texts == ["d", "x"]
    else:
        assert turn.context_texts == ["d"]
        assert f"span {sid(2)}: malformed document attribute '{key}' skipped" in _debug(caplog)
