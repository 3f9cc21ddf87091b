"""A private local Ray for the Ray engine tests, removed with its temp folder afterwards."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def local_ray(ray: Any, num_cpus: int = 2) -> Iterator[Path]:
    """`ray.init` in a private temp folder (given: its logs are under `session_latest/logs`);
    shut down and removed (with ~/.ray if it was new)."""
    home_ray = Path.home() / ".ray"
    had_home_ray = home_ray.exists()
    temp = tempfile.mkdtemp(prefix="gwray")
    ray.init(
        num_cpus=num_cpus,
        include_dashboard=False,
        _temp_dir=temp,
        logging_level="ERROR",
        log_to_driver=False,
    )
    try:
        yield Path(temp)
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        if not had_home_ray:
            shutil.rmtree(home_ray, ignore_errors=True)
