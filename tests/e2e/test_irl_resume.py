"""The IRL scheduler stops and resumes: SIGINT, kill -9, a full disk.

Each test crawls the tiny web in two runs on one JOBDIR and compares what the server
saw with the ground truth: together the runs fetch exactly the RFC 9309 reachable set
(nothing discovered is lost, unlike Scrapy's stock scheduler, which drops what was in
flight at a graceful stop), and a URL answered in the first run comes back in the
second only if it was in flight or admitted to the workbench at the stop (bounded here
by a small workbench, IRL_WORKBENCH_URLS) or had only retryable outcomes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import request_url
from irlscrapy.oracle.groundtruth import reachable

from .conftest import (
    IRL_POLICY,
    QUICK_IRL,
    ROOT,
    SEED,
    crawl_tiny,
    downloads,
    read_log,
    tiny_crawl_args,
)

RETRYABLE = {0, 500, 502, 503, 504, 522, 524, 408, 429}
WORKBENCH_URLS = 100
IN_FLIGHT = 64  # CONCURRENT_REQUESTS in settings/broad.py
SETTINGS = (*QUICK_IRL, f"IRL_WORKBENCH_URLS={WORKBENCH_URLS}")


def start_crawl(log: Path, job: Path) -> subprocess.Popen[bytes]:
    args = tiny_crawl_args(log, f"JOBDIR={job}", *SETTINGS)
    with open(log.with_name(log.stem + "-crawler.err"), "wb") as err:
        return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)


def stderr_of(log: Path) -> str:
    return log.with_name(log.stem + "-crawler.err").read_text(errors="replace")


def wait_for_pages(proc: subprocess.Popen[bytes], log: Path, pages: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, stderr_of(log)[-3000:]
        if log.exists() and len(downloads(log)) >= pages:
            return
        time.sleep(0.2)
    raise AssertionError(f"the crawl did not reach {pages} pages")


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


def test_sigint_then_rerun_resumes_without_losing_anything(tmp_path: Path) -> None:
    job, first, second = tmp_path / "job", tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    proc = start_crawl(first, job)
    wait_for_pages(proc, first, 800)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 0, stderr_of(first)[-3000:]
    assert "summary (shutdown)" in stderr_of(first)
    result = crawl_tiny(second, f"JOBDIR={job}", *SETTINGS)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resuming from" in result.stderr
    stopped_at, again = check_two_runs(first, second)
    print(f"SIGINT at {stopped_at} pages; {again} answered URLs fetched again")


def test_kill_9_then_rerun_loses_no_discovered_url(tmp_path: Path) -> None:
    job, first, second = tmp_path / "job", tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    proc = start_crawl(first, job)
    wait_for_pages(proc, first, 1200)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    # the crawl's in-vitro server outlives it: stop it (it flushes its log on SIGTERM)
    found = re.search(r"in-vitro web \(tiny, seed \d+, pid (\d+)\)", stderr_of(first))
    assert found, stderr_of(first)[-2000:]
    os.kill(int(found.group(1)), signal.SIGTERM)
    time.sleep(1.0)
    result = crawl_tiny(second, f"JOBDIR={job}", *SETTINGS)
    assert result.returncode == 0, result.stderr[-3000:]
    stopped_at, again = check_two_runs(first, second)
    print(f"kill -9 at {stopped_at} pages; {again} answered URLs fetched again")


def test_a_full_disk_stops_the_crawl_with_a_clear_message_and_resumes(tmp_path: Path) -> None:
    """JOBDIR on a 3 MiB tmpfs: the crawl fills it, stops cleanly and says what to do;
    with room made (the tmpfs grown), the same JOBDIR resumes to the ground truth."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], check=True)
    try:
        job, first, second = disk / "job", tmp_path / "first.jsonl", tmp_path / "second.jsonl"
        small = (*SETTINGS, "IRL_DRUM_MEMORY=1048576")
        stopped = crawl_tiny(first, f"JOBDIR={job}", *small)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        assert "Spider closed (irlscrapy_disk_full)" in stopped.stderr, stopped.stderr[-3000:]
        assert f"the disk holding {job} is full" in stopped.stderr
        assert "rerun" in stopped.stderr or "run the crawl again" in stopped.stderr
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        resumed = crawl_tiny(second, f"JOBDIR={job}", *small)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "summary (finished)" in resumed.stderr
        assert "Error caught on signal handler" not in resumed.stderr  # spider.state whole
        stopped_at, again = check_two_runs(first, second)
        print(f"disk full at {stopped_at} pages; {again} answered URLs fetched again")
    finally:
        subprocess.run(["umount", str(disk)], check=True)
