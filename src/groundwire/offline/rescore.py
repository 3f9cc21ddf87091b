"""`rescore`: score recorded traces offline and write the results (what `groundwire rescore` runs).

```python
from groundwire.offline import rescore

summary = rescore(["traces.jsonl.gz"], ["quoted_spans", "quote_verification"], "report.html")
print(summary.turns_scored, summary.means())
```

Files stream through the readers, a bounded trace window and the shared assembler; turns are
scored in chunks, here (`workers=1`), in worker processes (`workers=N`) or on Ray
(`engine="ray"`); results are written in input order as they come, so an interrupted run leaves a
valid OUT that `resume=True` continues. See docs/offline.md. The steps themselves are in
`_rescore_inputs` (`RescoreOptions`, checked) and `_rescore_run` (the later named steps).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from groundwire._evaluate import EvaluatorSpec
from groundwire.offline._pipeline import DEFAULT_WINDOW, WindowOptions
from groundwire.offline._rescore_inputs import (
    Engine,
    ProgressHook,
    RescoreOptions,
    ResultsHook,
    SpanSource,
)
from groundwire.offline._rescore_run import run_rescore
from groundwire.offline._stopping import StopFlag
from groundwire.offline._summary import EvaluatorTally, RescoreSummary
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import TraceFormat

__all__ = [
    "EvaluatorTally",
    "ProgressHook",
    "RescoreOptions",
    "RescoreSummary",
    "ResultsHook",
    "SpanSource",
    "StopFlag",
    "rescore",
]


def rescore(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    evaluators: EvaluatorSpec,
    out: str | os.PathLike[str] | None = None,
    *,
    expected: str | os.PathLike[str] | ExpectedAnswers | None = None,
    fmt: TraceFormat | None = None,
    strict: bool = False,
    resume: bool = False,
    workers: int = 1,
    engine: Engine = "local",
    export_otlp: bool | str = False,
    concurrency: int = 8,
    chunk_size: int = 32,
    window: WindowOptions = DEFAULT_WINDOW,
    progress: ProgressHook | None = None,
    on_problem: Callable[[str], None] | None = None,
    stop: StopFlag | None = None,
    ray_address: str | None = None,
    source: SpanSource | None = None,
    on_results: ResultsHook | None = None,
    glob: str | None = None,
) -> RescoreSummary:
    """Re-score the RAG turns recorded in `paths` and write them to `out` (by its extension).

    `evaluators` are names, instances, or name -> options. `expected` joins gold answers (eRAG).
    Bad records are reported (to `on_problem`, else stderr) and skipped, or raise
    `BadRecordError` when `strict`. `export_otlp` is True (standard OTLP variables) or an
    endpoint. A first Ctrl-C stops after the chunks in flight, leaving `out` valid. `source`
    gives the span batches instead of `paths` (local engine); `on_results` sees every chunk.
    A folder in `paths` gives its trace files (recursively, sorted by name; `glob` narrows).
    With several files, or on Ray, traces are grouped whole by trace id before scoring and
    results come in `order_key` order; one file on the local engine streams in input order.
    """
    options = RescoreOptions(
        paths=paths,
        evaluators=evaluators,
        out=out,
        expected=expected,
        fmt=fmt,
        strict=strict,
        resume=resume,
        workers=workers,
        engine=engine,
        export_otlp=export_otlp,
        concurrency=concurrency,
        chunk_size=chunk_size,
        window=window,
        progress=progress,
        on_problem=on_problem,
        stop=stop,
        ray_address=ray_address,
        source=source,
        on_results=on_results,
        glob=glob,
    )
    return run_rescore(options)
