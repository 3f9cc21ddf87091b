"""OUT in object storage: written in a local folder as a local OUT is, uploaded whole at the end.

```python
staged = StagedOutput("s3://results/scores.parquet", append=False)
...  # the run writes staged.local exactly as it writes a local OUT (partial file, then commit)
notes = staged.settle(failed=False, rows=120, kept=None)  # uploads, then removes the folder
```

The rule is the local one: a reader never finds a partial object where a complete one is
expected. The finished output is uploaded in one request (multipart for large files), and an
object appears only when its upload completes. A run that fails uploads what it wrote beside OUT,
under OUT's partial name (`scores.partial.jsonl`, or `scores.partial.parquet/part-*.parquet`
for Parquet's row-group parts), and says so; when even that upload fails, the local folder is
kept and named. A run that wrote no row leaves an existing OUT as it was. `--resume` first copies
OUT and an earlier run's partial output down, so it continues where they stopped.
On Ray a Parquet OUT is written by the workers straight under the partial prefix and moved under
OUT's prefix at the end (`worker_parts`, see `_ray_parts`): nothing is staged here for it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from groundwire.offline._summary import RescoreSummary
from groundwire.offline.storage import (
    ObjectPath,
    StorageError,
    download,
    filesystem,
    object_url,
    remove_objects,
    storage_error,
    upload,
)
from groundwire.offline.writers import OutputPathError, output_suffix, partial_path

__all__ = ["StagedOutput", "check_remote_output"]


def check_remote_output(url: str, paths: Sequence[str | os.PathLike[str]]) -> None:
    """An object storage OUT: a known format, and neither an input nor an input's name
    (OutputPathError, before anything is read)."""
    output_suffix(url)
    parent, _, name = url.rpartition("/")
    for path in paths:
        if object_url(path) in (url, f"{parent}/{partial_path(name).name}"):
            raise OutputPathError(
                f"output {url} is the trace file {path}: writing it would destroy the input; "
                "choose another output name"
            )


class StagedOutput:
    """One object storage OUT, staged in a temporary local folder until the run ends."""

    def __init__(self, url: str, *, append: bool) -> None:
        """Stage `url` (`scheme://bucket/.../scores.jsonl`); `append` for `--resume`."""
        self.url = url
        self.append = append
        parent, _, name = url.rpartition("/")
        self.partial_url = f"{parent}/{partial_path(name).name}"
        """Where a failed run's rows are uploaded (OUT's partial name, beside it)."""
        self.folder = Path(tempfile.mkdtemp(prefix="groundwire-out-"))
        self.local = self.folder / name
        """The local OUT the run writes."""
        self.existed = False
        """OUT was already in storage when the run started."""
        self.worker_parts = False
        """The Ray workers write OUT's parts straight to storage (nothing staged to upload)."""

    @property
    def path(self) -> ObjectPath:
        """OUT as a path whose text is its URL (for the summary and messages)."""
        return ObjectPath(self.url)

    def fetch(self) -> None:
        """Before the run: find out whether OUT exists; when resuming, copy OUT and an earlier
        run's partial output down. StorageError when storage refuses."""
        fs, key = filesystem(self.url)
        try:
            self.existed = bool(fs.exists(key))
        except Exception as error:
            raise storage_error(self.url, error) from None
        if self.append:
            if self.existed:
                download(self.url, self.local)
            download(self.partial_url, partial_path(self.local))

    def send_repairs(self, changed: Sequence[Path]) -> None:
        """After `--resume` repaired the local copies (rows taken out to be scored again, torn
        parts dropped): upload each rewritten file over its object and remove the objects of
        removed ones, so the stored OUT never keeps a row the run scores again (on Ray the
        workers add their parts beside OUT's stored ones). StorageError when storage refuses."""
        parent = self.url.rpartition("/")[0]
        for path in changed:
            url = f"{parent}/{path.relative_to(self.folder).as_posix()}"
            if path.exists():
                upload(path, url)
            else:
                remove_objects(url)

    def finish(
        self, summary: RescoreSummary, *, failed: bool, notice: Callable[[str], None]
    ) -> None:
        """After the local output is finished or set aside: `settle` it, tell `notice`, and
        point the summary's `kept_partial` at the object that holds a failed run's rows."""
        kept, rows = summary.kept_partial, summary.turns_scored
        for note in self.settle(failed=failed, rows=rows, kept=kept):
            notice(note)
        held = kept is not None or self.worker_parts
        summary.kept_partial = ObjectPath(self.partial_url) if failed and held and rows else None

    def settle(self, *, failed: bool, rows: int, kept: Path | None) -> list[str]:
        """After the local output is finished (or set aside): upload it, or what a failed run
        kept; the notices to show. OutputPathError when the finished output cannot be uploaded
        (it is then kept locally and named)."""
        if self.worker_parts:
            return self._settle_parts(failed=failed, rows=rows)
        if failed:
            return self._keep(rows, kept)
        if rows == 0 and not self.append and self.existed:
            self.close()
            return [f"no result written: {self.url} is left as it was"]
        if not self.local.exists():
            self.close()
            return []
        try:
            upload(self.local, self.url)
        except (StorageError, FileNotFoundError) as error:
            raise OutputPathError(f"{error}; the finished output is kept in {self.local}") from None
        try:
            remove_objects(self.partial_url)
        except Exception as error:  # the output is in place; an old partial is only clutter
            self.close()
            return [f"could not remove {self.partial_url}: {storage_error(self.url, error)}"]
        self.close()
        return []

    def _settle_parts(self, *, failed: bool, rows: int) -> list[str]:
        """The notices of a run whose workers wrote the parts (already moved under OUT's prefix
        when it succeeded; left under the partial prefix when it failed)."""
        self.close()
        left = f"; {self.url} is left as it was" if self.existed else ""
        if failed and rows:
            where = self.partial_url
            return [f"the run failed: the {rows} results written are kept in {where}{left}"]
        if failed:
            return [f"the run failed: no result written{left}"]
        if rows == 0 and not self.append and self.existed:
            return [f"no result written: {self.url} is left as it was"]
        return []

    def _keep(self, rows: int, kept: Path | None) -> list[str]:
        """A failed run: upload what it wrote beside OUT (or into OUT, when resuming in place)."""
        left = f"; {self.url} is left as it was" if self.existed else ""
        if kept is None or not rows:
            self.close()
            return [f"the run failed: no result written{left}"]
        where = self.url if kept == self.local else self.partial_url
        try:
            upload(kept, where)
        except (StorageError, FileNotFoundError) as error:
            return [f"the run failed: the {rows} results written are kept in {kept} ({error})"]
        self.close()
        if where == self.url:
            return [f"the run failed: the {rows} results written are kept in {where}"]
        return [f"the run failed: the {rows} results written are kept in {where}{left}"]

    def close(self) -> None:
        """Remove the local folder."""
        shutil.rmtree(self.folder, ignore_errors=True)
