"""``CrawlControls``: pause, resume and stop a running crawl, from the status console.

The status endpoint (:mod:`irlscrapy.report.status`) calls these on ``POST /pause``,
``POST /resume`` and ``POST /stop``, each carrying ``IRL_STATUS_TOKEN``; without a token
set the controls are off (a page on any web site can make a browser POST to
127.0.0.1, so only a secret the page cannot know makes a control the operator's).

- *pause*: Scrapy's engine stops asking for requests (``ExecutionEngine.pause``, as
  Scrapy's telnet console does); fetches in flight end, nothing new starts. irlscrapy's
  timers read a paused crawl as such: the no-idle watch skips samples while the engine
  does not ask for work (``EngineWaker.engine_asks``), and the give-up timer of a
  finite crawl (``IRL_CRAWL_GIVE_UP_AFTER``) starts again at the resume, so time spent
  paused is never taken for hosts that do not answer.
- *resume*: the engine asks again, at once.
- *stop*: the graceful close Ctrl-C starts (``finish_reason`` ``shutdown``); a paused
  crawl is resumed first so the close can run.

Each is logged (INFO, with the client's address) and counted: ``irl/console/paused``,
``irl/console/resumed``, ``irl/console/stopped``; ``irl/console/paused_seconds`` adds up
the time spent paused (a crawl closed while paused counts up to its close).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from scrapy.crawler import Crawler

from irlscrapy.runtime.closing import close_spider
from irlscrapy.runtime.internals import crawl_engine, wake_engine
from irlscrapy.scheduler.irl import IRLScheduler

logger = logging.getLogger(__name__)

ACTIONS = ("pause", "resume", "stop")


class CrawlControls:
    def __init__(self, crawler: Crawler, clock: Any = time.monotonic) -> None:
        self.crawler = crawler
        self.clock = clock
        self.paused_at: float | None = None  # the clock's time of the pause; None: running
        self.stopping = False

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    def paused_seconds(self) -> float:
        """Seconds paused so far, the current pause included."""
        stats = self.crawler.stats
        total = float(stats.get_value("irl/console/paused_seconds", 0) if stats else 0)
        return total + (self.clock() - self.paused_at if self.paused_at is not None else 0.0)

    def act(self, action: str, client: str) -> str:
        """Do ``action`` (one of ACTIONS); what was done, in words."""
        assert action in ACTIONS, action
        engine = crawl_engine(self.crawler)
        if engine is None or engine.spider is None or self.stopping:
            return "the crawl is not running"
        if action == "pause":
            return self._pause(engine, client)
        if action == "resume":
            return self._resume(engine, client)
        return self._stop(engine, client)

    def _pause(self, engine: Any, client: str) -> str:
        if self.paused:
            return "already paused"
        engine.pause()
        self.paused_at = self.clock()
        self._count("irl/console/paused")
        logger.info(
            "console: crawl paused by %s; fetches in flight end, no new one starts until resumed",
            client,
        )
        return "paused"

    def _resume(self, engine: Any, client: str) -> str:
        if not self.paused:
            return "not paused"
        seconds = self._unpause(engine)
        self._count("irl/console/resumed")
        logger.info("console: crawl resumed by %s after %.1f s paused", client, seconds)
        return "resumed"

    def _stop(self, engine: Any, client: str) -> str:
        if self.paused:
            self._unpause(engine)
        self.stopping = True
        self._count("irl/console/stopped")
        logger.info("console: crawl stopped by %s; closing gracefully, as Ctrl-C does", client)
        close_spider(self.crawler, "shutdown")
        return "stopping"

    def _unpause(self, engine: Any) -> float:
        seconds = self._end_pause()
        engine.unpause()
        scheduler = IRLScheduler.of(self.crawler)
        if scheduler is not None:
            scheduler.resumed()  # the give-up timer starts again; the engine asks at once
        else:  # another scheduler: ask at the engine's next turn
            wake_engine(self.crawler)
        return seconds

    def _end_pause(self) -> float:
        """End the pause in force, adding its seconds to ``irl/console/paused_seconds``;
        return them."""
        assert self.paused_at is not None
        seconds = self.clock() - self.paused_at
        self.paused_at = None
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("irl/console/paused_seconds", round(seconds, 3))
        return seconds

    def spider_closed(self) -> None:
        """The crawl closed: a pause still on counts up to now."""
        if self.paused_at is not None:
            self._end_pause()

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)
