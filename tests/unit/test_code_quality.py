"""The code passes its own linters: ruff (style, bugs) and mypy (strict on the package)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "irlscrapy", "tests", "harness", "settings", "setup.py", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied() -> None:
    result = run(
        "ruff", "format", "--check", "irlscrapy", "tests", "harness", "settings", "setup.py"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
