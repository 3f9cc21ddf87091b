"""Length-prefixed frames, item by item: exact offsets, numbers, gaps and cuts in both framings,
across buffer compactions, with the framing found again after damage."""

from __future__ import annotations

import io

import pytest

from groundwire.offline.readers._frames import Cut, Frame, Gap, frames
from tests.offline._traces import varint

Item = Frame[bytes] | Gap | Cut


def _body(payload: bytes) -> bytes:
    """A message shaped like an OTLP `*Data`: one length-delimited field 1."""
    return b"\x0a" + varint(len(payload)) + payload


def _frame(body: bytes, framing: str) -> bytes:
    prefix = len(body).to_bytes(4, "big") if framing == "fixed32" else varint(len(body))
    return prefix + body


def _decode(body: bytes) -> bytes:
    if b"BAD" in body:
        raise ValueError("bad body")
    return body


def _items(data: bytes, max_size: int = 1 << 30) -> list[Item]:
    return list(frames(io.BytesIO(data), _decode, bool, max_size))


@pytest.mark.parametrize("framing", ["fixed32", "varint"])
def test_whole_frames_come_with_offsets_and_numbers(framing: str) -> None:
    """Every whole frame is one Frame at its offset, numbered from 1 (varint sizes over 127)."""
    bodies = [_body(b"a" * 3), _body(b"b" * 300), _body(b"c")]
    data = b"".join(_frame(body, framing) for body in bodies)
    offsets = [0]
    for body in bodies[:-1]:
        offsets.append(offsets[-1] + len(_frame(body, framing)))
    assert _items(data) == [
        Frame(offset, number, body)
        for offset, number, body in zip(offsets, (1, 2, 3), bodies, strict=True)
    ]


def test_a_file_ending_inside_a_size_prefix_or_a_message_is_a_cut() -> None:
    """After whole frames, a partial prefix or a partial body is one Cut saying which."""
    one = _frame(_body(b"x" * 10), "fixed32")
    assert _items(one + one + b"\x00\x00") == [
        Frame(0, 1, one[4:]),
        Frame(len(one), 2, one[4:]),
        Cut(2 * len(one), 3, "file ends inside a size prefix"),
    ]
    assert _items(one + one[:9]) == [
        Frame(0, 1, one[4:]),
        Cut(len(one), 2, "file ends inside a message (5 of 12 bytes)"),
    ]


def test_a_body_that_does_not_decode_is_a_gap_then_reading_goes_on() -> None:
    """A frame whose body does not decode is a Gap of its bytes; the next frame reads."""
    good, bad = _body(b"g" * 8), _body(b"BAD" * 4)
    data = _frame(good, "fixed32") + _frame(bad, "fixed32") + _frame(good, "fixed32") * 2
    size = len(_frame(good, "fixed32"))
    items = _items(data)
    assert items == [
        Frame(0, 1, good),
        Gap(
            size,
            2,
            len(_frame(bad, "fixed32")),
            "not a valid OTLP traces, logs or metrics message (bad body)",
        ),
        Frame(size + len(_frame(bad, "fixed32")), 3, good),
        Frame(2 * size + len(_frame(bad, "fixed32")), 4, good),
    ]


def test_an_oversized_frame_is_a_gap_naming_the_limit() -> None:
    """A frame over `max_size` is skipped as a Gap saying its size and the limit."""
    small, big = _body(b"s" * 5), _body(b"B" * 60)
    data = _frame(small, "fixed32") + _frame(big, "fixed32") + _frame(small, "fixed32") * 2
    first = len(_frame(small, "fixed32"))
    assert _items(data, max_size=len(small) + 1)[:3] == [
        Frame(0, 1, small),
        Gap(
            first,
            2,
            len(_frame(big, "fixed32")),
            f"message size {len(big)} is over the limit of {len(small) + 1} bytes",
        ),
        Frame(first + len(_frame(big, "fixed32")), 3, small),
    ]
    assert _items(_frame(small, "fixed32"), max_size=len(small)) == [Frame(0, 1, small)]


def test_garbage_to_the_end_is_one_gap_marked_to_end() -> None:
    """Bytes after the last frame that hold no frame are one Gap to the end of the file."""
    one = _frame(_body(b"x" * 10), "varint")
    tail = bytes(range(0x80, 0xC0))
    assert _items(one + tail) == [
        Frame(0, 1, one[1:]),
        Gap(
            len(one),
            2,
            len(tail),
            "no whole message (cut by log rotation, or damaged), up to the end of the file",
            to_end=True,
        ),
    ]


@pytest.mark.parametrize("framing", ["fixed32", "varint"])
def test_over_many_buffer_chunks_offsets_stay_exact_and_damage_is_found(framing: str) -> None:
    """Over 3 MiB of frames (several buffer compactions) with garbage in the middle: every frame
    before and after reads at its exact offset, the garbage is one Gap."""
    bodies = [_body(bytes([65 + n % 26]) * (5_000 + n)) for n in range(600)]
    pieces = [_frame(body, framing) for body in bodies]
    garbage = bytes(range(0x80, 0xF0)) * 3
    data = b"".join(pieces[:400]) + garbage + b"".join(pieces[400:])
    items = _items(data)
    gap_at = sum(map(len, pieces[:400]))
    why = (
        "message size 2,155,971,203 is over the limit of 1,073,741,824 bytes"
        if framing == "fixed32"
        else "no whole message (cut by log rotation, or damaged)"
    )
    assert items[400] == Gap(gap_at, 401, len(garbage), why)
    frames_only = [item for item in items if isinstance(item, Frame)]
    assert [f.value for f in frames_only] == bodies
    offsets = [0]
    for piece in pieces[:-1]:
        offsets.append(offsets[-1] + len(piece))
    expected = [o if i < 400 else o + len(garbage) for i, o in enumerate(offsets)]
    assert [f.offset for f in frames_only] == expected
    assert [f.number for f in frames_only] == [n if n <= 400 else n + 1 for n in range(1, 601)]


def test_a_cut_first_frame_is_skipped_to_the_first_whole_one() -> None:
    """A stream starting inside a frame: one Gap up to the first whole frame, found by scanning
    (a candidate must be followed by another frame)."""
    bodies = [_body(bytes([70 + n]) * 40) for n in range(4)]
    pieces = [_frame(body, "fixed32") for body in bodies]
    data = pieces[0][20:] + b"".join(pieces[1:])
    head = len(pieces[0]) - 20
    assert _items(data) == [
        Gap(0, 1, head, "no whole message (cut by log rotation, or damaged)"),
        Frame(head, 2, bodies[1]),
        Frame(head + len(pieces[1]), 3, bodies[2]),
        Frame(head + 2 * len(pieces[1]), 4, bodies[3]),
    ]
