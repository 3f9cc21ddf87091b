"""Opening trace files and objects: transparent gzip/zstd decompression, damage detection,
byte progress.

An object storage URL (`s3://bucket/key`, see `groundwire.offline.storage`) is read by range
requests into the same stream as a file, so every guarantee below holds for objects too.

Compression is recognised by its magic bytes, not the file name, so `traces.jsonl` that is really
gzip (or a `.gz` that is not) still reads. The raw file's position is exposed for progress bars.

A compressed stream cut short (a Collector killed mid-write, an interrupted copy) or damaged (a
flipped bit, a CRC mismatch), and an I/O error while reading, end the stream where the damage is:
everything decoded before it is delivered, and `SourceFile.damage` says what happened and where
(complete lines and bytes before it), so the reader reports it once and the run goes on. Decoder
errors never escape as `EOFError` (which command-line frameworks take for Ctrl-D and turn into a
bare "Aborted.") or as a raw `zlib.error` / `zstandard.ZstdError`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from groundwire.offline.storage import ObjectPath, object_url, open_object, storage_error

__all__ = ["Damage", "SourceFile", "open_source"]

_GZIP_MAGIC: Final = b"\x1f\x8b"
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
_BUFFER: Final = 1 << 20
_ZSTD_STEP: Final = 1 << 10
"""Compressed bytes fed per decoder call: what a corrupt block costs is at most this much more."""


@dataclass(frozen=True, slots=True)
class Damage:
    """Where and how a file's byte stream ended before its end."""

    truncated: bool
    """True when the compressed stream simply ends early (cut); False for corrupt data."""
    detail: str
    """The decoder's or operating system's own words."""
    offset: int
    """Decompressed bytes delivered before the damage."""
    lines: int
    """Complete lines (newline-terminated) among them."""
    line_end: int
    """Decompressed byte offset just past the last complete line."""
    compression: str | None

    def describe(self, *, unit: str | None = None, count: int | None = None) -> str:
        """One sentence: what broke, after which line and byte, and how much was read.

        `unit`/`count` name what the reader got out of it (e.g. "messages", 12); by default the
        complete lines are counted.
        """
        stream = f"{self.compression} stream" if self.compression else "file"
        what = "ends early" if self.truncated else f"is damaged ({self.detail})"
        if not self.compression:
            what = f"cannot be read further ({self.detail})"
        if unit is None:
            return (
                f"{stream} {what} after line {self.lines:,} (byte {self.line_end:,}); "
                f"{self.lines:,} lines read"
            )
        return f"{stream} {what} at byte {self.offset:,}; {count or 0:,} {unit} read"


class _Guarded(io.RawIOBase):
    """A raw stream over `inner` that turns a decoder or I/O error into end of stream + Damage."""

    def __init__(
        self, inner: Any, compression: str | None, errors: tuple[type[BaseException], ...]
    ):
        super().__init__()
        self._inner = inner
        self._read1 = getattr(inner, "read1", None)
        self._compression = compression
        self._errors = errors
        self.damage: Damage | None = None
        self._offset = 0
        self._lines = 0
        self._line_end = 0

    def readable(self) -> bool:
        """Always: this is a read-only stream."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill `buffer` from the inner stream; 0 at its end or after damage."""
        if self.damage is not None:
            return 0
        try:
            if self._read1 is not None:
                # One decoder step at a time: a buffered `readinto` that hits the damage would
                # drop the bytes it had already decoded in the same call.
                data = self._read1(len(buffer))
                count = len(data)
                memoryview(buffer)[:count] = data
            else:
                count = self._inner.readinto(buffer)
        except EOFError as error:
            self._damaged(True, str(error) or "end of file inside the compressed data")
            return 0
        except self._errors as error:
            self._damaged(False, _detail(error))
            return 0
        if not count:
            return 0
        chunk = bytes(memoryview(buffer)[:count])
        newlines = chunk.count(b"\n")
        if newlines:
            self._lines += newlines
            self._line_end = self._offset + chunk.rfind(b"\n") + 1
        self._offset += count
        return int(count)

    def _damaged(self, truncated: bool, detail: str) -> None:
        """Remember the damage at the current position."""
        self.damage = Damage(
            truncated, detail, self._offset, self._lines, self._line_end, self._compression
        )

    def close(self) -> None:
        """Close the inner stream too."""
        with contextlib.suppress(Exception):  # a damaged decoder may fail again; nothing to do
            self._inner.close()
        super().close()


def _detail(error: BaseException) -> str:
    """A decoder or OS error in a few words, without the exception's class name."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


class _ZstdRaw(io.RawIOBase):
    """zstd frames decoded one after another; an unfinished last frame raises EOFError.

    (`zstandard`'s stream reader ends silently at a cut frame, which would hide the damage.)
    """

    def __init__(self, raw: IO[bytes], zstandard: Any) -> None:
        super().__init__()
        self._raw = raw
        self._decompressor = zstandard.ZstdDecompressor()
        self._frame: Any = None
        self._pending = b""
        self._at = 0
        self._eof = False
        self._error: Exception | None = None

    def readable(self) -> bool:
        """Always: this is a read-only stream."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Decode until some bytes are ready, then copy as many as fit into `buffer`."""
        while self._at >= len(self._pending):
            if self._error is not None:
                raise self._error
            if self._eof:
                return 0
            data = self._raw.read(_ZSTD_STEP)
            if not data:
                self._eof = True
                if self._frame is not None:
                    raise EOFError("the last zstd frame is cut short")
                return 0
            pieces = []
            try:
                while data:
                    if self._frame is None:
                        self._frame = self._decompressor.decompressobj()
                    pieces.append(self._frame.decompress(data))
                    if self._frame.eof:
                        data = self._frame.unused_data
                        self._frame = None
                    else:
                        data = b""
            except Exception as error:  # zstandard.ZstdError: deliver what came before it
                self._error = error
            self._pending, self._at = b"".join(pieces), 0
        view = memoryview(buffer)
        count = min(len(view), len(self._pending) - self._at)
        view[:count] = self._pending[self._at : self._at + count]
        self._at += count
        return count


class SourceFile:
    """A trace file opened for binary reading, decompressed; `position` is raw bytes consumed."""

    def __init__(
        self,
        path: Path,
        raw: IO[bytes],
        guarded: _Guarded,
        compression: str | None,
        size: int | None = None,
    ):
        self.path = path
        self._raw = raw
        self._guarded = guarded
        self.stream: io.BufferedReader = io.BufferedReader(guarded, buffer_size=_BUFFER)
        """The decompressed bytes (ending early, never raising, where the file is damaged)."""
        self.compression = compression
        """`gzip`, `zstd` or None."""
        self.size = os.fstat(raw.fileno()).st_size if size is None else size
        """The file's (or object's) size in storage (compressed)."""

    @property
    def damage(self) -> Damage | None:
        """Why the stream ended before the file's end, or None (so far) when it did not."""
        return self._guarded.damage

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


def _zstandard(path: Path) -> Any:
    """The `zstandard` module; ValueError naming the fix when it is missing."""
    try:
        import zstandard
    except ImportError:
        raise ValueError(
            f"{path} is zstd-compressed (the Collector's file exporter `compression: zstd`); "
            "install `zstandard` to read it, or decompress it first with `zstd -d`"
        ) from None
    return zstandard


def open_source(path: str | os.PathLike[str]) -> SourceFile:
    """Open `path` (a file, or an object storage URL) for streaming, decompressing gzip or zstd
    when its first bytes say so.

    An object is read by range requests (`groundwire.offline.storage.BLOCK_SIZE` at a time), and
    `SourceFile.path` is then an `ObjectPath` whose text is the URL, so every message names it.
    """
    url = object_url(path)
    size: int | None = None
    errors: tuple[type[BaseException], ...] = (OSError,)
    if url is not None:
        file_path: Path = ObjectPath(url)
        raw, size = open_object(url)
        errors = (Exception,)  # a transport failure after the client's retries: damage here
    else:
        file_path = Path(path)
        if file_path.is_dir():
            raise ValueError(f"{file_path} is a directory; pass the trace files inside it")
        raw = file_path.open("rb", buffering=0)
    try:
        magic = raw.read(4)
        raw.seek(0)
        if magic.startswith(_GZIP_MAGIC):
            inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")
            compression: str | None = "gzip"
            errors = (*errors, zlib.error)
        elif magic == _ZSTD_MAGIC:
            zstandard = _zstandard(file_path)
            inner = _ZstdRaw(raw, zstandard)
            compression = "zstd"
            errors = (*errors, zstandard.ZstdError)
        else:
            inner, compression = raw, None
        guarded = _Guarded(inner, compression, errors)
        return SourceFile(file_path, raw, guarded, compression, size)
    except BaseException as error:
        raw.close()
        if url is not None and not isinstance(error, ValueError | ImportError | KeyboardInterrupt):
            raise storage_error(url, error) from None
        raise
