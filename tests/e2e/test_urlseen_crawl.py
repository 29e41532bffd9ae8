"""Stock Scrapy + DRUMDupeFilter crawl the tiny web: same set as ground truth, resumable."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import request_url
from irlscrapy.oracle.groundtruth import CrawlPolicy, reachable, split_url

from .conftest import SEED, STOCK, crawl_tiny, downloads, read_log, side_by_side

RETRYABLE = {0, 500, 502, 503, 504, 522, 524, 408, 429}  # Scrapy's RETRY_HTTP_CODES, and 0
DUPEFILTER = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"
SMALL_MEMORY = 128 * 400  # a merge in a worker thread every 400 new requests


def crawl(log: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    result = crawl_tiny(
        log,
        *STOCK,
        f"DUPEFILTER_CLASS={DUPEFILTER}",
        f"IRL_URLSEEN_MEMORY={SMALL_MEMORY}",
        *settings,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@side_by_side(seconds=27)
def drum_crawl(work: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The crawl (side by side with the others: conftest.side_by_side)."""
    log = work / "requests.jsonl"
    return crawl(log), log


def test_drum_dupefilter_crawl_equals_ground_truth(
    drum_crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, log = drum_crawl
    assert "'irl/urlseen/merges': " in result.stderr  # merges happened during the crawl
    truth = reachable(InVitroWeb(TINY, SEED), CrawlPolicy(robots="scrapy"))
    assert set(downloads(log)) == truth


@side_by_side(seconds=30)
def stopped_and_resumed(work: Path) -> tuple[Path, Path]:
    """The two runs on one JOBDIR (side by side with the other crawls:
    conftest.side_by_side): the server's logs of each."""
    job = work / "job"
    first, second = work / "first.jsonl", work / "second.jsonl"
    crawl(first, f"JOBDIR={job}", "CLOSESPIDER_PAGECOUNT=600")
    crawl(second, f"JOBDIR={job}")
    return first, second


def test_jobdir_stop_and_resume_completes_the_crawl_without_refetching(
    stopped_and_resumed: tuple[Path, Path],
) -> None:
    """Nothing answered is fetched again; at most the requests in flight at the stop are lost.

    Scrapy's stock scheduler does not keep requests it had already handed to the engine
    when a graceful stop comes; any persistent dupefilter (RFPDupeFilter's requests.seen
    too) has marked them seen, so the resumed crawl never fetches them. That is at most
    CONCURRENT_REQUESTS URLs (64 in settings/broad.py), and what only they linked to.
    The IRL scheduler removes this loss.

    Scrapy's RobotsTxtMiddleware keys robots.txt by netloc and fetches it on the scheme of
    the first request it sees for that netloc; a failed fetch allows all. A fresh crawl
    meets every tiny host on http first (refused https links are same-host links), but a
    resumed one starts from its queue, where a host's first URL may be one of those
    https links: that robots.txt fetch is refused and the host's disallowed pages are
    fetched. Those are counted apart (the server's log shows the refused CONNECTs
    before any of the host's requests).
    """
    first, second = stopped_and_resumed
    before, after = set(downloads(first)), set(downloads(second))
    truth = reachable(InVitroWeb(TINY, SEED), CrawlPolicy(robots="scrapy"))
    assert len(before) >= 500 and after
    # A URL may come back only as the retry of a failure the stop interrupted (Scrapy
    # queues retries with dont_filter=True, and JOBDIR keeps them): every URL requested
    # in both runs had nothing but retryable outcomes in the first.
    first_outcomes: dict[str, set[int]] = {}
    for r in read_log(first):
        if (url := request_url(r)) is not None:
            first_outcomes.setdefault(url, set()).add(r["status"])
    again = {u for u in before & after if not first_outcomes[u] <= RETRYABLE}
    assert not again, sorted(again)[:10]
    met_on_https = _hosts_first_met_refused(read_log(second))
    extra = (before | after) - truth
    unexplained = {u for u in extra if split_url(u)[0] not in met_on_https}
    assert not unexplained, sorted(unexplained)[:10]
    lost = truth - before - after
    print(
        f"stop at {len(before)} pages, resumed for {len(after)}; lost in flight: {len(lost)}; "
        f"{len(extra)} robots-disallowed URLs fetched on {len(met_on_https)} hosts whose "
        "robots.txt Scrapy asked for over a refused https"
    )
    assert len(lost) <= 64, sorted(lost)[:10]


def _hosts_first_met_refused(records: list[dict[str, Any]]) -> set[str]:
    """Hosts whose first request in the log is a refused https connection."""
    first: dict[str, str] = {}
    for r in sorted(records, key=lambda r: r["t_start"]):
        first.setdefault(r["host"], r["kind"])
    return {host for host, kind in first.items() if kind == "refused"}
