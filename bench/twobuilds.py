"""The frontier's cost of two builds, measured in one run: this checkout against a git
revision, their ``bench/crawl.py --no-stock`` rounds alternating.

    python bench/twobuilds.py REVISION [--rounds R]

A refactor must not make the crawl slower. ``bench/crawl.py --no-stock --rounds 1`` runs
the IRL crawl and its replay (the same downloads without the frontier) and reports
their pages/s ratio, ``irl / replay``; this script runs it R times for each build,
REVISION's (checked out in a temporary git worktree, removed at the end) and this
checkout's, one after the other, so that both builds see the same machine over the same
minutes. Each ``scrapy crawl`` runs with its build's directory as its working
directory, so it imports that build's irlscrapy.

It prints one line per round and build, then the medians and their ratio, new / old
(issue 38's bar: within 5%), for two figures of each round: the pages/s ratio
``irl / replay`` (the bars' figure) and the CPU-per-page ratio ``irl_cpu / replay_cpu``
(all threads and the kernel: the crawler process's CPU over the pages it fetched; lower
is cheaper, so a new / old below 1 is a gain). The second is the steadier on a shared
machine (rounds of one build 1.92-1.97 where the first ranged 0.53-0.56, 2026-11-29),
so a change of a few percent shows in it first.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import emit, median

ROOT = Path(__file__).resolve().parents[1]
BENCH_NAME = "twobuilds"
#: bench/crawl.py's figures, irl against replay, by the name twobuilds gives each
FIGURES = {
    "irl_to_replay": "pages_per_s_to_floor_ratio",
    "irl_to_replay_cpu_per_page": "cpu_per_page_to_floor_ratio",
}


def one_round(build: Path) -> dict[str, float]:
    """One ``bench/crawl.py --no-stock --rounds 1`` of ``build``: its FIGURES."""
    out = subprocess.run(
        [sys.executable, "bench/crawl.py", "--no-stock", "--rounds", "1"],
        cwd=build, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found = {}
    for line in out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            for name, figure in FIGURES.items():
                if record.get("figure") == figure and record.get("variant") == "irl":
                    found[name] = float(record["value"])
    if len(found) < len(FIGURES):
        missing = sorted(set(FIGURES) - set(found))
        raise SystemExit(f"{build}: bench/crawl.py printed no {missing} of irl:\n{out[-2000:]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the git revision to compare this checkout with")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each build (3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="twobuilds-") as scratch:
        old = Path(scratch) / "old"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old), args.revision],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            ratios: dict[tuple[str, str], list[float]] = {}
            for round_ in range(1, args.rounds + 1):
                for build, path in (("old", old), ("new", ROOT)):
                    for name, ratio in one_round(path).items():
                        ratios.setdefault((name, build), []).append(ratio)
                        emit(BENCH_NAME, name, ratio, "ratio", build=build, round=round_)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT)
    for name in FIGURES:
        old_median, new_median = median(ratios[name, "old"]), median(ratios[name, "new"])
        emit(BENCH_NAME, f"{name}_median", old_median, "ratio", build="old")
        emit(BENCH_NAME, f"{name}_median", new_median, "ratio", build="new")
        emit(BENCH_NAME, f"{name}_new_to_old", round(new_median / old_median, 3), "ratio",
             revision=args.revision)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
