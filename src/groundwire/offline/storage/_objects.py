"""Objects under a URL: listing a prefix, sizes, streaming reads, whole-object writes.

```python
for url, size in list_objects("s3://traces/otel/"):   # recursive, sorted by key
    with open_object(url) as raw: ...                  # a seekable binary stream, read by ranges
```

Reads are streamed in blocks (`BLOCK_SIZE`) by range requests, so memory stays bounded whatever
an object's size. Writes upload a finished local file in one request (multipart for large files):
an S3 object appears only when its upload completes, so a reader never sees half of one.
Client errors become one line (`storage_error`): FileNotFoundError for a missing object or
bucket, `StorageError` (a ValueError) for denied access, bad credentials and the rest.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any, Final

from groundwire.offline.storage._urls import filesystem, storage_error

__all__ = [
    "BLOCK_SIZE",
    "download",
    "list_objects",
    "move_object",
    "object_size",
    "open_object",
    "remove_objects",
    "upload",
]

BLOCK_SIZE: Final = 4 << 20
"""Bytes fetched per range request while an object is read (what a reader holds at most)."""
_sizes: dict[str, int] = {}
"""Sizes learnt while listing, so a run does not ask twice (URL -> bytes)."""


def _url(fs: Any, key: str) -> str:
    """The URL of `key` in `fs` (with its scheme)."""
    return str(fs.unstrip_protocol(key))


def list_objects(url: str) -> tuple[bool, list[tuple[str, int]]]:
    """`(is_prefix, [(url, size), ...])`: the object `url` names, or every object under it as a
    prefix (recursively, sorted by key; "folder" placeholders left out).

    FileNotFoundError when neither exists; StorageError when access is refused.
    """
    fs, key = filesystem(url)
    try:
        info = fs.info(key)
        if info.get("type") != "directory":
            size = int(info.get("size") or 0)
            _sizes[url] = size
            return False, [(url, size)]
        root = key.rstrip("/")
        found = fs.find(root, detail=True)
    except Exception as error:
        raise storage_error(url, error, "list") from None
    objects = []
    for name, entry in sorted(found.items()):
        if entry.get("type") == "directory" or name.endswith("/"):
            continue
        object_url = _url(fs, name)
        size = int(entry.get("size") or 0)
        _sizes[object_url] = size
        objects.append((object_url, size))
    return True, objects


def object_size(url: str) -> int:
    """The object's size in bytes (0 when it cannot be asked; the reader reports why)."""
    if url in _sizes:
        return _sizes[url]
    try:
        fs, key = filesystem(url)
        return int(fs.size(key) or 0)
    except Exception:  # reported when the object is read
        return 0


def open_object(url: str) -> tuple[IO[bytes], int]:
    """The object opened for reading by ranges, and its size; FileNotFoundError when it is
    missing, StorageError when access is refused."""
    fs, key = filesystem(url)
    try:
        raw = fs.open(key, "rb", block_size=BLOCK_SIZE, cache_type="readahead")
    except Exception as error:
        raise storage_error(url, error) from None
    size = int(getattr(raw, "size", None) or 0)
    return raw, size


def download(url: str, local: Path) -> bool:
    """Copy the object (or every object under the prefix) at `url` to `local`; False when
    there is none."""
    fs, key = filesystem(url)
    try:
        if not fs.exists(key):
            return False
        if fs.isdir(key):
            local.mkdir(parents=True, exist_ok=True)
            for name in fs.find(key.rstrip("/")):
                relative = name[len(key.rstrip("/")) + 1 :]
                target = local / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                fs.get_file(name, os.fspath(target))
        else:
            fs.get_file(key, os.fspath(local))
    except Exception as error:
        raise storage_error(url, error) from None
    return True


def upload(local: Path, url: str) -> None:
    """Upload `local` (a file, or a folder's files under the prefix `url/`) to `url`."""
    fs, key = filesystem(url)
    try:
        if local.is_dir():
            for file in sorted(local.rglob("*")):
                if file.is_file():
                    relative = file.relative_to(local).as_posix()
                    fs.put_file(os.fspath(file), f"{key.rstrip('/')}/{relative}")
        else:
            fs.put_file(os.fspath(local), key)
    except Exception as error:
        raise storage_error(url, error, "write") from None


def remove_objects(url: str) -> None:
    """Delete the object at `url`, or every object under it; nothing when there is none."""
    fs, key = filesystem(url)
    with contextlib.suppress(FileNotFoundError):
        if fs.exists(key):
            fs.rm(key, recursive=True)


def move_object(source: str, target: str) -> None:
    """Move one object to another key of the same store (a server-side copy, then a delete):
    the target appears whole or not at all."""
    fs, key = filesystem(source)
    _, target_key = filesystem(target)
    try:
        fs.mv(key, target_key)
    except Exception as error:
        raise storage_error(target, error, "write") from None
