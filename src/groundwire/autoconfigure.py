"""Zero-code scoring: `opentelemetry-instrument` starts groundwire from the environment alone.

```sh
pip install groundwire groundwire-langchain opentelemetry-distro
OTEL_SERVICE_NAME=support-bot OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 \\
GROUNDWIRE_EVALUATORS=quoted_spans,quote_verification \\
opentelemetry-instrument python app.py
```

OpenTelemetry's auto-instrumentation (`opentelemetry-instrument`, and the Kubernetes operator's
injected `sitecustomize`) runs, in order: the distro, one configurator (the distro's: it builds
the tracer, meter and logger providers from the `OTEL_*` variables and makes them global), every
`opentelemetry_instrumentor` not named in `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS` (groundwire's
integrations among them), then the `opentelemetry_post_instrument` hooks. `initialize` is
groundwire's post-instrument hook. It is not a distro or a configurator on purpose: only one of
each is loaded per process, and taking that place would replace the providers the operator's
distro sets up. After the instrumentors, the providers exist and the integrations are
instrumented; `initialize` only adds scoring on top.

When on (`GROUNDWIRE_ENABLED=true`, or `GROUNDWIRE_EVALUATORS` set and `GROUNDWIRE_ENABLED`
unset), it calls `configure()` with every option from its `GROUNDWIRE_*` variable, on the global
providers (never a second set), with `configure()`'s exit hook and deadlines, and without
instrumenting anything itself (`OTEL_PYTHON_DISABLED_INSTRUMENTATIONS` decided that, unless
`GROUNDWIRE_INSTRUMENT` is set). The app's own `groundwire.configure()` call, if it has one,
replaces this configuration (see `groundwire._configure`).

A bad variable never stops the app: `initialize` logs one line naming it (`groundwire:
zero-code scoring is off: ...`) and the app runs unscored.

Pre-fork servers (gunicorn): the master process only forks workers, and threads do not survive a
fork. In a gunicorn master `initialize` starts nothing and registers `os.register_at_fork`
instead, so each worker starts its own scoring right after it is forked (a process a worker
forks in turn keeps what it inherited). A uvicorn supervisor (`--workers` above 1, `--reload`)
spawns fresh interpreters that run the auto-instrumentation, and this hook, themselves: in the
supervisor `initialize` starts nothing, nor in multiprocessing's own helper processes (its
resource tracker), which are spawned the same way.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from groundwire import semconv
from groundwire._env import env_flag, env_list, env_str

__all__ = [
    "initialize",
    "is_multiprocessing_helper",
    "is_prefork_master",
    "is_spawning_supervisor",
    "wanted",
]

logger = logging.getLogger("groundwire")

_PREFORK_SERVERS = ("gunicorn",)
"""Servers whose master process forks the workers that serve requests."""

_forked_hook_registered = False


def wanted() -> bool:
    """True when the environment asks for scoring: `GROUNDWIRE_ENABLED` if set, else whether
    `GROUNDWIRE_EVALUATORS` names any evaluator. A ValueError names a bad `GROUNDWIRE_ENABLED`."""
    enabled = env_flag(semconv.ENV_ENABLED)
    if enabled is not None:
        return enabled
    return bool(env_list(semconv.ENV_EVALUATORS))


def is_prefork_master(argv: list[str] | None = None) -> bool:
    """True when this process is a pre-fork server's master (`gunicorn app:app`, `python -m
    gunicorn ...`): `sys.orig_argv` names it even when `sys.argv` does not."""
    args = list(sys.orig_argv if argv is None else argv)
    return any(_server_arguments(args, server) is not None for server in _PREFORK_SERVERS)


def _server_arguments(argv: list[str], server: str) -> list[str] | None:
    """The arguments after `server` when the command line runs it (`server ...`, `python
    /path/to/server ...`, `python -m server ...`), else None."""
    if argv and PurePath(argv[0]).name == server:
        return argv[1:]
    if len(argv) > 1 and PurePath(argv[1]).name == server:
        return argv[2:]  # python /path/to/bin/server ...
    for i, (flag, module) in enumerate(itertools.pairwise(argv)):
        if flag == "-m" and module == server:
            return argv[i + 2 :]
    return None


def is_spawning_supervisor(
    argv: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> bool:
    """True when this process is a uvicorn supervisor: `--workers` above 1 (or, without the
    option, `WEB_CONCURRENCY` above 1) or `--reload`. Its workers are fresh interpreters
    (multiprocessing's spawn) that run the auto-instrumentation, and this hook, themselves."""
    args = _server_arguments(list(sys.orig_argv if argv is None else argv), "uvicorn")
    if args is None:
        return False
    if "--reload" in args:
        return True
    workers: str | None = None
    for i, arg in enumerate(args):
        if arg == "--workers" and i + 1 < len(args):
            workers = args[i + 1]
        elif arg.startswith("--workers="):
            workers = arg.partition("=")[2]
    if workers is None:
        workers = (os.environ if environ is None else environ).get("WEB_CONCURRENCY")
    try:
        return workers is not None and int(workers) > 1
    except ValueError:
        return False  # uvicorn itself refuses it


_HELPERS = (
    "from multiprocessing.resource_tracker import",
    "from multiprocessing.forkserver import",
)
"""How multiprocessing starts its helper processes (`python -c ...`), which serve no requests."""


def is_multiprocessing_helper(argv: list[str] | None = None) -> bool:
    """True in multiprocessing's resource tracker or fork server: spawned interpreters that run
    the auto-instrumentation too, but never the app's turns."""
    args = list(sys.orig_argv if argv is None else argv)
    return any(
        flag == "-c" and code.startswith(_HELPERS) for flag, code in itertools.pairwise(args)
    )


def initialize() -> None:
    """The `opentelemetry_post_instrument` hook: start scoring when the environment asks for it.

    Never raises: a bad variable or a failed start is one error line and the app runs unscored.
    """
    global _forked_hook_registered
    try:
        if not wanted():
            return
    except ValueError as error:
        _off(error)
        return
    if is_multiprocessing_helper():
        return
    if is_spawning_supervisor():
        logger.info("groundwire: uvicorn supervisor; each worker process starts its own scoring")
        return
    if is_prefork_master():
        if not _forked_hook_registered:
            os.register_at_fork(after_in_child=_start_in_worker)
            _forked_hook_registered = True
        logger.info("groundwire: pre-fork server master; scoring starts in each worker")
        return
    _start()


def _start_in_worker() -> None:
    """After a fork: start scoring in a worker of the master, not again in a process forked by
    a worker that already scores (it inherited that configuration; replacing it would first wait
    on the threads that did not survive the fork)."""
    from groundwire._configure import get_online

    if get_online() is None:
        _start()


def _start() -> None:
    """`configure()` from the variables, on the global providers; one error line on failure."""
    try:
        # imported here: the online machinery loads only in a process that asks for scoring
        from groundwire._configure import configure_from_environment

        configure_from_environment(**_options())
    except (ValueError, TypeError, KeyError, ImportError, RuntimeError) as error:
        _off(error)
    except Exception as error:  # the app must run whatever scoring's start-up does
        _off(error, unexpected=True)


def _options() -> dict[str, Any]:
    """What the hook passes to `configure()`: nothing to instrument unless
    `GROUNDWIRE_INSTRUMENT` says so (opentelemetry-instrument has done it, honouring
    `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`); every other option comes from its variable."""
    if env_str(semconv.ENV_INSTRUMENT) is None:
        return {"instrument": False}
    return {}


def _off(error: BaseException, *, unexpected: bool = False) -> None:
    """The one line that says scoring is off, and why."""
    reason = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    kind = f"{type(error).__name__}: " if unexpected else ""
    logger.error("groundwire: zero-code scoring is off (the app runs unscored): %s%s", kind, reason)
