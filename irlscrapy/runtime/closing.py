"""Closing the spider: on a failure the crawl cannot go past (:func:`close_spider`), and
without waiting on hung downloads (:class:`CloseCutoff`).

:func:`close_spider` closes the spider with the reason Scrapy logs and puts in the stats
(``finish_reason``): a full disk, an error in the scheduler, WARC files that cannot be
written.

:class:`CloseCutoff`, an extension the add-on installs: Scrapy's engine, once it starts
closing the spider (a ``CLOSESPIDER_*`` cap, Ctrl-C, :func:`close_spider`), waits for
every request in flight, a hung one up to ``DOWNLOAD_TIMEOUT``, while the crawl fetches
nothing more. When the close begins CloseCutoff sends :data:`spider_closing` (the
progress line stops there, and the crawl's rate is taken up to it), and
``IRL_CLOSE_GRACE`` seconds later ends the downloads still in flight
(:meth:`irlscrapy.runtime.internals.PoliteHTTPDownloadHandler.cut_downloads`; stat
``irl/close/downloads_cut``). A cut download fails with
:class:`irlscrapy.runtime.internals.DownloadCut`, an IgnoreRequest, so no error is logged and
the request's errback gets it. Its URL is not done: it stays admitted in the scheduler's
journal, and a crawl resumed with the same JOBDIR fetches it.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro

from irlscrapy import defaults
from irlscrapy.runtime.internals import (
    PoliteHTTPDownloadHandler,
    crawl_engine,
    download_handlers,
    on_engine_closing,
)

logger = logging.getLogger(__name__)

#: Signal sent (no arguments) when the engine starts closing the spider, right after
#: Scrapy logs "Closing spider"; Scrapy's own spider_closed comes at the end of the close.
spider_closing = object()


def close_spider(crawler: Crawler, reason: str) -> None:
    """Ask the engine to close the running spider with ``reason``; nothing if no spider
    is running (none yet, or it is already closing)."""
    engine = crawl_engine(crawler)
    if engine is not None and engine.spider is not None:
        deferred_from_coro(engine.close_spider_async(reason=reason))


class CloseCutoff:
    def __init__(self, crawler: Crawler, grace: float, clock: Any, resumable: bool) -> None:
        """``clock``: an IReactorTime (the reactor, or a task.Clock in tests);
        ``resumable``: the crawl's state outlives it (JOBDIR or IRL_STATE_DIR)."""
        self.crawler = crawler
        self.grace = grace
        self.clock = clock
        self.resumable = resumable
        self._cut: Any = None  # the IDelayedCall of the cut

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CloseCutoff:
        settings = crawler.settings
        grace = defaults.get(settings, "IRL_CLOSE_GRACE")  # (>= 0: irlscrapy.startcheck)
        resumable = bool(settings.get("JOBDIR") or defaults.get(settings, "IRL_STATE_DIR"))
        from twisted.internet import reactor

        cutoff = cls(crawler, grace, reactor, resumable)
        crawler.signals.connect(cutoff.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(cutoff.spider_closed, signal=signals.spider_closed)
        return cutoff

    def spider_opened(self, spider: Spider) -> None:
        on_engine_closing(self.crawler, self.closing)

    def closing(self) -> None:
        """The engine starts closing the spider."""
        self.crawler.signals.send_catch_log(signal=spider_closing)
        self._cut = self.clock.callLater(self.grace, self.cut)

    def cut(self) -> None:
        """End the downloads still in flight."""
        self._cut = None
        cut = sum(
            handler.cut_downloads()
            for handler in download_handlers(self.crawler)
            if isinstance(handler, PoliteHTTPDownloadHandler)
        )
        if cut:
            logger.info(
                "closing: cut %d download(s) still in flight IRL_CLOSE_GRACE (%.1f s) after "
                "the close began%s",
                cut,
                self.grace,
                "; a crawl resumed with the same JOBDIR fetches their URLs"
                if self.resumable
                else "",
            )
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("irl/close/downloads_cut", cut)

    def spider_closed(self, spider: Spider) -> None:
        if self._cut is not None and self._cut.active():
            self._cut.cancel()
        self._cut = None
