"""Take docs/img/demo-report.png: the top of `groundwire demo`'s HTML report in Chromium.

    python -m tests.report.screenshot docs/img/demo-report.png

Runs `groundwire demo` (offline stand-in model, no judge) into a temporary folder and screenshots
its report with headless Chromium (Debian's package; tests/report/_browser.py installs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.report._browser import CHROMIUM_FLAGS, browser_paths

_SIZE = "--window-size=1100,1700"


def main(target: Path) -> None:
    """Run the demo and screenshot the top of its report into `target`."""
    chromium, _ = browser_paths()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GROUNDWIRE_"))}
    groundwire = Path(sys.executable).with_name("groundwire")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out"
        subprocess.run(
            [str(groundwire), "demo", "--out", str(out)],
            env=env,
            check=True,
            capture_output=True,
            timeout=180,
        )
        flags = [flag for flag in CHROMIUM_FLAGS if not flag.startswith("--window-size")]
        subprocess.run(
            [
                chromium,
                *flags,
                _SIZE,
                "--hide-scrollbars",
                f"--user-data-dir={Path(folder) / 'chromium'}",
                f"--screenshot={target.resolve()}",
                (out / "report.html").as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img/demo-report.png"))
