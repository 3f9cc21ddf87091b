"""Debian packages the tests need (Prometheus, Chromium), installed with apt-get when missing.

One place for how: as root, non-interactive, waiting for another install's lock. Where it cannot
be done (no apt-get, not root) the caller skips with the returned reason (and with CI=true that
skip fails, tests/conftest.py); a failed apt-get fails the test with its output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

import pytest

__all__ = ["install_debian_packages"]


def install_debian_packages(
    packages: Sequence[str], what: str, *, timeout_s: float = 900
) -> str | None:
    """Install `packages`; None on success, else why `what` cannot be installed here."""
    if shutil.which("apt-get") is None:
        return f"{what} is not installed and there is no apt-get to install it"
    if os.geteuid() != 0:
        return f"{what} is not installed and installing it needs root (apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait_for_lock = ["-o", "DPkg::Lock::Timeout=300"]  # another install may hold the lock
    for command in (
        ["apt-get", *wait_for_lock, "update"],
        ["apt-get", *wait_for_lock, "install", "-y", "--no-install-recommends", *packages],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return None
