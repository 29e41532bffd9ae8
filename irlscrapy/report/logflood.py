"""Keep per-URL fetch failures from flooding the log of a broad crawl.

A broad crawl meets thousands of dead hosts, resets and bad robots.txt files; Scrapy
logs each at ERROR with a traceback. :class:`FetchErrorLogLimit` lets the first
``IRL_LOG_FETCH_ERRORS`` lines of each kind through (all of them if it is negative),
then only counts them (stats ``irl/log/suppressed/<kind>``) and says how many it held
back when the spider closes. The lines it lets through are logged at WARNING, without
their traceback: a dead host is the web's failure, not the crawler's, and the stack of a
connection reset says nothing the message does not. Errors of the crawler itself
(exceptions in spider callbacks, in the scheduler, a full disk) are never touched and
stay ERROR.
"""

from __future__ import annotations

import logging
from collections import Counter

from scrapy import Spider, signals
from scrapy.crawler import Crawler

from irlscrapy import defaults

logger = logging.getLogger(__name__)

#: logger name -> (kind, message prefix that marks a fetch failure; "" = every record)
FETCH_ERROR_SOURCES = {
    "scrapy.downloadermiddlewares.retry": ("retry", "Gave up retrying"),
    "scrapy.downloadermiddlewares.robotstxt": ("robotstxt", ""),
    "scrapy.core.scraper": ("download", "Error downloading"),
    "scrapy.core.downloader.handlers.http11": ("size", ""),
}


class FetchErrorLogLimit(logging.Filter):
    def __init__(self, crawler: Crawler, limit: int) -> None:
        super().__init__()
        self.crawler = crawler
        self.limit = limit
        self.logged: Counter[str] = Counter()
        self.suppressed: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchErrorLogLimit:
        ext = cls(crawler, defaults.get(crawler.settings, "IRL_LOG_FETCH_ERRORS"))
        for name in FETCH_ERROR_SOURCES:
            logging.getLogger(name).addFilter(ext)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def filter(self, record: logging.LogRecord) -> bool:
        kind, prefix = FETCH_ERROR_SOURCES.get(record.name, ("", None))
        if prefix is None or not str(record.msg).startswith(prefix):
            return True
        if record.levelno > logging.WARNING:  # the web's failure, not the crawler's
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        if self.limit < 0:
            return True
        if self.logged[kind] < self.limit:
            self.logged[kind] += 1
            record.exc_info = record.exc_text = None  # a network failure's stack says nothing
            if self.logged[kind] == self.limit:
                record.msg = f"{record.msg} (further {kind} failures are only counted)"
            return True
        self.suppressed[kind] += 1
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(f"irl/log/suppressed/{kind}")
        return False

    def spider_closed(self, spider: Spider) -> None:
        for name in FETCH_ERROR_SOURCES:
            logging.getLogger(name).removeFilter(self)
        if self.suppressed:
            logger.info(
                "fetch failures counted but not logged: %s", dict(sorted(self.suppressed.items()))
            )
