"""A real two-node Ray cluster on loopback for tests: `ray start --head`, then a second node.

Each node is its own `ray start --block` process in its own process group and temp folder, with
token authentication from a token made for this cluster (`RAY_AUTH_TOKEN`, so nothing is read
from or written to `~/.ray`), one CPU, and OS-chosen free ports. `stop()` ends exactly those
process groups (never `ray stop`, which would end every Ray process of the user) and removes the
temp folders.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

_STARTUP_S: Final = 90.0


def free_port() -> int:
    """A port the OS considers free on 127.0.0.1 (bound and released at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _bin(name: str) -> str:
    """An executable of the venv that runs the tests (`ray`, `groundwire`)."""
    beside = Path(sys.executable).with_name(name)  # `make test` runs .venv/bin/python directly
    if beside.is_file():
        return str(beside)
    candidate = Path(os.environ.get("VIRTUAL_ENV", "")) / "bin" / name
    found = shutil.which(name)
    return str(candidate) if candidate.is_file() else (found or name)


class RayCluster:
    """A head node and a worker node on 127.0.0.1, each one CPU, started and stopped by the test."""

    def __init__(self) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.env.pop("RAY_ADDRESS", None)
        self.folders: list[Path] = []
        self.nodes: dict[str, subprocess.Popen[bytes]] = {}

    def _start_node(self, name: str, *role: str) -> None:
        """`ray start --block` for one node, in its own process group and temp folder."""
        folder = Path(tempfile.mkdtemp(prefix=f"gw{name[0]}"))
        self.folders.append(folder)
        command = [
            _bin("ray"),
            "start",
            *role,
            "--block",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            f"--temp-dir={folder}",
            "--disable-usage-stats",
            "--object-store-memory=200000000",
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]
        log = (folder / "start.log").open("wb")
        self.nodes[name] = subprocess.Popen(
            command, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start(self) -> RayCluster:
        """Start the head, then the worker node; wait until both are alive."""
        self._start_node(
            "head",
            "--head",
            f"--port={self.port}",
            "--include-dashboard=false",
            f"--ray-client-server-port={free_port()}",
        )
        self._wait_nodes(1)
        self._start_node("worker", f"--address={self.address}")
        self._wait_nodes(2)
        return self

    def _wait_nodes(self, count: int) -> None:
        """Poll the cluster (from a subprocess driver) until `count` nodes are alive."""
        script = (
            f"import ray; ray.init(address='{self.address}', logging_level='ERROR'); "
            "print(sum(n['Alive'] for n in ray.nodes()))"
        )
        deadline = time.monotonic() + _STARTUP_S
        while time.monotonic() < deadline:
            for name, node in self.nodes.items():
                if node.poll() is not None:
                    log = (self.folders[list(self.nodes).index(name)] / "start.log").read_text()
                    raise RuntimeError(f"ray start ({name}) exited: {log[-2000:]}")
            done = subprocess.run(
                [_bin("python"), "-c", script],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not reach {count} nodes in {_STARTUP_S:.0f} s")

    def raylet_pid(self, name: str) -> int:
        """The PID of node `name`'s raylet (a child of its `ray start` process group)."""
        group = self.nodes[name].pid
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != group:
                    continue
                command = (entry / "cmdline").read_bytes().split(b"\0")[0]
            except (OSError, ProcessLookupError):
                continue
            if command.endswith(b"/raylet"):
                return int(entry.name)
        raise LookupError(f"no raylet found for the {name} node")

    def stop(self) -> None:
        """End each node's process group (TERM, then KILL) and remove the temp folders."""
        for node in reversed(list(self.nodes.values())):
            _end_group(node)
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)


def _end_group(node: subprocess.Popen[bytes]) -> None:
    """SIGTERM the node's process group, SIGKILL what is left after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(node.pid, sig)
        except ProcessLookupError:
            return
        try:
            node.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        _wait_group_gone(node.pid, wait)
        if not _group_alive(node.pid):
            return


def _group_alive(group: int) -> bool:
    """True while a process of process group `group` is still running."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_group_gone(group: int, timeout: float) -> None:
    """Wait up to `timeout` seconds for process group `group` to end."""
    deadline = time.monotonic() + timeout
    while _group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.2)
