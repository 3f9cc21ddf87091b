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
_LONGEST_PREFIX: Final = 10
"""A varint size takes at most 10 bytes; the fixed32 one 4."""
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

    def compact(self) -> int:
        """Forget the consumed bytes once there are many; returns how far indices moved."""
        if self.pos <= _CHUNK:
            return 0
        moved = self.pos
        del self.data[:moved]
        self.base += moved
        self.pos = 0
        return moved

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
    """Advance `buffer.pos` to the next offset where a frame decodes and is followed by one.

    A frame's body starts with the byte 0x0A, so only offsets up to 10 bytes (the longest size
    prefix) before such a byte are tried: the scan jumps from one 0x0A to the next.
    """
    framings: tuple[Framing, ...] = (framing,) if framing else ("fixed32", "varint")
    search = buffer.pos + 1
    while True:
        search -= buffer.compact()
        first = buffer.data.find(_FIRST_FIELD, search)
        if first < 0:
            if buffer.eof:
                return None
            buffer.pos = max(buffer.pos, len(buffer.data) - _LONGEST_PREFIX)
            search = len(buffer.data)
            buffer.fill(buffer.available(buffer.pos) + 1)
            continue
        for at, candidate in _starts(buffer, first, framings):
            found = _candidate(buffer, at, first, (candidate,), decode, nonempty, max_size)
            if found is not None:
                buffer.pos = at
                return found
        search = first + 1
        buffer.pos = max(buffer.pos, search - _LONGEST_PREFIX)


def _field_ones(data: bytearray, at: int, end: int) -> bool:
    """True when `data[at:end]` is a run of length-delimited field-1 entries ending at `end`.

    What every OTLP `*Data` message is at its top level; checked in a few steps (one per
    resource group) before a candidate is copied and decoded, which random bytes almost never
    pass.
    """
    while at < end:
        if data[at] != _FIRST_FIELD:
            return False
        header = _header(data, at + 1, "varint")
        if header is None:
            return False
        at += 1 + header[0] + header[1]
    return at == end


def _starts(buffer: _Buffer, body: int, framings: tuple[Framing, ...]) -> list[tuple[int, Framing]]:
    """Offsets (not before `buffer.pos`) where a size prefix ending just before `body` starts."""
    data, lowest = buffer.data, buffer.pos
    starts: list[tuple[int, Framing]] = []
    if "fixed32" in framings and body - 4 >= lowest:
        starts.append((body - 4, "fixed32"))
    if "varint" in framings and body - 1 >= lowest and data[body - 1] < 0x80:
        at = body - 1
        starts.append((at, "varint"))
        while at - 1 >= max(lowest, body - _LONGEST_PREFIX) and data[at - 1] >= 0x80:
            at -= 1
            starts.append((at, "varint"))  # a longer varint ending at the same byte
    return sorted(starts)


def _candidate(
    buffer: _Buffer,
    at: int,
    body: int,
    framings: tuple[Framing, ...],
    decode: Callable[[bytes], T],
    nonempty: Callable[[T], bool],
    max_size: int,
) -> tuple[Framing, int, int, T] | None:
    """The frame at `at` whose body starts at `body`, if one decodes there and is followed."""
    for framing in framings:
        header = _header_at(buffer, at, framing)
        if header is None or at + header[0] != body:
            continue
        prefix, size = header
        if not 0 < size <= max_size or not buffer.fill(prefix + size, at):
            continue
        if not _field_ones(buffer.data, body, body + size):
            continue
        try:
            value = decode(bytes(buffer.data[body : body + size]))
        except ValueError:
            continue
        at_start = buffer.base + at == 0  # a whole message right at the start is enough
        if nonempty(value) and (
            at_start or _followed(buffer, body + size, framing, decode, nonempty, hops=2)
        ):
            return framing, prefix, size, value
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
