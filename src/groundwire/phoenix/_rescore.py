"""`rescore_phoenix`: score the RAG turns stored in a Phoenix project, and annotate them there.

```python
from groundwire.phoenix import rescore_phoenix

run = rescore_phoenix("phoenix://127.0.0.1:6006/default", ["quoted_spans"], "scores.jsonl",
                      annotate=True)
print(run.summary.means(), run.annotations.sent)
```

The spans are read page by page over Phoenix's REST API and go through the same streaming
pipeline as trace files (`groundwire.offline.rescore`): reassembly, scoring, outputs, progress and
`resume`. With `annotate`, each score is written back as a span annotation on the turn's span.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from groundwire._evaluate import EvaluatorSpec
from groundwire.offline.readers import Problems, SpanBatch
from groundwire.offline.rescore import RescoreSummary, rescore
from groundwire.phoenix._annotations import DEFAULT_IDENTIFIER, AnnotationStats, AnnotationWriter
from groundwire.phoenix._client import PhoenixClient, PhoenixError
from groundwire.phoenix._source import PhoenixQuery, phoenix_batches
from groundwire.phoenix._url import PhoenixTarget, parse_phoenix_url

__all__ = ["PhoenixRun", "rescore_phoenix"]


@dataclass(slots=True)
class PhoenixRun:
    """The rescore summary, and what was written back to Phoenix (None without `annotate`)."""

    summary: RescoreSummary
    annotations: AnnotationStats | None
    target: PhoenixTarget

    def lines(self) -> list[str]:
        """The summary's lines with the Phoenix ones."""
        lines = [f"read from {self.target}", *self.summary.lines()]
        if self.annotations is not None:
            lines.append(self.annotations.line())
        return lines


def rescore_phoenix(
    url: str | PhoenixTarget,
    evaluators: EvaluatorSpec,
    out: str | os.PathLike[str] | None = None,
    *,
    query: PhoenixQuery | None = None,
    annotate: bool = False,
    identifier: str = DEFAULT_IDENTIFIER,
    annotation_batch: int = 100,
    client: PhoenixClient | None = None,
    on_problem: Callable[[str], None] | None = None,
    **options: Any,
) -> PhoenixRun:
    """Re-score the turns of the Phoenix project at `url` (`phoenix://HOST:PORT/PROJECT`).

    `options` are `groundwire.offline.rescore`'s (resume, strict, workers, export_otlp, window,
    progress, ...). Raises `PhoenixError` (`PhoenixUnavailableError`, `PhoenixNotFoundError`)
    when the spans cannot be read; `out` then holds every turn scored so far, and `resume=True`
    continues.
    Annotation failures do not stop the run: they are counted in `PhoenixRun.annotations`.
    """
    target = url if isinstance(url, PhoenixTarget) else parse_phoenix_url(url)
    owned = client is None
    phoenix = client if client is not None else PhoenixClient(target.base_url)
    writer = (
        AnnotationWriter(
            phoenix, identifier=identifier, batch_size=annotation_batch, on_error=on_problem
        )
        if annotate
        else None
    )

    pages = 0

    def source(problems: Problems) -> Iterator[SpanBatch]:
        """The project's pages as span batches, counted."""
        nonlocal pages
        for batch in phoenix_batches(phoenix, target, problems, query):
            pages += 1
            yield batch

    try:
        summary = rescore(
            [],
            evaluators,
            out,
            source=source,
            on_results=writer.add if writer is not None else None,
            on_problem=on_problem,
            **options,
        )
    except PhoenixError as error:
        error.pages_read = pages
        raise
    finally:
        try:
            if writer is not None:
                writer.flush()
        finally:
            if owned:
                phoenix.close()
    return PhoenixRun(summary, writer.stats if writer is not None else None, target)
