"""Judge reply caches: re-scoring the same turn with the same prompt and model does not pay twice.

Keys hash (prompt version, model, response schema, inputs); values are the validated reply as
JSON. `MemoryCache` (bounded LRU, online) and `DiskCache` (diskcache, offline re-scoring, shared
between processes) both implement `ResponseCache`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from groundwire._lru import BoundedLru

__all__ = ["DiskCache", "MemoryCache", "ResponseCache", "cache_key", "default_cache_dir"]


@runtime_checkable
class ResponseCache(Protocol):
    """Stores validated judge replies (JSON strings) by key; must be thread-safe."""

    def get(self, key: str) -> str | None:
        """The stored reply, or None."""
        ...

    def set(self, key: str, value: str) -> None:
        """Store a reply."""
        ...


def cache_key(prompt_version: str, model: str, schema: str, inputs: Mapping[str, Any]) -> str:
    """A stable hex digest of what determines a judge reply."""
    payload = json.dumps(
        {"prompt": prompt_version, "model": model, "schema": schema, "inputs": inputs},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class MemoryCache:
    """A thread-safe least-recently-used cache of at most `max_entries` replies."""

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be positive, got {max_entries!r}")
        self._data: BoundedLru[str, str] = BoundedLru(max_entries)

    def get(self, key: str) -> str | None:
        """The stored reply (marked as recently used), or None."""
        return self._data.get(key, touch=True)

    def set(self, key: str, value: str) -> None:
        """Store a reply, evicting the least recently used beyond the bound."""
        self._data.put(key, value)

    def __len__(self) -> int:
        return len(self._data)


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/groundwire/judges` (or `~/.cache/groundwire/judges`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groundwire" / "judges"


class DiskCache:
    """An on-disk cache (the `diskcache` library: SQLite + files, safe across processes)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        try:
            import diskcache
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError(
                "the disk judge cache needs diskcache: pip install 'groundwire[judges]'"
            ) from error
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self._cache = diskcache.Cache(str(self.directory))

    def get(self, key: str) -> str | None:
        """The stored reply, or None."""
        value = self._cache.get(key)
        return value if isinstance(value, str) else None

    def set(self, key: str, value: str) -> None:
        """Store a reply."""
        self._cache.set(key, value)

    def close(self) -> None:
        """Close the underlying database."""
        self._cache.close()

    def __len__(self) -> int:
        return len(self._cache)
