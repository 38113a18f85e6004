"""Headless Chromium for the tests that look at pages as people do (the report, the docs site)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

MISSING = "chromium not found: `make system` installs Debian's package (apt-get install chromium)"


def chromium_binary() -> str | None:
    names = (os.environ.get("LATECOMER_CHROMIUM"), "chromium", "chromium-browser", "google-chrome")
    return next((shutil.which(name) for name in names if name and shutil.which(name)), None)


def require_chromium(test: str) -> str:
    """Chromium's path; without it the ``test`` skips, or fails under CI (which installs it)."""
    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs headless Chromium for {test}; {MISSING}")
        pytest.skip(MISSING)
    return binary


def run_chromium(binary: str, profile: Path, *args: str) -> str:
    """Chromium's standard output for ``args``, headless, with a profile of its own."""
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-3000:]}"
    return result.stdout
