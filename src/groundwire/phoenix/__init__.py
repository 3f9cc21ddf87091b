"""Arize Phoenix round trip: re-score stored traces, write scores back as span annotations.

```python
from groundwire.phoenix import rescore_phoenix

run = rescore_phoenix("phoenix://127.0.0.1:6006/default", ["quoted_spans"], "scores.jsonl",
                      annotate=True)
```

or `groundwire rescore phoenix://127.0.0.1:6006/default -e quoted_spans -o scores.jsonl
--annotate-phoenix`. Plain HTTP (httpx) against Phoenix's REST API; `PHOENIX_API_KEY` is sent as a
bearer token when set. See docs/phoenix.md.
"""

from __future__ import annotations

from groundwire.phoenix._annotations import (
    DEFAULT_IDENTIFIER,
    JUDGE_EVALUATORS,
    AnnotationStats,
    AnnotationWriter,
    annotation_for,
)
from groundwire.phoenix._client import (
    ENV_API_KEY,
    PhoenixClient,
    PhoenixError,
    PhoenixNotFoundError,
    PhoenixUnavailableError,
    SpanPage,
)
from groundwire.phoenix._labels import HUMAN, human_annotations
from groundwire.phoenix._online import PhoenixAnnotationProcessor
from groundwire.phoenix._rescore import PhoenixRun, rescore_phoenix
from groundwire.phoenix._source import PhoenixQuery, phoenix_batches
from groundwire.phoenix._spans import span_from_phoenix
from groundwire.phoenix._url import PhoenixTarget, is_phoenix_url, parse_phoenix_url

__all__ = [
    "DEFAULT_IDENTIFIER",
    "ENV_API_KEY",
    "HUMAN",
    "JUDGE_EVALUATORS",
    "AnnotationStats",
    "AnnotationWriter",
    "PhoenixAnnotationProcessor",
    "PhoenixClient",
    "PhoenixError",
    "PhoenixNotFoundError",
    "PhoenixQuery",
    "PhoenixRun",
    "PhoenixTarget",
    "PhoenixUnavailableError",
    "SpanPage",
    "annotation_for",
    "human_annotations",
    "is_phoenix_url",
    "parse_phoenix_url",
    "phoenix_batches",
    "rescore_phoenix",
    "span_from_phoenix",
]
