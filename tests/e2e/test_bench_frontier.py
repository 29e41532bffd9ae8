"""bench/frontier.py, the issue-4/22 memory benchmark, still runs against the scheduler
as it is (it reaches into the scheduler's parts, which move as the code is reshaped)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_smoke_run_reaches_its_target_and_reports(tmp_path: Path) -> None:
    state, results = tmp_path / "state", tmp_path / "frontier.json"
    run = subprocess.run(
        [
            sys.executable,
            "bench/frontier.py",
            "--urls",
            "20000",
            "--state",
            str(state),
            "--results",
            str(results),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr, (run.stdout + run.stderr)[-3000:]
    assert "unique URLs in" in run.stdout
    assert "workbench_urls" in run.stdout  # the frontier's sizes, read from its parts
    recorded = json.loads(results.read_text())
    assert recorded["complete"] and recorded["final"]["unique_urls"] >= 20000
    assert not state.exists()  # deleted once the target is reached
