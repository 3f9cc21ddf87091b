"""A real browser for the report tests: Debian's `chromium` driven by `chromium-driver` (Selenium).

Both packages are installed with apt-get when missing (as root, like Prometheus in
tests/observability/conftest.py); where that cannot be done the tests skip with the reason, and
with CI=true that skip fails (tests/conftest.py). The flags are the ones this machine needs
(tests/phoenix/screenshot.py): no sandbox as root, no GPU, no background network.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._debian import install_debian_packages

__all__ = ["CHROMIUM_FLAGS", "browser_paths", "start_browser"]

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--no-first-run",
    "--window-size=1200,900",
)
_PACKAGES = ("chromium", "chromium-driver")


def browser_paths() -> tuple[str, str]:
    """Paths of `chromium` and `chromedriver`, installing the Debian packages once if missing."""
    if shutil.which("chromium") is None or shutil.which("chromedriver") is None:
        reason = install_debian_packages(_PACKAGES, "chromium")
        if reason is not None:
            pytest.skip(reason)
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium is not None and driver is not None, "the packages installed no binaries"
    return chromium, driver


def start_browser(profile: Path) -> Any:
    """A headless Chromium under Selenium, with its profile in `profile`."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium (test)")
    from selenium.webdriver.chrome.service import Service

    chromium, driver = browser_paths()
    os.environ.setdefault("SE_AVOID_STATS", "true")  # Selenium Manager: no usage statistics
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))
