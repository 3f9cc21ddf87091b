"""After a fork in a gunicorn-like process: the master starts no scoring, its child starts its
own, and a process the child forks in turn keeps the child's (no second start, no wait)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.zerocode._run import ROOT

SCRIPT = """
import json, os, sys, threading, time
sys.orig_argv = ["/srv/.venv/bin/gunicorn", "app:app"]  # what a gunicorn master's would say
from groundwire import autoconfigure
from groundwire._configure import get_online

autoconfigure.initialize()
report = {"master_online": get_online() is not None, "master_threads": threading.active_count()}
read, write = os.pipe()
worker = os.fork()
if worker == 0:
    online = get_online()
    started = time.monotonic()
    grandchild = os.fork()
    if grandchild == 0:
        same = get_online() is online
        line = json.dumps({"same": same, "s": time.monotonic() - started})
        os.write(write, line.encode() + b"\\n")
        os._exit(0)
    os.waitpid(grandchild, 0)
    os.write(write, json.dumps({"worker_online": online is not None}).encode() + b"\\n")
    os._exit(0)
os.waitpid(worker, 0)
os.close(write)
print(json.dumps(report))
print(os.read(read, 10000).decode())
"""


def test_only_the_masters_children_start_scoring() -> None:
    """The master has no configuration and no extra thread; its child has one; the child's own
    fork inherits it at once instead of starting another."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    env.update(GROUNDWIRE_EVALUATORS="quoted_spans", GROUNDWIRE_EXPORTER="none")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    master, grandchild, worker = (json.loads(line) for line in done.stdout.splitlines() if line)
    assert master == {"master_online": False, "master_threads": 1}
    assert worker == {"worker_online": True}
    assert grandchild["same"] is True
    assert grandchild["s"] < 0.5
