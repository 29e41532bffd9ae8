"""The robots state stays bounded: 1 million distinct hosts' robots.txt answers.

Runs ``bench/robots.py`` (a synthetic stream of answers through the real robots cache
on LevelDB, in a fresh process so RSS is its own) and holds it to the issue's bar.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOSTS = 1_000_000
BAR_BYTES = 64 * 2**20


def test_robots_state_of_a_million_hosts_stays_under_64_mb() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "robots.py"), "--hosts", str(HOSTS)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    figures = {
        r["figure"]: r for r in (json.loads(line) for line in out.splitlines() if line[:1] == "{")
    }
    state = figures["robots_state_rss"]
    print(
        f"robots state at {HOSTS:,} hosts: {state['value'] / 2**20:.1f} MB RSS, "
        f"{state['records_in_ram']} records and {state['parsed_in_ram']} parsed rules in RAM, "
        f"{state['disk_bytes'] / 2**20:.1f} MB on disk"
    )
    assert state["value"] < BAR_BYTES
    assert state["records_in_ram"] <= 4096 and state["parsed_in_ram"] <= 1024
    assert state["disk_bytes"] > 10 * 2**20  # the records went to disk, not RAM
