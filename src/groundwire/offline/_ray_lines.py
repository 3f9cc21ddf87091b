"""A Ray run's `.jsonl` or `.csv` OUT: the workers encode the rows, the driver copies the bytes.

```python
output = EncodedOutput.open(target.write_path, names, append=False)
data = encode_part(output.place, results)   # in a Ray task: the rows as the writer's bytes
output.write_encoded(data)                   # on the driver: appended as they are, in order
```

Each scoring task encodes its block's rows exactly as the local writer would (`encode_rows`:
the same record, the same JSON or CSV dialect, the same line ends) and hands back one byte string
with its tallies. The driver appends those bytes in the order the blocks come (`order_key`, the
local engine's order) to the writer it opened, without decoding a turn or a score. Everything
else is the writer's: the partial file beside OUT moved into place at the end, a failed run's
rows kept under the partial name (or in OUT when resuming in place), `--resume` appending to
OUT, an object storage OUT staged locally and uploaded whole. Used when nothing else needs the
results on the driver (no OTLP export, no results hook).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from groundwire.offline._results import TurnResult
from groundwire.offline.writers import encode_rows, open_writer, output_suffix

__all__ = ["EncodedOutput", "LinesPlace", "encode_part"]


@dataclass(frozen=True, slots=True)
class LinesPlace:
    """How the scoring tasks encode OUT's rows (sent to every task; picklable)."""

    suffix: str
    """`.jsonl` or `.csv`."""
    evaluators: tuple[str, ...]


def encode_part(place: LinesPlace, results: Sequence[TurnResult]) -> bytes:
    """In a Ray task: the block's rows as the writer's bytes (empty for no row)."""
    return encode_rows(place.suffix, results, place.evaluators)


class _LinesWriter(Protocol):
    """A `.jsonl` or `.csv` writer: appends encoded lines (pushed to the OS at once), closes."""

    def write_encoded(self, data: bytes) -> None: ...

    def close(self, *, interrupted: bool = False) -> None: ...


class EncodedOutput:
    """The run's writer when the workers encode OUT's rows: `write_encoded` appends their bytes;
    nothing passes through `write`."""

    def __init__(self, writer: _LinesWriter, suffix: str, evaluators: Sequence[str]) -> None:
        """Wrap `writer` (opened on OUT's write path, appending when resuming)."""
        self._writer = writer
        self.place = LinesPlace(suffix, tuple(evaluators))

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], evaluators: Sequence[str], *, append: bool
    ) -> EncodedOutput:
        """The `.jsonl` or `.csv` writer of `path` (`append` for `--resume`), wrapped."""
        writer: Any = open_writer(Path(path), evaluators, append=append)
        return cls(writer, output_suffix(path), evaluators)

    def write(self, result: TurnResult) -> None:
        """Never called: the rows are encoded by the Ray workers."""
        raise TypeError("this output's rows are encoded by the Ray workers, not row by row")

    def write_encoded(self, data: bytes) -> None:
        """Append one block's encoded rows (pushed to the OS at once: nothing to flush)."""
        self._writer.write_encoded(data)

    def close(self, *, interrupted: bool = False) -> None:
        """Flush and close (cutting any partial line when interrupted)."""
        self._writer.close(interrupted=interrupted)
