"""Helpers shared by the benchmarks in bench/ (not collected by pytest: no test_ names).

Every benchmark prints one JSON object per figure on its own line::

    {"bench": "server", "figure": "pages_per_s", "value": 2512.3, "unit": "pages/s", ...}

Headline figures are ratios against a baseline measured in the same run; absolute
numbers are printed too, but a shared 2-core machine makes them noisy.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
RESULTS = BENCH / "results"


def emit(bench: str, figure: str, value: Any, unit: str, **extra: Any) -> None:
    """Print one machine-readable figure."""
    record = {"bench": bench, "figure": figure, "value": value, "unit": unit, **extra}
    print(json.dumps(record, separators=(", ", ": ")), flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def page_urls(profile: str, seed: int, count: int, policy: str = "scrapy") -> list[str]:
    """The first ``count`` HTML page URLs of a breadth-first crawl, from the project's CLI
    (``irlscrapy invitro urls``), so the benchmarks use the list a reader can reproduce."""
    out = subprocess.run(
        [sys.executable, "-m", "irlscrapy", "invitro", "urls", "--profile", profile,
         "--seed", str(seed), "--count", str(count), "--policy", policy],
        check=True, capture_output=True, text=True, cwd=REPO)
    urls = out.stdout.split()
    if len(urls) != count:
        raise RuntimeError(f"irlscrapy invitro urls printed {len(urls)} URLs, not {count}")
    return urls


def memory() -> dict[str, int]:
    """RSS, its anonymous, file-backed and shared parts, and the high-water mark, in
    bytes (from /proc/self/status)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[name] = int(value.split()[0]) * 1024
    return {
        "rss": out["VmRSS"],
        "rss_anon": out["RssAnon"],
        "rss_file": out["RssFile"],
        "rss_shmem": out.get("RssShmem", 0),
        "hwm": out["VmHWM"],
    }
