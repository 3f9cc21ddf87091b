"""Output writers for re-scored turns, chosen by the output file's extension.

`.jsonl` (one JSON object per turn), `.csv`, `.xlsx` (xlsxwriter), `.parquet` (pyarrow) and
`.html` (a self-contained report; `Comparison` and `insert_comparison` add a before-and-after
section against an earlier scores file, `load_baseline`; `insert_steps` lists an agent turn's
steps from the trace files). `.jsonl`, `.csv` and `.parquet` can be
resumed (`--resume`).
Outputs are written beside OUT and moved into place at the end (`OutputTarget`), and never over
an input (`check_output_paths`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from groundwire.offline.writers._base import ResultWriter
from groundwire.offline.writers._baseline import Baseline, BaselineError, Comparison, load_baseline
from groundwire.offline.writers._html import HtmlReportWriter
from groundwire.offline.writers._lines import (
    CSV_LINE_END,
    ENCODED_SUFFIXES,
    CsvWriter,
    JsonLinesWriter,
    csv_header,
    encode_rows,
)
from groundwire.offline.writers._parquet import (
    PART_GLOB,
    ParquetWriter,
    parquet_row,
    parquet_schema,
    part_files,
)
from groundwire.offline.writers._parquet import _pyarrow as load_pyarrow
from groundwire.offline.writers._report_compare import comparison_html, insert_comparison
from groundwire.offline.writers._report_steps import insert_steps
from groundwire.offline.writers._target import (
    OutputLock,
    OutputPathError,
    OutputTarget,
    check_output_paths,
    is_parts_dir,
    partial_path,
)
from groundwire.offline.writers._xlsx import XlsxWriter

__all__ = [
    "APPENDABLE_SUFFIXES",
    "CSV_LINE_END",
    "ENCODED_SUFFIXES",
    "OUTPUT_SUFFIXES",
    "PART_GLOB",
    "Baseline",
    "BaselineError",
    "Comparison",
    "CsvWriter",
    "HtmlReportWriter",
    "JsonLinesWriter",
    "OutputLock",
    "OutputPathError",
    "OutputTarget",
    "ParquetWriter",
    "ResultWriter",
    "XlsxWriter",
    "check_output_paths",
    "comparison_html",
    "csv_header",
    "encode_rows",
    "insert_comparison",
    "insert_steps",
    "is_parts_dir",
    "load_baseline",
    "load_pyarrow",
    "open_writer",
    "output_suffix",
    "parquet_row",
    "parquet_schema",
    "part_files",
    "partial_path",
]

_WRITERS: dict[str, Callable[..., ResultWriter]] = {
    ".jsonl": JsonLinesWriter,
    ".csv": CsvWriter,
    ".xlsx": XlsxWriter,
    ".parquet": ParquetWriter,
    ".html": HtmlReportWriter,
}
OUTPUT_SUFFIXES = tuple(_WRITERS)
"""Output file extensions, each naming its format."""
APPENDABLE_SUFFIXES = (".jsonl", ".csv", ".parquet")
"""Formats `--resume` can continue."""


def output_suffix(path: str | os.PathLike[str]) -> str:
    """The output format's extension; ValueError naming the supported ones otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in _WRITERS:
        raise ValueError(
            f"cannot tell the output format of {os.fspath(path)!r}: use one of "
            f"{', '.join(OUTPUT_SUFFIXES)}"
        )
    return suffix


def open_writer(
    path: str | os.PathLike[str], evaluators: Sequence[str], *, append: bool = False
) -> ResultWriter:
    """A writer for `path`'s format; `append` continues an existing .jsonl or .csv."""
    return _WRITERS[output_suffix(path)](Path(path), evaluators, append=append)
