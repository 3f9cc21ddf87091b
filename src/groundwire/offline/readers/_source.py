"""Opening trace files: transparent gzip/zstd decompression and byte-progress tracking.

Compression is recognised by its magic bytes, not the file name, so `traces.jsonl` that is really
gzip (or a `.gz` that is not) still reads. The raw file's position is exposed for progress bars.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import IO, Final

__all__ = ["SourceFile", "open_source"]

_GZIP_MAGIC: Final = b"\x1f\x8b"
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"


class SourceFile:
    """A trace file opened for binary reading, decompressed; `position` is raw bytes consumed."""

    def __init__(self, path: Path, raw: IO[bytes], stream: IO[bytes], compression: str | None):
        self.path = path
        self._raw = raw
        self.stream = stream
        """The decompressed bytes."""
        self.compression = compression
        """`gzip`, `zstd` or None."""
        self.size = os.fstat(raw.fileno()).st_size
        """The file's size on disk (compressed)."""

    @property
    def position(self) -> int:
        """How many bytes of the file on disk have been consumed."""
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return self.size

    def close(self) -> None:
        """Close the decompressor and the file."""
        try:
            self.stream.close()
        finally:
            self._raw.close()

    def __enter__(self) -> SourceFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _zstd_reader(raw: IO[bytes], path: Path) -> IO[bytes]:
    """A buffered zstd decompressor over `raw`; ValueError when `zstandard` is missing."""
    try:
        import zstandard
    except ImportError:
        raise ValueError(
            f"{path} is zstd-compressed (the Collector's file exporter `compression: zstd`); "
            "install `zstandard` to read it, or decompress it first with `zstd -d`"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return io.BufferedReader(reader, buffer_size=1 << 20)


def open_source(path: str | os.PathLike[str]) -> SourceFile:
    """Open `path` for streaming, decompressing gzip or zstd when its first bytes say so."""
    file_path = Path(path)
    if file_path.is_dir():
        raise ValueError(f"{file_path} is a directory; pass the trace files inside it")
    raw = file_path.open("rb")
    try:
        magic = raw.read(4)
        raw.seek(0)
        if magic.startswith(_GZIP_MAGIC):
            stream: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
            return SourceFile(file_path, raw, stream, "gzip")
        if magic == _ZSTD_MAGIC:
            return SourceFile(file_path, raw, _zstd_reader(raw, file_path), "zstd")
        return SourceFile(file_path, raw, raw, None)
    except BaseException:
        raw.close()
        raise
