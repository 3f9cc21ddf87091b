"""`phoenix://HOST:PORT/PROJECT` (and `phoenixs://` for HTTPS): where a project lives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

__all__ = ["SCHEMES", "PhoenixTarget", "is_phoenix_url", "parse_phoenix_url"]

SCHEMES: Final = {"phoenix": "http", "phoenixs": "https"}
"""URL scheme -> the HTTP scheme Phoenix is reached with."""


@dataclass(frozen=True, slots=True)
class PhoenixTarget:
    """A Phoenix server's base URL and one of its projects."""

    base_url: str
    project: str

    def __str__(self) -> str:
        scheme = "phoenixs" if self.base_url.startswith("https:") else "phoenix"
        return f"{scheme}://{self.base_url.split('://', 1)[1]}/{self.project}"


def is_phoenix_url(text: str) -> bool:
    """True when `text` starts with `phoenix://` or `phoenixs://`."""
    return text.split("://", 1)[0].lower() in SCHEMES and "://" in text


def parse_phoenix_url(text: str) -> PhoenixTarget:
    """`phoenix://HOST[:PORT][/PREFIX]/PROJECT` as a target; ValueError saying what is wrong.

    The last path segment is the project (URL-encoded if it holds special characters); anything
    before it is a path prefix of the server (Phoenix behind a proxy). The port defaults to 6006
    for `phoenix://` (Phoenix's own default) and to 443 for `phoenixs://`.
    """
    parts = urlsplit(text)
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise ValueError(
            f"{text!r}: expected phoenix://HOST:PORT/PROJECT (or phoenixs:// for HTTPS)"
        )
    if not parts.hostname:
        raise ValueError(f"{text!r}: no host (expected phoenix://HOST:PORT/PROJECT)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r}: the port is not a number") from None
    prefix, _, project = parts.path.rstrip("/").rpartition("/")
    project = unquote(project)
    if not project:
        raise ValueError(f"{text!r}: no project (expected phoenix://HOST:PORT/PROJECT)")
    if any(char in project for char in "/?#"):
        raise ValueError(f"{text!r}: a Phoenix project name cannot hold '/', '?' or '#'")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = port or (6006 if scheme == "http" else 443)
    return PhoenixTarget(f"{scheme}://{host}:{port}{prefix}", project)
