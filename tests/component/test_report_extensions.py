"""The log-flood limit and the progress extension."""

from __future__ import annotations

import logging

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from irlscrapy.report.logflood import FetchErrorLogLimit
from irlscrapy.report.progress import CrawlProgress


def test_fetch_failures_are_logged_up_to_the_limit_then_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(Spider, {"IRL_LOG_FETCH_ERRORS": 2})
    ext = FetchErrorLogLimit.from_crawler(crawler)
    retry = logging.getLogger("scrapy.downloadermiddlewares.retry")
    scraper = logging.getLogger("scrapy.core.scraper")
    try:
        with caplog.at_level(logging.INFO):
            for i in range(5):
                try:
                    raise ConnectionError("reset")
                except ConnectionError:
                    retry.error(
                        "Gave up retrying <GET http://h%d/> (failed 3 times)", i, exc_info=True
                    )
            scraper.error("Spider error processing <GET http://h/>")  # never held back
            ext.spider_closed(Spider("s"))
    finally:
        for name in ("scrapy.downloadermiddlewares.retry", "scrapy.core.scraper"):
            logging.getLogger(name).removeFilter(ext)
    gave_up = [r for r in caplog.records if r.getMessage().startswith("Gave up")]
    assert [r.getMessage().split()[3] for r in gave_up] == ["<GET", "<GET"]
    assert all(r.exc_info is None for r in gave_up)
    assert all(r.levelname == "WARNING" for r in gave_up)  # the web's failure
    assert gave_up[-1].getMessage().endswith("(further retry failures are only counted)")
    (spider_error,) = [r for r in caplog.records if r.getMessage().startswith("Spider error")]
    assert spider_error.levelname == "ERROR"  # the crawler's own error stays ERROR
    assert crawler.stats.get_value("irl/log/suppressed/retry") == 3
    assert "{'retry': 3}" in caplog.text


def test_a_negative_limit_logs_every_fetch_failure_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ext = FetchErrorLogLimit.from_crawler(get_crawler(Spider, {"IRL_LOG_FETCH_ERRORS": -1}))
    scraper = logging.getLogger("scrapy.core.scraper")
    try:
        with caplog.at_level(logging.INFO):
            for i in range(8):
                scraper.error("Error downloading <GET http://h%d/>", i)
    finally:
        scraper.removeFilter(ext)
    levels = [r.levelname for r in caplog.records if r.getMessage().startswith("Error down")]
    assert levels == ["WARNING"] * 8


def test_progress_is_off_at_interval_zero() -> None:
    with pytest.raises(NotConfigured):
        CrawlProgress.from_crawler(get_crawler(Spider, {"IRL_PROGRESS_INTERVAL": 0}))
