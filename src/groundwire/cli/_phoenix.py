"""What `groundwire rescore` needs for a `phoenix://` input: options, the run, errors, summary."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundwire.cli._exit import ExitCode
from groundwire.offline.rescore import RescoreSummary
from groundwire.phoenix import (
    PhoenixError,
    PhoenixNotFoundError,
    PhoenixQuery,
    PhoenixRun,
    PhoenixTarget,
    is_phoenix_url,
    parse_phoenix_url,
    rescore_phoenix,
)

__all__ = ["PhoenixCommand", "looks_like_phoenix", "phoenix_target"]


def _restored(path: str | os.PathLike[str]) -> str:
    """The argument as typed: Click hands it over as a `Path`, which folds `//` into `/`."""
    text = os.fspath(path)
    if ":/" in text and "://" not in text:
        return text.replace(":/", "://", 1)
    return text


def looks_like_phoenix(paths: Sequence[str | os.PathLike[str]]) -> bool:
    """True when an input is a `phoenix://` (or `phoenixs://`) URL."""
    return any(is_phoenix_url(_restored(path)) for path in paths)


def phoenix_target(paths: Sequence[str | os.PathLike[str]]) -> PhoenixTarget:
    """The Phoenix project named by the inputs; ValueError unless it is the only input."""
    if len(paths) != 1 or not is_phoenix_url(_restored(paths[0])):
        raise ValueError("a phoenix:// input must be the only input (no trace files beside it)")
    return parse_phoenix_url(_restored(paths[0]))


@dataclass(slots=True)
class PhoenixCommand:
    """One `groundwire rescore phoenix://...` run: stands in for `rescore` in the command."""

    target: PhoenixTarget
    query: PhoenixQuery
    annotate: bool
    run: PhoenixRun | None = None

    @classmethod
    def from_options(
        cls,
        paths: Sequence[str | os.PathLike[str]],
        *,
        engine: str,
        fmt: str | None,
        annotate: bool,
        start: str | None,
        end: str | None,
        where: Sequence[str],
        trace_ids: Sequence[str],
        page_size: int = 1000,
    ) -> PhoenixCommand:
        """Check the options; ValueError naming the wrong one."""
        if not looks_like_phoenix(paths):
            raise ValueError("--annotate-phoenix and --phoenix-* need a phoenix:// input")
        if engine != "local":
            raise ValueError("a phoenix:// input is read on the local engine only")
        if fmt is not None:
            raise ValueError("--format applies to trace files, not to a phoenix:// input")
        for item in where:
            key, sep, value = item.partition(":")
            if not sep or not key or not value:
                raise ValueError(f"--phoenix-where expects KEY:VALUE, got {item!r}")
        query = PhoenixQuery(
            start_time=start,
            end_time=end,
            root_attributes=tuple(where),
            trace_ids=tuple(trace_ids),
            page_size=page_size,
        )
        return cls(phoenix_target(paths), query, annotate)

    def rescore(self, paths: Any, evaluators: Any, out: Any, **options: Any) -> RescoreSummary:
        """`rescore` with the project's spans in place of `paths` (file-only options dropped)."""
        for name in ("fmt", "engine", "ray_address"):
            options.pop(name, None)
        self.run = rescore_phoenix(
            self.target, evaluators, out, query=self.query, annotate=self.annotate, **options
        )
        return self.run.summary

    def lines(self) -> list[str]:
        """The Phoenix lines of the summary (source, annotations written)."""
        if self.run is None:
            return []
        lines = [f"read from {self.target}"]
        if self.run.annotations is not None:
            lines.append(self.run.annotations.line())
        return lines

    @staticmethod
    def owns(error: BaseException) -> bool:
        """True for the errors this command reports itself."""
        return isinstance(error, PhoenixError)

    @staticmethod
    def exit_code(error: BaseException) -> ExitCode:
        """A missing project: bad argument; nothing read: nothing readable; else partial input."""
        if isinstance(error, PhoenixNotFoundError):
            return ExitCode.BAD_ARGUMENTS
        pages = getattr(error, "pages_read", 0)
        return ExitCode.NOTHING_READABLE if pages == 0 else ExitCode.PARTIAL_INPUT

    @staticmethod
    def message(error: BaseException, out: Path | None) -> str:
        """The error, and for a run cut short how to continue it."""
        text = str(error)
        pages = getattr(error, "pages_read", 0)
        if pages and out is not None:
            text += (
                f" ({pages} pages were read; the turns scored so far are in {out}: "
                "run again with --resume to continue)"
            )
        return text
