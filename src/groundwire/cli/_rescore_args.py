"""`groundwire rescore`'s arguments checked before anything is opened: evaluator names and
options, the `--export-otlp` endpoint, input and output paths. Each problem is a bad argument
(exit 2, one line)."""

from __future__ import annotations

import inspect
import json
import os
import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from groundwire._registry import ENTRY_POINT_GROUP, available_evaluators, resolve_evaluators
from groundwire.cli._errors import bad_argument, nearest
from groundwire.offline.storage import object_url
from groundwire.offline.writers import (
    BaselineError,
    Comparison,
    check_output_paths,
    load_baseline,
    output_suffix,
)

__all__ = [
    "check_paths",
    "comparison",
    "endpoint",
    "evaluator_names",
    "evaluator_options",
    "evaluators",
]


def evaluator_names(values: list[str]) -> list[str]:
    """Evaluator names from repeated and comma-separated `--evaluators` values."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def evaluator_options(raw: str | None) -> dict[str, dict[str, Any]]:
    """`--options` JSON (inline or @file) as evaluator name -> keyword arguments."""
    if raw is None:
        return {}
    text = raw
    if raw.startswith("@"):
        try:
            text = Path(raw[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            bad_argument(
                f"--options: cannot read {raw[1:]!r}: {getattr(error, 'strerror', None) or error}"
            )
    try:
        options = json.loads(text)
    except json.JSONDecodeError as error:
        bad_argument(f"--options: not valid JSON: {error}")
    if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
        bad_argument(
            "--options: expected a JSON object of evaluator name -> options, e.g. "
            '\'{"quote_verification": {"embedder": null}}\''
        )
    return options


def evaluators(names: list[str], extra: dict[str, dict[str, Any]]) -> list[Any]:
    """Build the evaluators once, so an unknown name or a bad option is a bad argument."""
    if not names:
        bad_argument(
            "--evaluators: give at least one evaluator name (groundwire evaluators lists them)"
        )
    known = available_evaluators()
    for name in names:
        if name not in known:
            bad_argument(
                f"--evaluators: unknown evaluator {name!r}{nearest(name, known)}; "
                f"known: {', '.join(known)}"
            )
    unknown = sorted(set(extra) - set(names))
    if unknown:
        bad_argument(f"--options: options given for evaluators not selected: {unknown}")
    built = []
    for name in names:
        try:
            built.append(resolve_evaluators({name: extra.get(name, {})})[0])
        except TypeError as error:
            hint = _keyword_hint(name, str(error))
            bad_argument(f"--options: bad options for evaluator {name!r}: {error}{hint}")
        except ValueError as error:
            bad_argument(f"evaluator {name!r}: {error}")
        except ImportError as error:
            bad_argument(f"evaluator {name!r} cannot be used: {error}")
    return built


def _keyword_hint(name: str, message: str) -> str:
    """For "unexpected keyword argument 'x'": the nearest keyword the evaluator accepts."""
    match = re.search(r"unexpected keyword argument '(\w+)'", message)
    factory = next((ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)
    if match is None or factory is None:
        return ""
    try:
        parameters = inspect.signature(factory.load()).parameters
    except (TypeError, ValueError, ImportError):
        return ""
    accepted = [p for p, spec in parameters.items() if spec.kind is spec.KEYWORD_ONLY]
    accepted += [p for p, spec in parameters.items() if spec.kind is spec.POSITIONAL_OR_KEYWORD]
    return nearest(match.group(1), accepted) + (
        f"; accepted: {', '.join(accepted)}" if accepted else ""
    )


def endpoint(value: str) -> str:
    """A checked `--export-otlp` endpoint: http(s)://host[:port][/path], or host:port (gRPC)."""
    parsed = urlsplit(value if "://" in value else f"grpc://{value}")
    try:
        port = parsed.port
    except ValueError:
        port = -1
    ok = parsed.scheme in ("http", "https", "grpc") and bool(parsed.hostname) and port != -1
    if not ok or (parsed.scheme == "grpc" and (port is None or parsed.path not in ("", "/"))):
        bad_argument(
            f"--export-otlp: {value!r} is not an OTLP endpoint; expected http(s)://host[:port] "
            "(OTLP/HTTP) or host:port (gRPC)"
        )
    return value


def _is_phoenix(path: Path) -> bool:
    """True for a `phoenix://` input (a URL, not a file; Path folds its `//`)."""
    if ":/" not in os.fspath(path):
        return False
    from groundwire.cli._phoenix import looks_like_phoenix

    return looks_like_phoenix([path])


def check_paths(
    paths: list[Path], expected: Path | None, out: Path, baseline: Path | None = None
) -> None:
    """Inputs must exist; OUT must have a known format and not be an input or the baseline
    (nothing opened yet)."""
    # phoenix:// and object storage URLs (s3://...) are checked when they are read
    paths = [path for path in paths if not _is_phoenix(path) and object_url(path) is None]
    for path in paths:
        if not path.exists():
            bad_argument(f"trace file {path} does not exist")
    if expected is not None and not expected.is_file():
        bad_argument(f"--expected: {expected} is not a file")
    try:
        inputs = [("trace file", path) for path in paths]
        if expected is not None:
            inputs.append(("--expected file", expected))
        if baseline is not None:
            inputs.append(("--baseline file", baseline))
        if object_url(out) is None:
            check_output_paths([("--out", out)], inputs)
        output_suffix(out)
    except ValueError as error:
        bad_argument(str(error))


def comparison(baseline: Path | None, names: list[str], phoenix: bool) -> Comparison | None:
    """The `--baseline` scores file loaded for comparing this run with it (None without one)."""
    if baseline is None:
        return None
    if phoenix:
        bad_argument("--baseline: not available with a phoenix:// input (re-score a file)")
    if not baseline.is_file():
        bad_argument(f"--baseline: {baseline} is not a file")
    try:
        return Comparison(load_baseline(baseline), names)
    except BaselineError as error:
        bad_argument(f"--baseline: {error}")
