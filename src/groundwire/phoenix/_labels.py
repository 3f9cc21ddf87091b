"""Human span annotations read back from Phoenix: the labels `groundwire calibrate` measures
judges against (`--labels phoenix://HOST:PORT/PROJECT`).

Every span of the project is listed (`GET /v1/projects/P/spans/otlpv1`), then the annotations on
those spans are read in chunks (`GET /v1/projects/P/span_annotations?span_ids=...`), and only the
ones whose `annotator_kind` is `HUMAN` are kept: the scores groundwire itself wrote back (`LLM`,
`CODE`) are not labels. Each becomes a row with the annotation's name as the evaluator, its
result's label and score (the caller picks the one that is a label), and its `identifier` as the
annotator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import quote

from groundwire.phoenix._client import PhoenixClient, PhoenixError
from groundwire.phoenix._url import PhoenixTarget

__all__ = ["HUMAN", "human_annotations"]

HUMAN: Final = "HUMAN"
"""The `annotator_kind` of an annotation a person made."""
_CHUNK: Final = 100
"""Span ids per annotations request (they travel in the query string)."""


def _span_ids(client: PhoenixClient, project: str, page_size: int) -> list[str]:
    """Every span id of the project."""
    ids: list[str] = []
    for page in client.span_pages(project, page_size=page_size):
        ids += [span["span_id"] for span in page.spans if isinstance(span.get("span_id"), str)]
    return ids


def _annotations(client: PhoenixClient, project: str, span_ids: list[str]) -> Iterator[Any]:
    """Every annotation on `span_ids`, following the cursor."""
    path = f"/v1/projects/{quote(project, safe='')}/span_annotations"
    for start in range(0, len(span_ids), _CHUNK):
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"span_ids": span_ids[start : start + _CHUNK], "limit": 1000}
            if cursor:
                params["cursor"] = cursor
            body = client.request("GET", path, params=params)
            if not isinstance(body, dict) or not isinstance(body.get("data"), list):
                raise PhoenixError(f"GET {client.base_url}{path}: expected a 'data' list")
            yield from body["data"]
            cursor = body.get("next_cursor") or None
            if cursor is None:
                break


def human_annotations(
    target: PhoenixTarget, *, client: PhoenixClient | None = None, page_size: int = 1000
) -> list[dict[str, Any]]:
    """The project's human span annotations as label rows: `where`, `span_id`, `evaluator`,
    `label`, `score`, `annotator` (None when the annotation has no identifier)."""
    own = client is None
    client = client or PhoenixClient(target.base_url)
    try:
        rows = []
        for note in _annotations(
            client, target.project, _span_ids(client, target.project, page_size)
        ):
            if not isinstance(note, dict) or note.get("annotator_kind") != HUMAN:
                continue
            found = note.get("result")
            result: dict[str, Any] = found if isinstance(found, dict) else {}
            rows.append(
                {
                    "where": f"{target}: annotation {note.get('id', '?')}",
                    "span_id": note.get("span_id"),
                    "evaluator": note.get("name"),
                    "label": result.get("label"),
                    "score": result.get("score"),
                    "annotator": note.get("identifier") or None,
                }
            )
        return rows
    finally:
        if own:
            client.close()
