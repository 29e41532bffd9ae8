"""The crawl-side extension of bench/status_cost.py: the reactor thread's CPU time
spent in the status endpoint and the progress line, and the thread's whole CPU time,
as stats."""

from __future__ import annotations

import functools
import time
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler

from irlscrapy.report import progress, status


class StatusCost:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.spent = 0.0
        self.calls = 0
        # class attributes, patched before the spider opens (the progress timer binds
        # log_progress then; the endpoint looks render up per request)
        for owner, name in (
            (status._StatusResource, "render"),
            (status.StatusServer, "_sample"),
            (progress.CrawlProgress, "log_progress"),
        ):
            setattr(owner, name, self._timed(getattr(owner, name)))
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatusCost:
        return cls(crawler)

    def _timed(self, method: Any) -> Any:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.spent += time.thread_time() - started
                self.calls += 1

        return timed

    def spider_closed(self, spider: Spider) -> None:
        assert self.stats is not None
        self.stats.set_value("bench/status_cpu_s", round(self.spent, 4))
        self.stats.set_value("bench/status_calls", self.calls)
        self.stats.set_value("bench/reactor_cpu_s", round(time.thread_time(), 4))
