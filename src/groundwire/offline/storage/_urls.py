"""Object storage URLs: recognising them, and the filesystem (fsspec) that serves each one.

```python
url = object_url("s3://traces/otel/2026-11/")  # "s3://traces/otel/2026-11/"; None for a local path
fs, key = filesystem(url)                      # an fsspec filesystem and the key inside it
```

A URL survives being passed through `pathlib.Path` (which turns `s3://b/k` into `s3:/b/k`, as
the command line's path arguments do): `object_url` restores it. Only the schemes of well-kept
fsspec filesystems are taken (`SCHEMES`), so a local file whose name holds a colon is still a
file.

Credentials come only from the standard places each library reads (for S3: the `AWS_*`
environment variables, `~/.aws` profiles, instance roles; `AWS_ENDPOINT_URL` for an
S3-compatible server): nothing is passed, printed or logged here. Filesystems are kept per
scheme and credential environment, so a changed environment (another profile, a rotated key)
gets a fresh client, never a stale one.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import PosixPath
from typing import Any, Final

__all__ = ["SCHEMES", "ObjectPath", "StorageError", "filesystem", "object_url", "storage_error"]

SCHEMES: Final = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "http", "https", "memory")
"""Schemes read through fsspec: S3 (s3fs), Google Cloud Storage (gcsfs), Azure (adlfs), HTTP(S)
(aiohttp), and fsspec's in-memory filesystem."""
_PACKAGES: Final = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "http": "aiohttp",
    "https": "aiohttp",
}
_URL: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/(/?)(.*)$", re.DOTALL)
_CREDENTIAL_PREFIXES: Final = ("AWS_", "GOOGLE_", "GCS", "AZURE_", "FSSPEC_", "BOTO")
_lock = threading.Lock()
_cache: dict[tuple[str, str], Any] = {}


class StorageError(ValueError):
    """Object storage refused or could not serve a request: one line, no credentials in it."""


class ObjectPath(PosixPath):
    """A `Path` standing for an object: its text (and `os.fspath`) is the object's URL, so
    messages written for files (`f"{path}:{line}"`) name the object; `.name` and `.suffix` are
    the key's."""

    url: str

    def __new__(cls, url: str) -> ObjectPath:
        """The path of `url` (`scheme://bucket/key`)."""
        self = super().__new__(cls, "/" + url.split("://", 1)[-1])
        self.url = url
        return self

    def __str__(self) -> str:
        return getattr(self, "url", None) or PosixPath.__str__(self)

    def __fspath__(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"ObjectPath({str(self)!r})"


def object_url(path: str | os.PathLike[str]) -> str | None:
    """The object storage URL `path` names (restored after `pathlib`), or None for a local path."""
    text = os.fspath(path)
    match = _URL.match(text)
    if match is None or match.group(1).lower() not in SCHEMES:
        return None
    return f"{match.group(1).lower()}://{match.group(3)}"


def _environment_key() -> str:
    """A digest of the credential environment (never the values themselves, kept or shown)."""
    items = sorted(
        (name, value) for name, value in os.environ.items() if name.startswith(_CREDENTIAL_PREFIXES)
    )
    return hashlib.sha256(repr(items).encode()).hexdigest()


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem serving `url` and the path inside it; ImportError naming the
    package to install when the scheme's library is missing."""
    scheme = url.split("://", 1)[0]
    try:
        import fsspec  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise ImportError(_install_hint(scheme)) from None
    key = (scheme, _environment_key())
    with _lock:
        fs = _cache.get(key)
        if fs is None:
            try:
                fs = fsspec.filesystem(scheme, skip_instance_cache=True)
            except ImportError:
                raise ImportError(_install_hint(scheme)) from None
            _cache.clear()  # one environment at a time: an old client is never reused
            _cache[key] = fs
    return fs, str(fs._strip_protocol(url))


def _install_hint(scheme: str) -> str:
    """What to install to read `scheme://` URLs."""
    package = _PACKAGES.get(scheme, "fsspec")
    how = "pip install 'groundwire[s3]'" if package == "s3fs" else f"pip install fsspec {package}"
    return f"{scheme}:// inputs and outputs need fsspec and {package}: {how}"


def storage_error(url: str, error: BaseException, action: str = "read") -> BaseException:
    """`error` (raised by a storage client for `url`) as one clear line without credentials:
    FileNotFoundError for a missing object or bucket, StorageError for the rest."""
    if isinstance(error, FileNotFoundError):
        return FileNotFoundError(f"no such object or prefix: {url}")
    if isinstance(error, PermissionError):
        return StorageError(
            f"cannot {action} {url}: access denied ({_reason(error)}); check the credentials "
            "(environment variables, profile) and the bucket's permissions"
        )
    return StorageError(f"cannot {action} {url}: {_reason(error)}")


def _reason(error: BaseException) -> str:
    """The client's own words, on one line."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."
