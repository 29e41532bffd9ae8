"""The no-idle watch: does the crawler ever sit idle while fetchable work waits?

The IRL scheduler promises (its class docstring, "No idle crawler while work exists")
that whenever nothing is in flight and no host is due, it flushes URLseen and admits
from BEAST. This extension checks the promise from outside, as a user would see it:
every ``IRL_IDLE_WATCH_INTERVAL`` seconds it samples the scheduler's status
(``IRLScheduler.idle_status``: a few counters, no walk while fetches are in flight), and a
sample is *idle with work* when no fetch is in flight and no URLseen merge runs while

- URLseen holds URLs, or
- BEAST holds URLs, re-splits none (its next queue may wait for the re-split: a wait on
  work in progress, as a URLseen merge is) and admission is not paused for a full host
  (a URL of a host in back-off or retired is never in BEAST: it is held or parked, see
  irlscrapy.scheduler.frontier.parking; while admission waits for a full host to take a
  URL, the records BEAST has left may all be that host's, waiting on its politeness
  delay; the scheduler resumes such a pause every second when idle) and RAM has room for
  more (when IRL_WORKBENCH_URLS admitted URLs all wait on their hosts' politeness or
  DNS, BEAST's wait for room is the bound the user set, not idleness), or
- a workbench host is due.

Samples while the engine no longer asks for requests (closing the spider, paused) or
the scheduler has stopped (a full disk) do not count: the work left then waits for a
rerun. One second (``WINDOW`` seconds) of consecutive idle-with-work samples is one window,
counted in ``irl/scheduler/idle_with_work_windows`` and logged with the figures of its
last sample; the count should stay 0, and the end-to-end tests assert it does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from irlscrapy import defaults
from irlscrapy.scheduler.irl import IRLScheduler

logger = logging.getLogger(__name__)

#: Seconds of idle-with-work samples in a row that make one window.
WINDOW = 1.0
STAT = "irl/scheduler/idle_with_work_windows"


def idle_with_work(status: dict[str, int]) -> bool:
    """Is the crawler idle while fetchable work waits (see the module docstring)?"""
    if not status or status["fetches_in_flight"] or status["urlseen_merging"]:
        return False
    beast = (
        status["beast_urls"]
        and not status["beast_resplitting"]
        and not status["admission_paused"]
        and not status["workbench_full"]
    )
    return bool(status["urlseen_pending"] or beast or status["ips_due"])


class IdleWatch:
    def __init__(
        self,
        stats: Any,
        interval: float,
        status: Callable[[], dict[str, int] | None],
        clock: Any = None,
        watched: Callable[[], bool] = lambda: True,
    ) -> None:
        self.stats = stats
        self.interval = interval
        self.status = status  # the scheduler's idle_status(); None: not asking for work
        self.watched = watched  # is the IRL scheduler the crawl's?
        self.clock = clock  # the reactor, or a test's task.Clock
        self.samples_per_window = max(1, round(WINDOW / interval))
        self._run = 0  # idle-with-work samples in a row
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IdleWatch:
        interval = defaults.get(crawler.settings, "IRL_IDLE_WATCH_INTERVAL")
        if interval <= 0:
            raise NotConfigured("IRL_IDLE_WATCH_INTERVAL is 0")

        def status() -> dict[str, int] | None:
            scheduler = IRLScheduler.of(crawler)
            return scheduler.idle_status() if scheduler is not None else None

        watch = cls(
            crawler.stats, interval, status, watched=lambda: IRLScheduler.of(crawler) is not None
        )
        crawler.signals.connect(watch.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(watch.spider_closed, signal=signals.spider_closed)
        return watch

    def spider_opened(self, spider: Spider | None = None) -> None:
        if not self.watched():
            return  # not the IRL scheduler: nothing to watch
        self.stats.set_value(STAT, 0)
        self._loop = task.LoopingCall(self.sample)
        if self.clock is not None:
            self._loop.clock = self.clock
        self._loop.start(self.interval, now=False)

    def sample(self) -> None:
        status = self.status()
        if not idle_with_work(status or {}):
            self._run = 0
            return
        self._run += 1
        if self._run >= self.samples_per_window:
            self._run = 0
            self.stats.inc_value(STAT)
            logger.warning("idle for %.1f s while work waits: %s", WINDOW, status)

    def spider_closed(self, spider: Spider | None = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
