"""What a crawl's open mends after a kill -9 reaches the crawl's stats
(irlscrapy.storage.recovery): the IRL scheduler's open counts each torn record file, and each
store whose first open was cut short, in ``irl/recovered/<kind>/<store>`` and logs one
line per stat; URLseen under Scrapy's own scheduler does the same for its journal."""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.core.scheduler import Scheduler
from scrapy.utils.test import get_crawler

from irlscrapy.scheduler.irl import IRLScheduler

#: a record's head that claims 100 bytes, and 3 of them: what a kill -9 mid-append leaves
TORN = struct.pack(">II", 100, 0) + b"abc"
IRL = {
    "SCHEDULER": "irlscrapy.scheduler.irl.IRLScheduler",
    "DUPEFILTER_CLASS": "irlscrapy.dupefilters.urlseen.DRUMDupeFilter",
}


def _tear(path: Path) -> None:
    with path.open("ab") as f:
        f.write(TORN)


def _run_irl(job: Path) -> Any:
    """Open and close the IRL scheduler on ``job``, as a crawl does; its crawler."""
    crawler = get_crawler(Spider, {**IRL, "JOBDIR": str(job)})
    spider = Spider.from_crawler(crawler, "s")
    crawler.spider = spider
    scheduler = IRLScheduler.from_crawler(crawler)
    scheduler.open(spider)
    closing = scheduler.close("finished")
    assert closing is not None and closing.called
    return crawler


def _recovery_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "irlscrapy.storage.recovery"]


def test_the_irl_schedulers_open_counts_what_it_mended_once_per_kind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    job = tmp_path / "job"
    first = _run_irl(job)
    assert not any(k.startswith("irl/recovered/") for k in first.stats.get_stats())
    # what a kill -9 in the middle of appends, and of BEAST's first open, leaves
    _tear(job / "urlseen" / "journal-0.rec")
    _tear(job / "admitted-0.rec")
    _tear(job / "star" / "edges" / "journal-0.rec")
    _tear(job / "star" / "indegree" / "journal-0.rec")
    (job / "beast" / "state.json").unlink()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        crawler = _run_irl(job)
    recovered = {
        k: v for k, v in crawler.stats.get_stats().items() if k.startswith("irl/recovered/")
    }
    assert recovered == {
        "irl/recovered/torn_tail/urlseen": 1,
        "irl/recovered/torn_tail/admitted": 1,
        "irl/recovered/torn_tail/star": 2,
        "irl/recovered/first_open/beast": 1,
    }
    lines = _recovery_lines(caplog)
    assert len(lines) == 4, lines
    assert sum("irl/recovered/torn_tail/star = 2" in line for line in lines) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO):
        again = _run_irl(job)  # mended: nothing to recover
    assert not any(k.startswith("irl/recovered/") for k in again.stats.get_stats())
    assert _recovery_lines(caplog) == []


def test_urlseen_under_scrapys_scheduler_counts_its_torn_journal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {
        "DUPEFILTER_CLASS": IRL["DUPEFILTER_CLASS"],
        "JOBDIR": str(tmp_path),
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
    }

    def run() -> Any:
        crawler = get_crawler(Spider, settings)
        crawler.spider = Spider.from_crawler(crawler, "s")
        scheduler = Scheduler.from_crawler(crawler)
        scheduler.open(crawler.spider)
        scheduler.close("finished")
        return crawler

    run()
    _tear(tmp_path / "urlseen" / "journal-0.rec")
    with caplog.at_level(logging.INFO):
        crawler = run()
    assert crawler.stats.get_value("irl/recovered/torn_tail/urlseen") == 1
    [line] = _recovery_lines(caplog)
    assert "journal-0.rec (11 bytes)" in line
