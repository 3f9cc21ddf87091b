"""A Ray run's Parquet OUT, written by the Ray workers themselves: one part file per batch.

```python
place = PartsPlace.beside("s3://results/scores.parquet", ["quoted_spans"], run="4f2a...")
payload = write_part(place, results)     # in a Ray task: the part file; the driver gets counts
PartsOutput(...).close()                 # on the driver at the end: the parts become OUT
```

No row travels to the driver: each scoring task writes its batch's rows as one complete Parquet
file in OUT's partial directory (`scores.partial.parquet/part-<first key>-<run>.parquet`; local:
written under a `.tmp` name and renamed when whole; object storage: uploaded whole, and an
object appears only when its upload completes) and hands back its tallies. When the run ends,
the driver turns the parts into OUT, a directory (prefix) of `part-00000.parquet`, ... in
`order_key` order, which Parquet readers read as one table (`pyarrow.parquet.read_table`,
pandas, DuckDB, Spark). A run that fails leaves OUT as it was and its parts in the partial
directory, and says so; `--resume` reads them (and OUT's parts) as it reads the local engine's.
"""

from __future__ import annotations

import fnmatch
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from groundwire.offline import writers
from groundwire.offline._grouping import order_key
from groundwire.offline._results import TurnResult
from groundwire.offline._summary import EvaluatorTally, RescoreSummary, tally
from groundwire.offline.storage import (
    filesystem,
    list_objects,
    move_object,
    object_url,
    remove_objects,
    upload,
)

__all__ = ["PartsOutput", "PartsPlace", "add_part_tallies", "part_tallies", "write_part"]

_WRITING: Final = ".tmp"
_MOVING: Final = "part-~{:05d}.parquet"
"""A part's name between the two renames of a local commit (still matches `PART_GLOB`)."""


def _final_name(index: int) -> str:
    """The name of OUT's `index`-th part."""
    return f"part-{index:05d}.parquet"


@dataclass(frozen=True, slots=True)
class PartsPlace:
    """Where a run's workers write their parts (sent to every scoring task; picklable)."""

    folder: str
    """OUT's partial directory: a local path or an object storage URL."""
    evaluators: tuple[str, ...]
    run: str
    """The run's id, in every part's name: a resumed run never overwrites an earlier part."""

    @classmethod
    def beside(cls, out: str, evaluators: Sequence[str], *, run: str) -> PartsPlace:
        """The place of OUT's parts while the run goes (`scores.partial.parquet`)."""
        parent, _, name = out.rpartition("/")
        if object_url(out) is None:
            return cls(os.fspath(writers.partial_path(out)), tuple(evaluators), run[:12])
        return cls(f"{parent}/{writers.partial_path(name).name}", tuple(evaluators), run[:12])


def write_part(place: PartsPlace, results: Sequence[TurnResult]) -> str:
    """In a Ray task: write `results` as one complete part file; return their tallies (JSON).

    The part is named by its first turn's `order_key`, so a retried task writes the same file
    again instead of a second copy.
    """
    if not results:
        return part_tallies(results, place.evaluators)
    pa = writers.load_pyarrow()
    evaluators = place.evaluators
    rows = [writers.parquet_row(result, evaluators) for result in results]
    table = pa.Table.from_pylist(rows, schema=writers.parquet_schema(evaluators))
    name = f"part-{order_key(results[0].turn.trace_id or '')}-{place.run}.parquet"
    if object_url(place.folder) is None:
        final = Path(place.folder) / name
        writing = final.with_name(name + _WRITING)
        pa.parquet.write_table(table, writing)
        os.replace(writing, final)
    else:
        with tempfile.TemporaryDirectory(prefix="groundwire-part-") as folder:
            local = Path(folder) / name
            pa.parquet.write_table(table, local)
            upload(local, f"{place.folder}/{name}")
    return part_tallies(results, evaluators)


def part_tallies(results: Sequence[TurnResult], evaluators: Sequence[str]) -> str:
    """The tallies of `results` (what the driver's summary counts; `add_part_tallies`), as JSON."""
    counted = RescoreSummary(evaluators=list(evaluators), out=None)
    for result in results:
        tally(counted, result)
    tallies = {
        name: {
            "scored": t.scored,
            "not_applicable": t.not_applicable,
            "failed": t.failed,
            "skipped": t.skipped,
            "skip_reasons": t.skip_reasons,
            "total": t.total,
        }
        for name, t in counted.tallies.items()
    }
    return json.dumps({"turns": counted.turns_scored, "tallies": tallies})


def add_part_tallies(summary: RescoreSummary, payload: dict[str, Any]) -> None:
    """On the driver: add one part's tallies (`write_part`'s answer) to the run's summary."""
    summary.turns_scored += payload["turns"]
    for name, counts in payload["tallies"].items():
        into = summary.tallies.setdefault(name, EvaluatorTally())
        into.scored += counts["scored"]
        into.not_applicable += counts["not_applicable"]
        into.failed += counts["failed"]
        into.skipped += counts["skipped"]
        into.total += counts["total"]
        for reason, number in counts["skip_reasons"].items():
            into.skip_reasons[reason] = into.skip_reasons.get(reason, 0) + number


class PartsOutput:
    """The run's writer when the workers write OUT: nothing passes through `write`; `close`
    turns the parts into OUT, `abandon` leaves them where they are (a failed run)."""

    def __init__(
        self, out: str, evaluators: Sequence[str], *, append: bool, summary: RescoreSummary
    ) -> None:
        """Prepare the partial directory of `out` (a path or URL); `append` for `--resume`."""
        import uuid

        self.out, self.append, self.summary = out, append, summary
        self.place = PartsPlace.beside(out, evaluators, run=uuid.uuid4().hex)
        self.remote = object_url(out) is not None
        if self.remote:
            if not append:  # an earlier run's parts, not resumed: not this run's output
                remove_objects(self.place.folder)
        else:
            Path(self.place.folder).mkdir(parents=True, exist_ok=True)

    def write(self, result: TurnResult) -> None:
        """Never called: the rows are written by the Ray workers."""
        raise TypeError("this output is written by the Ray workers, not row by row")

    def close(self, *, interrupted: bool = False) -> None:
        """The run ended: its parts (after OUT's own, when resuming) become OUT."""
        if self.remote:
            _commit_remote(self.place, self.out, append=self.append, summary=self.summary)
        else:
            _commit_local(self.place, Path(self.out), append=self.append)

    def abandon(self) -> None:
        """A failed run: the parts stay in the partial directory (named in the run's notice)."""


def _empty_part(place: PartsPlace, target: Path) -> None:
    """An empty part with OUT's columns, so a run that scored nothing still leaves a table."""
    pa = writers.load_pyarrow()
    schema = writers.parquet_schema(place.evaluators)
    pa.parquet.write_table(pa.Table.from_pylist([], schema=schema), target)


def _remove_tree(path: Path) -> None:
    """Delete a file, or a directory of part files."""
    if path.is_dir():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    elif path.exists():
        path.unlink()


def _commit_local(place: PartsPlace, out: Path, *, append: bool) -> None:
    """Rename the parts (after OUT's, when appending) to `part-00000.parquet`, ... and move the
    partial directory into OUT's place; each step a rename, so every file is always whole."""
    folder = Path(place.folder)
    for torn in folder.glob(f"*{_WRITING}"):  # a task killed mid-write (then retried)
        torn.unlink()
    new = writers.part_files(folder)
    if append and out.exists() and not new:
        _remove_tree(folder)  # nothing new: OUT stays as it is
        return
    if append and writers.is_parts_dir(out):
        names = {part.name for part in writers.part_files(out)}
        index = len(names)
        for part in new:
            while _final_name(index) in names:
                index += 1
            os.replace(part, out / _final_name(index))
            index += 1
        _remove_tree(folder)
        return
    ordered = ([out] if append and out.is_file() else []) + new
    for index, part in enumerate(ordered):
        os.replace(part, folder / _MOVING.format(index))
    for index in range(len(ordered)):
        os.replace(folder / _MOVING.format(index), folder / _final_name(index))
    if not ordered:
        _empty_part(place, folder / _final_name(0))
    aside = out.with_name(f"{out.stem}.replaced{out.suffix}")
    if out.exists():
        os.replace(out, aside)
    os.replace(folder, out)
    _remove_tree(aside)


def _listed_parts(url: str) -> list[str]:
    """The part objects under the prefix `url`, sorted by key; none when there is no prefix."""
    try:
        _, found = list_objects(url)
    except FileNotFoundError:
        return []
    return [
        name for name, _ in found if fnmatch.fnmatch(name.rpartition("/")[2], writers.PART_GLOB)
    ]


def _commit_remote(place: PartsPlace, url: str, *, append: bool, summary: RescoreSummary) -> None:
    """Move the part objects under OUT's prefix as `part-00000.parquet`, ... (after OUT's own
    parts, when appending; replacing OUT otherwise), each move whole (server-side copy)."""
    fs, key = filesystem(url)
    fs.invalidate_cache()  # the workers wrote the parts through their own clients
    new = _listed_parts(place.folder)
    existed = bool(fs.exists(key))
    if existed and not new and (append or summary.turns_scored == 0):
        remove_objects(place.folder)  # nothing new: OUT stays as it is
        return
    taken = 0
    if existed and append:
        if fs.isdir(key):
            taken = len(_listed_parts(url))
        else:
            moved = f"{url}.first-part"
            move_object(url, moved)
            move_object(moved, f"{url}/{_final_name(0)}")
            taken = 1
    elif existed:
        remove_objects(url)
    if not new and not taken:
        with tempfile.TemporaryDirectory(prefix="groundwire-part-") as folder:
            local = Path(folder) / _final_name(0)
            _empty_part(place, local)
            upload(local, f"{url}/{_final_name(0)}")
    for index, part in enumerate(new, start=taken):
        move_object(part, f"{url}/{_final_name(index)}")
    remove_objects(place.folder)
