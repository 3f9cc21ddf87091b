"""A real Phoenix server for the tests: its own virtualenv (cached), started on loopback.

`arize-phoenix` conflicts with instructor, so it lives in a venv of its own under the user cache
(`$XDG_CACHE_HOME/groundwire-tests/phoenix-venv-VERSION`, built once: ~1-7 min, 850 MB) and runs
as a separate process with a temporary SQLite working directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx

PHOENIX_VERSION: Final = "20.26"
"""The `arize-phoenix` release line the tests run against (the index's current one)."""
_READY_TIMEOUT_S: Final = 240.0


def cache_root() -> Path:
    """Where the test virtualenvs are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groundwire-tests"


def phoenix_venv() -> Path:
    """The cached virtualenv with `arize-phoenix`, built (under a file lock) when missing."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"phoenix-venv-{PHOENIX_VERSION}"
    done = venv / ".complete"
    if done.is_file():
        return venv
    with open(root / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return venv
        building = root / f"{venv.name}.building-{os.getpid()}"
        shutil.rmtree(building, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(building)], check=True)
        subprocess.run(
            [
                str(building / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                f"arize-phoenix=={PHOENIX_VERSION}.*",
            ],
            check=True,
        )
        (building / ".complete").touch()
        shutil.rmtree(venv, ignore_errors=True)
        building.rename(venv)  # the server is started as `python -m`, so no script paths break
    return venv


def free_port() -> int:
    """A port the OS says is free on 127.0.0.1 right now (Phoenix cannot be given port 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def phoenix_server(workdir: Path) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 (free ports, SQLite in `workdir`); yields its base URL."""
    venv = phoenix_venv()
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    env.pop("PHOENIX_API_KEY", None)
    base = f"http://127.0.0.1:{port}"
    log_path = workdir / "phoenix.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(venv / "bin" / "python"), "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Phoenix exited with {process.returncode}:\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix not ready after {_READY_TIMEOUT_S:.0f} s")
            time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
