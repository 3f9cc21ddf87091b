"""Finding the frames again after damage, item by item: which candidate frame the scan accepts
(it must be shaped like an OTLP `*Data`, hold records and be followed by a frame, possibly across
one damaged neighbour), the framing kept for the whole file, and sizes at their limits."""

from __future__ import annotations

import io
from dataclasses import dataclass

from groundwire.offline.readers._frames import Cut, Frame, Gap, frames
from tests.offline._traces import varint

NO_MESSAGE = "no whole message (cut by log rotation, or damaged)"


@dataclass(frozen=True)
class Message:
    """A decoded body: the payloads of its field-1 entries."""

    payloads: tuple[bytes, ...]


def _decode(body: bytes) -> Message:
    """Strict, like protobuf: a run of field-1 entries filling the body; b'BAD' is invalid."""
    payloads, at = [], 0
    while at < len(body):
        if body[at] != 0x0A:
            raise ValueError(f"byte {at} is not field 1")
        size, shift, at = 0, 0, at + 1
        while True:
            if at >= len(body):
                raise ValueError("truncated size")
            byte = body[at]
            size |= (byte & 0x7F) << shift
            at += 1
            if not byte & 0x80:
                break
            shift += 7
        if at + size > len(body):
            raise ValueError("truncated entry")
        if b"BAD" in body[at : at + size]:
            raise ValueError("bad entry")
        payloads.append(body[at : at + size])
        at += size
    return Message(tuple(payloads))


def _nonempty(message: Message) -> bool:
    return any(message.payloads)


def _body(payload: bytes) -> bytes:
    return b"\x0a" + varint(len(payload)) + payload


def _fixed(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def _var(body: bytes) -> bytes:
    return varint(len(body)) + body


def _items(data: bytes, max_size: int = 1 << 30) -> list[object]:
    return list(frames(io.BytesIO(data), _decode, _nonempty, max_size))


def _m(body: bytes) -> Message:
    return _decode(body)


A, C, D = _body(b"a" * 20), _body(b"c" * 21), _body(b"d" * 22)
GARBAGE = b"\xff" * 7 + b"zz"
"""Not a frame in either framing (sizes over the limit), holding no 0x0A."""


def test_a_3_byte_varint_size_and_a_first_frame_of_128_bytes() -> None:
    """Varint sizes of three bytes (>= 16 KiB) read; a first frame whose size is 0x80 0x01 is
    found at offset 0."""
    big, small = _body(b"x" * 20_000), _body(b"y" * 126)
    assert len(small) == 128
    data = _var(small) + _var(big) + _var(small)
    assert _items(data) == [
        Frame(0, 1, _m(small)),
        Frame(130, 2, _m(big)),
        Frame(130 + 3 + len(big), 3, _m(small)),
    ]


def test_the_end_of_the_file_after_whole_frames() -> None:
    """A lone prefix of exactly 4 bytes is a cut message; one stray byte a cut prefix; ten
    non-ending varint bytes are no frame at all (a Gap to the end)."""
    one = _fixed(A)
    assert _items(one + one + b"\x00\x00\x00\x10") == [
        Frame(0, 1, _m(A)),
        Frame(len(one), 2, _m(A)),
        Cut(2 * len(one), 3, "file ends inside a message (0 of 16 bytes)"),
    ]
    assert _items(one + one + b"\x00") == [
        Frame(0, 1, _m(A)),
        Frame(len(one), 2, _m(A)),
        Cut(2 * len(one), 3, "file ends inside a size prefix"),
    ]
    two = _var(A)
    assert _items(two + two + b"\xff" * 10) == [
        Frame(0, 1, _m(A)),
        Frame(len(two), 2, _m(A)),
        Gap(2 * len(two), 3, 10, f"{NO_MESSAGE}, up to the end of the file", to_end=True),
    ]
    assert _items(two + two + b"\xff" * 9) == [
        Frame(0, 1, _m(A)),
        Frame(len(two), 2, _m(A)),
        Cut(2 * len(two), 3, "file ends inside a size prefix"),
    ]


def test_an_eleven_byte_varint_is_no_size() -> None:
    """A varint size never takes more than 10 bytes: 10 continuation bytes and an end byte are
    skipped as bytes that are no message, not read as a giant size."""
    two = _var(A)
    data = two + two + b"\xff" * 10 + b"\x01" + _var(C) + _var(D)
    at = 2 * len(two)
    assert _items(data) == [
        Frame(0, 1, _m(A)),
        Frame(len(two), 2, _m(A)),
        Gap(at, 3, 11, NO_MESSAGE),
        Frame(at + 11, 4, _m(C)),
        Frame(at + 11 + len(_var(C)), 5, _m(D)),
    ]


def test_frames_exactly_at_the_size_limit_read() -> None:
    """`max_size` is inclusive, for the first frame (found by scanning) and the next ones."""
    data = _fixed(A) * 3
    assert _items(data, max_size=len(A)) == [
        Frame(n * len(_fixed(A)), n + 1, _m(A)) for n in range(3)
    ]


def test_the_framing_found_first_holds_for_the_whole_file() -> None:
    """After damage the scan looks only for frames of the file's framing: fixed32 frames after
    damage in a varint file (and varint frames in a fixed32 one) are not taken."""
    fixed_body = _body(b"f" * 381)  # its size 0x00000180 ends in a byte >= 0x80: no varint
    assert len(fixed_body) == 384
    head = _var(A) + _var(A)
    tail = GARBAGE + _fixed(fixed_body) * 3
    assert _items(head + tail) == [
        Frame(0, 1, _m(A)),
        Frame(len(_var(A)), 2, _m(A)),
        Gap(
            len(head),
            3,
            len(tail),
            "message size 69,242,844,270,821,375 is over the limit of 1,073,741,824 bytes, "
            "up to the end of the file",
            to_end=True,
        ),
    ]
    head = _fixed(A) + _fixed(A)
    tail = GARBAGE + _var(C) * 3
    assert _items(head + tail) == [
        Frame(0, 1, _m(A)),
        Frame(len(_fixed(A)), 2, _m(A)),
        Gap(
            len(head),
            3,
            len(tail),
            "message size 4,294,967,295 is over the limit of 1,073,741,824 bytes, "
            "up to the end of the file",
            to_end=True,
        ),
    ]


def _after_damage(*pieces: bytes) -> tuple[bytes, list[int]]:
    """GARBAGE then fixed32 frames of `pieces`; the stream and each piece's offset."""
    data, offsets = GARBAGE, []
    for piece in pieces:
        offsets.append(len(data))
        data += _fixed(piece)
    return data, offsets


BAD = _body(b"BAD" * 5)
"""Plausible (field 1 first) but does not decode."""
SHAPELESS = b"\x12" + _body(b"s" * 10)[1:]
"""Complete, does not decode, and not shaped like a message (field 2 first)."""


def test_a_good_frame_before_one_damaged_neighbour_anchors_the_scan() -> None:
    """Scanning, a frame followed by a plausible frame that does not decode is taken when the
    frame after that decodes (one damaged neighbour does not cost a good message its place)."""
    data, (a, b, c, d) = _after_damage(A, BAD, C, D)
    assert _items(data) == [
        Gap(0, 1, a, NO_MESSAGE),
        Frame(a, 2, _m(A)),
        Gap(b, 3, c - b, "not a valid OTLP traces, logs or metrics message (bad entry)"),
        Frame(c, 4, _m(C)),
        Frame(d, 5, _m(D)),
    ]


def test_two_damaged_neighbours_or_a_shapeless_one_do_not_anchor() -> None:
    """Two damaged frames in a row after a candidate, or one that is not shaped like a message,
    leave the candidate unconfirmed: it is skipped with the damage."""
    data, (_, _, _, c, d) = _after_damage(A, BAD, BAD, C, D)
    assert _items(data) == [Gap(0, 1, c, NO_MESSAGE), Frame(c, 2, _m(C)), Frame(d, 3, _m(D))]
    data, (_, _, c, d) = _after_damage(A, SHAPELESS, C, D)
    assert _items(data) == [Gap(0, 1, c, NO_MESSAGE), Frame(c, 2, _m(C)), Frame(d, 3, _m(D))]


def test_an_empty_or_one_byte_neighbour() -> None:
    """A following frame of size 0 is no anchor and no plausible neighbour (even when the next
    byte is 0x0A); one whose single byte is 0x0A is a plausible damaged neighbour."""
    body10 = _body(b"e" * 8)
    assert len(body10) == 10
    data = GARBAGE + _var(A) + b"\x00" + _var(body10) + _var(D)
    a = len(GARBAGE)
    c = a + len(_var(A)) + 1
    assert _items(data) == [
        Gap(0, 1, c, NO_MESSAGE),
        Frame(c, 2, _m(body10)),
        Frame(c + 11, 3, _m(D)),
    ]
    data, (a, b, c, d) = _after_damage(A, b"\x0a", C, D)
    assert _items(data) == [
        Gap(0, 1, a, NO_MESSAGE),
        Frame(a, 2, _m(A)),
        Gap(b, 3, 5, "not a valid OTLP traces, logs or metrics message (truncated size)"),
        Frame(c, 4, _m(C)),
        Frame(d, 5, _m(D)),
    ]


def test_a_frame_followed_by_junk_is_not_taken_while_scanning() -> None:
    """A candidate followed by an oversized size or by a complete frame that neither decodes nor
    looks like a message is skipped; the scan goes on to a confirmed frame."""
    data, (_, _, c, _) = _after_damage(A, SHAPELESS, C, D)
    assert _items(data)[0] == Gap(0, 1, c, NO_MESSAGE)
    data = GARBAGE + _fixed(A) + b"\xff\xff\xff\xff\x7f" + _fixed(C) + _fixed(D)
    c = len(GARBAGE) + len(_fixed(A)) + 5
    assert _items(data) == [
        Gap(0, 1, c, NO_MESSAGE),
        Frame(c, 2, _m(C)),
        Frame(c + len(_fixed(C)), 3, _m(D)),
    ]


def test_a_frame_followed_by_a_cut_one_is_taken() -> None:
    """The end of the file inside the next frame confirms a candidate (even a size of exactly
    1 GiB), and that frame is then one Cut."""
    for size in (1 << 30, 300):
        data = GARBAGE + _fixed(A) + size.to_bytes(4, "big") + b"abc"
        a = len(GARBAGE)
        assert _items(data) == [
            Gap(0, 1, a, NO_MESSAGE),
            Frame(a, 2, _m(A)),
            Cut(a + len(_fixed(A)), 3, f"file ends inside a message (3 of {size} bytes)"),
        ]


def test_a_varint_file_with_one_byte_sizes_recovers_after_damage() -> None:
    """A varint file whose frames have one-byte sizes reads on after a damaged frame."""
    one = _var(A)
    data = one + one + _var(BAD) + one + one
    bad = 2 * len(one)
    assert _items(data) == [
        Frame(0, 1, _m(A)),
        Frame(len(one), 2, _m(A)),
        Gap(bad, 3, len(_var(BAD)), "not a valid OTLP traces, logs or metrics message (bad entry)"),
        Frame(bad + len(_var(BAD)), 4, _m(A)),
        Frame(bad + len(_var(BAD)) + len(one), 5, _m(A)),
    ]
