"""Length-prefixed protobuf frames from a byte stream, finding the frames again after damage.

Two framings: the Collector file exporter's (`format: proto`: a 4-byte big-endian size before each
message, `fixed32`) and protobuf's delimited convention (a varint size, what the OTLP file-exporter
specification and Java's `writeDelimitedTo` write, `varint`). Neither carries a marker to
resynchronise on, so where the framing is lost (the first message cut by log rotation, a corrupt
size prefix, garbage between messages) the stream is scanned byte by byte for the next offset
where a message decodes to records *and* the message after it decodes too (or the file ends
there): a stray byte pattern that looks like a frame does not pass both. The framing itself is
found the same way at the start of the file, so a file whose first bytes are damaged still reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Final, Generic, Literal, TypeAlias, TypeVar

__all__ = ["Cut", "Frame", "Framing", "Gap", "frames"]

Framing: TypeAlias = Literal["fixed32", "varint"]
T = TypeVar("T")

_MAX_MESSAGE: Final = 1 << 30
"""Larger sizes mean a corrupt prefix, not a real message."""
_SCAN_MAX: Final = 64 << 20
"""While scanning for the next frame, larger sizes are not considered (real ones are smaller)."""
_FIRST_FIELD: Final = 0x0A
"""Every OTLP `*Data` message starts with field 1 (its resource list), length-delimited."""
_CHUNK: Final = 1 << 20
_NO_MESSAGE: Final = "no whole message (cut by log rotation, or damaged)"


@dataclass(frozen=True, slots=True)
class Frame(Generic[T]):
    """A message that decoded: its offset, 1-based number, and what `decode` made of it."""

    offset: int
    number: int
    value: T


@dataclass(frozen=True, slots=True)
class Gap:
    """Bytes that are no whole message: skipped (or a message whose body did not decode)."""

    offset: int
    number: int
    size: int
    reason: str
    to_end: bool = False
    """True when no whole message followed up to the end of the file."""


@dataclass(frozen=True, slots=True)
class Cut:
    """The file ends inside a frame (its last message was cut short)."""

    offset: int
    number: int
    reason: str


class _Buffer:
    """Unread bytes of `stream`, with their offset in the stream."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.data = bytearray()
        self.pos = 0
        self.base = 0
        self.eof = False

    @property
    def offset(self) -> int:
        """The stream offset of `pos`."""
        return self.base + self.pos

    def compact(self) -> None:
        """Forget the consumed bytes once there are many (indices held before this go stale)."""
        if self.pos > _CHUNK:
            del self.data[: self.pos]
            self.base += self.pos
            self.pos = 0

    def fill(self, count: int, at: int | None = None) -> bool:
        """Make `count` bytes from `at` (default `pos`) available; False if the file is shorter."""
        start = self.pos if at is None else at
        while len(self.data) - start < count and not self.eof:
            chunk = self._stream.read(max(_CHUNK, count - (len(self.data) - start)))
            if not chunk:
                self.eof = True
            self.data += chunk
        return len(self.data) - start >= count

    def available(self, at: int) -> int:
        """Bytes buffered from `at` on."""
        return len(self.data) - at


def _header(data: bytearray, at: int, framing: Framing) -> tuple[int, int] | None:
    """(prefix length, message size) of the frame at `at`; None when the prefix is incomplete."""
    if framing == "fixed32":
        if len(data) - at < 4:
            return None
        return 4, int.from_bytes(data[at : at + 4], "big")
    result = shift = 0
    for index in range(at, min(at + 10, len(data))):
        byte = data[index]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return index - at + 1, result
        shift += 7
    return None


def frames(
    stream: IO[bytes],
    decode: Callable[[bytes], T],
    nonempty: Callable[[T], bool],
    max_size: int = _MAX_MESSAGE,
) -> Iterator[Frame[T] | Gap | Cut]:
    """Every frame of `stream` decoded by `decode` (which raises ValueError for a bad body).

    Bytes skipped to find the framing again (a frame whose body does not decode, or whose size
    prefix is implausible, is such bytes: its size is not trusted) come as `Gap`s; a frame cut by
    the end of the file as a `Cut`. While scanning, a candidate frame must
    decode to something `nonempty` and be followed by another frame (or the end of the file).
    """
    buffer = _Buffer(stream)
    framing: Framing | None = None
    number = 0
    while buffer.fill(1):
        buffer.compact()
        number += 1
        start = buffer.offset
        why = _NO_MESSAGE
        cut: str | None = None
        if framing is not None:
            header = _header_at(buffer, buffer.pos, framing)
            if header is None and buffer.eof and buffer.available(buffer.pos) < 10:
                yield Cut(start, number, "file ends inside a size prefix")
                return
            if header is not None and header[1] > max_size:
                why = f"message size {header[1]:,} is over the limit of {max_size:,} bytes"
            elif header is not None:
                prefix, size = header
                if buffer.fill(prefix + size):
                    body = bytes(buffer.data[buffer.pos + prefix : buffer.pos + prefix + size])
                    try:
                        value = decode(body)
                    except ValueError as error:
                        why = f"not a valid OTLP traces, logs or metrics message ({error})"
                    else:
                        buffer.pos += prefix + size
                        yield Frame(start, number, value)
                        continue
                else:
                    have = buffer.available(buffer.pos) - prefix
                    cut = f"file ends inside a message ({have} of {size} bytes)"
            # The frame at `start` is bad: look for the next one after its first byte (its size
            # prefix may be what is damaged, so its claimed size is not trusted).
            buffer.pos += 1
        found = _scan(buffer, framing, decode, nonempty, min(max_size, _SCAN_MAX))
        if found is None:
            size = buffer.offset + buffer.available(buffer.pos) - start
            buffer.pos += buffer.available(buffer.pos)
            if cut is not None:
                yield Cut(start, number, cut)
            else:
                yield Gap(start, number, size, f"{why}, up to the end of the file", to_end=True)
            return
        framing, prefix, size, value = found
        if buffer.offset > start:
            yield Gap(start, number, buffer.offset - start, why)
            number += 1
        offset = buffer.offset
        buffer.pos += prefix + size
        yield Frame(offset, number, value)


def _header_at(buffer: _Buffer, at: int, framing: Framing) -> tuple[int, int] | None:
    """`_header` after making enough bytes available."""
    buffer.fill(4 if framing == "fixed32" else 10, at)
    return _header(buffer.data, at, framing)


def _scan(
    buffer: _Buffer,
    framing: Framing | None,
    decode: Callable[[bytes], T],
    nonempty: Callable[[T], bool],
    max_size: int,
) -> tuple[Framing, int, int, T] | None:
    """Advance `buffer.pos` to the next offset where a frame decodes and is followed by one."""
    framings: tuple[Framing, ...] = (framing,) if framing else ("fixed32", "varint")
    while buffer.fill(1):
        buffer.compact()
        at = buffer.pos
        for candidate in framings:
            header = _header_at(buffer, at, candidate)
            if header is None:
                continue
            prefix, size = header
            if not 0 < size <= max_size or not buffer.fill(prefix + 1, at):
                continue
            if buffer.data[at + prefix] != _FIRST_FIELD or not buffer.fill(prefix + size, at):
                continue
            try:
                value = decode(bytes(buffer.data[at + prefix : at + prefix + size]))
            except ValueError:
                continue
            after = at + prefix + size
            at_start = buffer.base + at == 0  # a whole message right at the start is enough
            if nonempty(value) and (
                at_start or _followed(buffer, after, candidate, decode, nonempty, hops=2)
            ):
                return candidate, prefix, size, value
        buffer.pos += 1
    return None


def _followed(
    buffer: _Buffer,
    at: int,
    framing: Framing,
    decode: Callable[[bytes], T],
    nonempty: Callable[[T], bool],
    hops: int,
) -> bool:
    """True when a frame with records (or the end of the file, even inside a frame) is at `at`.

    With `hops` > 1, a plausible frame that does not decode may stand between (a damaged
    neighbour must not cost a good message its place).
    """
    if not buffer.fill(1, at):
        return True
    header = _header_at(buffer, at, framing)
    if header is None:
        return buffer.eof
    prefix, size = header
    if size > _MAX_MESSAGE:
        return False
    if not buffer.fill(prefix + size, at):
        return True
    try:
        value = decode(bytes(buffer.data[at + prefix : at + prefix + size]))
    except ValueError:
        value = None
    if value is not None and nonempty(value):
        return True
    plausible = size > 0 and buffer.data[at + prefix] == _FIRST_FIELD
    return (
        hops > 1
        and plausible
        and _followed(buffer, at + prefix + size, framing, decode, nonempty, hops - 1)
    )
