"""Live progress for a crawl: a periodic line, and a summary when the spider closes."""

from __future__ import annotations

import logging
import resource
import time

import psutil
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from irlscrapy import defaults

logger = logging.getLogger(__name__)


class CrawlProgress:
    """Logs pages and links per second, what is scheduled, and RSS every
    ``IRL_PROGRESS_INTERVAL`` seconds; logs a summary of the whole crawl at the end."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.started = 0.0
        self._last = (0.0, 0, 0)  # time, pages, links at the previous line
        self._loop: task.LoopingCall | None = None
        self._process = psutil.Process()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlProgress:
        interval = defaults.get(crawler.settings, "IRL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured("IRL_PROGRESS_INTERVAL is 0")
        ext = cls(crawler, interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def _figures(self) -> tuple[int, int]:
        stats = self.crawler.stats
        assert stats is not None
        return (
            stats.get_value("response_received_count", 0),
            stats.get_value("irl/spider/links", 0),
        )

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        self._last = (self.started, 0, 0)
        self._loop = task.LoopingCall(self.log_progress)
        self._loop.start(self.interval, now=False)

    def log_progress(self) -> None:
        now = time.monotonic()
        pages, links = self._figures()
        then, pages0, links0 = self._last
        dt = max(now - then, 1e-9)
        self._last = (now, pages, links)
        engine = self.crawler.engine
        scheduler = engine.scheduler if engine else None
        scheduled = len(scheduler) if scheduler is not None and hasattr(scheduler, "__len__") else 0
        logger.info(
            "progress: %d pages (%.1f/s), %d links (%.0f/s), %d scheduled, %d in flight, "
            "RSS %.0f MB",
            pages,
            (pages - pages0) / dt,
            links,
            (links - links0) / dt,
            scheduled,
            len(engine.downloader.active) if engine else 0,
            self._process.memory_info().rss / 2**20,
        )

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        elapsed = max(time.monotonic() - self.started, 1e-9)
        stats = self.crawler.stats
        assert stats is not None
        pages, links = self._figures()
        statuses = {
            k.rsplit("/", 1)[1]: v
            for k, v in stats.get_stats().items()
            if k.startswith("downloader/response_status_count/")
        }
        logger.info(
            "summary (%s): %d pages in %.1f s (%.1f pages/s); %d links extracted; "
            "%d duplicate requests filtered; %d robots.txt-forbidden; status counts %s; "
            "peak RSS %.0f MB",
            reason,
            pages,
            elapsed,
            pages / elapsed,
            links,
            stats.get_value("dupefilter/filtered", 0),
            # Scrapy's RobotsTxtMiddleware counts Requests; the IRL frontier counts URLs
            # (robotstxt/forbidden too, for Requests it refuses): irl/robots/disallowed
            max(
                stats.get_value("robotstxt/forbidden", 0),
                stats.get_value("irl/robots/disallowed", 0),
            ),
            dict(sorted(statuses.items())),
            _peak_rss_mb(),
        )


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
