"""`bench_ray`'s second part: each stage of the Ray path run in this process, CPU per turn.

On the benchmark's files (`time.process_time`): reading (`read_ranges`: parse, cut into
fragments, pickle, put each in its key range), grouping (each range's fragments sorted by key),
assembling (`assemble_blocks`), scoring (`score_batch`: parse the turns, score, encode the
scores), the scoring task writing its part or encoding its `.jsonl` lines (`score_batch` with
parts) and the driver: appending the encoded lines (`_decode` with an `EncodedOutput`), the
same lines joined from part files instead (the other design: the workers write files, the
driver joins them), and decoding every row to write it (`_decode` and the `.jsonl` writer: what
an export or a results hook still needs).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_RANGES = 16
"""Key ranges the reads cut their fragments into (what `range_count` gives these files)."""


def _cpu_us(step: Callable[[], Any], turns: int) -> tuple[float, Any]:
    """CPU µs per turn of `step()` in this process, and what it returned."""
    started = time.process_time()
    value = step()
    return (time.process_time() - started) / turns * 1e6, value


def stage_costs(files: list[Path], spec: Any, chunk: int) -> dict[str, Any]:
    """CPU per turn of each stage of the Ray path, run in this process on `files`."""
    import numpy as np

    from groundwire.offline._ray_lines import LinesPlace
    from groundwire.offline._ray_parts import PartsPlace
    from groundwire.offline._ray_reads import read_ranges
    from groundwire.offline._ray_stages import assemble_blocks, score_batch

    started = time.process_time()
    ranges: list[list[tuple[str, bytes]]] = [[] for _ in range(_RANGES)]
    for path in files:
        pieces = list(read_ranges(os.fspath(path), None, False, _RANGES))[:-1]
        for index, piece in enumerate(pieces):
            ranges[index % _RANGES].extend(piece)
    read_s = time.process_time() - started
    started = time.process_time()
    rows = [row for piece in ranges for row in sorted(piece, key=lambda row: row[0])]
    sort_s = time.process_time() - started
    keys = np.array([key for key, _ in rows])
    data = np.array([value for _, value in rows], dtype=object)
    started = time.process_time()
    assembled = assemble_blocks({"key": keys, "data": data}, None, set())
    assemble_s = time.process_time() - started
    turns = sum(len(json.loads(t)) for t in assembled["turns"])
    batches = [
        {name: np.array(values[i : i + chunk], dtype=object) for name, values in assembled.items()}
        for i in range(0, len(assembled["kind"]), chunk)
    ]
    score_us, scored = _cpu_us(lambda: [score_batch(b, "bench", spec, 8) for b in batches], turns)
    evaluators = ("quoted_spans", "quote_verification")
    with tempfile.TemporaryDirectory() as folder:
        place = PartsPlace(folder, evaluators, "bench")
        parts_us, _ = _cpu_us(
            lambda: [score_batch(b, "bench", spec, 8, place) for b in batches], turns
        )
        lines = LinesPlace(".jsonl", evaluators)
        lines_us, encoded = _cpu_us(
            lambda: [score_batch(b, "bench", spec, 8, lines) for b in batches], turns
        )
        driver = _driver_costs(Path(folder), scored, encoded, turns)
    return {
        "turns": turns,
        "read_us_per_turn": read_s / turns * 1e6,
        "group_sort_us_per_turn": sort_s / turns * 1e6,
        "assemble_us_per_turn": assemble_s / turns * 1e6,
        "score_us_per_turn": score_us,
        "score_and_write_part_us_per_turn": parts_us,
        "score_and_encode_lines_us_per_turn": lines_us,
        **driver,
    }


def _driver_costs(
    folder: Path, scored: list[Any], encoded: list[Any], turns: int
) -> dict[str, float]:
    """The driver's CPU per turn into `.jsonl`: appending the workers' encoded lines, joining
    the same lines from part files (the design not taken), decoding every row to write it."""
    from groundwire.offline import RescoreSummary
    from groundwire.offline._ray_lines import EncodedOutput
    from groundwire.offline.ray_engine import _decode
    from groundwire.offline.writers import JsonLinesWriter

    evaluators = ["quoted_spans", "quote_verification"]
    summary = RescoreSummary(evaluators=evaluators, out=None)
    output = EncodedOutput.open(folder / "copied.jsonl", evaluators, append=False)

    def copy() -> None:
        for batch in encoded:
            _decode(batch, summary, output)
        output.close()

    copy_us, _ = _cpu_us(copy, turns)
    files = []
    for index, batch in enumerate(encoded):
        files.append(folder / f"part-{index:05d}.jsonl")
        files[-1].write_bytes(bytes(batch["turns"][-1]))

    def join() -> None:
        with (folder / "joined.jsonl").open("wb") as out:
            for part in files:
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out)

    join_us, _ = _cpu_us(join, turns)
    writer = JsonLinesWriter(folder / "decoded.jsonl", evaluators)

    def decode() -> None:
        for batch in scored:
            for result in _decode(batch, summary):
                writer.write(result)
        writer.close()

    decode_us, _ = _cpu_us(decode, turns)
    same = (folder / "copied.jsonl").read_bytes() == (folder / "decoded.jsonl").read_bytes()
    return {
        "driver_copy_encoded_jsonl_us_per_turn": copy_us,
        "driver_join_part_files_jsonl_us_per_turn": join_us,
        "driver_decode_and_write_jsonl_us_per_turn": decode_us,
        "encoded_equals_decoded": same,
    }
