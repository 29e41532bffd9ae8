"""The IRL scheduler stops on a full disk and resumes (SIGINT and kill -9 at many
instants: tests/e2e/test_fault_campaign.py).

The test crawls the tiny web in two runs on one JOBDIR and compares what the server
saw with the ground truth: together the runs fetch exactly the RFC 9309 reachable set
(nothing discovered is lost), and a URL answered in the first run comes back in the
second only if it was in flight or admitted to the workbench at the stop (bounded here
by a small workbench, IRL_WORKBENCH_URLS) or had only retryable outcomes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import request_url
from irlscrapy.oracle.groundtruth import reachable

from .conftest import (
    IRL_POLICY,
    QUICK_IRL,
    SEED,
    crawl_tiny,
    downloads,
    read_log,
    side_by_side,
)

RETRYABLE = {0, 500, 502, 503, 504, 522, 524, 408, 429}
WORKBENCH_URLS = 100
IN_FLIGHT = 64  # CONCURRENT_REQUESTS in settings/broad.py
#: The tiny web's serve settings give up after 2 s on a crawl whose only work left waits
#: on a host in back-off (a flaky server's 503s): the URLs are parked for a rerun, which
#: this test's ground-truth check would count as lost. QUICK_IRL's back-off and
#: retirement end within 2 s, so waiting 30 s gives up on nothing.
SETTINGS = (*QUICK_IRL, f"IRL_WORKBENCH_URLS={WORKBENCH_URLS}", "IRL_CRAWL_GIVE_UP_AFTER=30")


def check_two_runs(first: Path, second: Path) -> tuple[int, int]:
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    before, after = set(downloads(first)), set(downloads(second))
    assert before | after == truth, {
        "missing": sorted(truth - before - after)[:10],
        "extra": sorted((before | after) - truth)[:10],
    }
    outcomes: dict[str, set[int]] = {}
    for r in read_log(first):
        if (url := request_url(r)) is not None:
            outcomes.setdefault(url, set()).add(r["status"])
    again = {u for u in before & after if not outcomes[u] <= RETRYABLE}
    assert len(again) <= WORKBENCH_URLS + IN_FLIGHT, len(again)
    return len(before), len(again)


@side_by_side(seconds=85)
def full_disk_runs(work: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """The test's two runs, side by side with the other crawls (conftest.side_by_side):
    JOBDIR on a 3 MiB tmpfs, which the first run must fill and stop on as the test says
    (checked here, before the tmpfs is grown); then the second run on the same JOBDIR.
    (The second run, and the server's logs of both runs.)"""
    disk = work / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], check=True)
    try:
        job, first, second = disk / "job", work / "first.jsonl", work / "second.jsonl"
        small = (*SETTINGS, "IRL_URLSEEN_MEMORY=1048576")
        stopped = crawl_tiny(first, f"JOBDIR={job}", *small)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        assert "Spider closed (irlscrapy_disk_full)" in stopped.stderr, stopped.stderr[-3000:]
        assert f"the disk holding {job} is full" in stopped.stderr
        assert "rerun" in stopped.stderr or "run the crawl again" in stopped.stderr
        assert "Traceback" not in stopped.stderr, stopped.stderr[-3000:]  # one clear stop
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        return crawl_tiny(second, f"JOBDIR={job}", *small), first, second
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_stops_the_crawl_with_a_clear_message_and_resumes(
    full_disk_runs: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> None:
    """JOBDIR on a 3 MiB tmpfs: the crawl fills it, stops cleanly and says what to do;
    with room made (the tmpfs grown), the same JOBDIR resumes to the ground truth."""
    resumed, first, second = full_disk_runs
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "summary (finished)" in resumed.stderr
    assert "Error caught on signal handler" not in resumed.stderr  # spider.state whole
    stopped_at, again = check_two_runs(first, second)
    print(f"disk full at {stopped_at} pages; {again} answered URLs fetched again")
