"""A state directory written by irlscrapy 0.1 resumes under 0.2's layout.

``data/state-0.1.tgz`` holds the JOBDIR of a crawl of the tiny web by irlscrapy 0.1
(commit aa62b65, the last before the storage engine, the run-time helpers and the
state directory moved to packages of their own), stopped by CLOSESPIDER_PAGECOUNT=120,
and the in-vitro server's log of that run (``first.jsonl``): the command line of
:func:`tiny_crawl_args` with ``QUICK_IRL``, ``JOBDIR=job`` and
``CLOSESPIDER_PAGECOUNT=120``, run in a checkout of that commit.

The disk formats did not change with the move, and a state directory names no module
path: the resumed crawl opens every file as before and, together with the first run,
fetches exactly the RFC 9309 reachable set, as an uninterrupted crawl does.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import reachable

from .conftest import IRL_POLICY, QUICK_IRL, ROOT, SEED, crawl_tiny, downloads, side_by_side

STATE = Path(__file__).parent / "data" / "state-0.1.tgz"


@side_by_side(seconds=40)
def old_state_resumed(work: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """The 0.1 state unpacked, checked by ``irlscrapy check`` and resumed (the resumed
    run, and both runs' logs)."""
    with tarfile.open(STATE) as archive:
        archive.extractall(work, filter="data")
    job = work / "job"
    check = subprocess.run(
        [sys.executable, "-m", "irlscrapy", "check", str(job)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    second = work / "second.jsonl"
    return crawl_tiny(second, f"JOBDIR={job}", *QUICK_IRL), work / "first.jsonl", second


def test_a_state_directory_of_0_1_resumes_and_finishes_the_crawl(
    old_state_resumed: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> None:
    resumed, first, second = old_state_resumed
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from" in resumed.stderr, resumed.stderr[-3000:]
    assert "summary (finished)" in resumed.stderr, resumed.stderr[-3000:]
    before, after = set(downloads(first)), set(downloads(second))
    assert 50 <= len(before) < len(before | after)  # (stopped midway, finished now)
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    assert before | after == truth, {
        "missing": sorted(truth - before - after)[:10],
        "extra": sorted((before | after) - truth)[:10],
    }
