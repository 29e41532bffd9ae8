"""Scrapy extension of the crawl benchmark: one JSON line of crawler state per interval.

Enabled by ``bench/crawl.py`` with ``-s EXTENSIONS=...`` and ``PYTHONPATH`` holding
``bench/``; off (``NotConfigured``) unless ``BENCH_SAMPLER_FILE`` is set. Settings (bench
only, so not ``IRL_*``):

    BENCH_SAMPLER_FILE        path   where the lines are appended
    BENCH_SAMPLER_INTERVAL    float  seconds between lines (default SAMPLE_SECONDS)
    BENCH_SAMPLER_STOP_UNIQUE int    close the spider once this many unique URLs are
                                     known (0: never)
    BENCH_SAMPLER_STOP_RSS    int    close the spider once RSS reaches this many bytes
                                     (0: never)

One line per sample, the first at ``spider_opened`` and the last at ``spider_closed``::

    t          float  seconds since spider_opened (monotonic clock)
    pages      int    stat response_received_count (every response, robots.txt included)
    html       int    stat irl/spider/pages (HTML pages the broad spider parsed)
    links      int    stat irl/spider/links (followable links extracted)
    unique     int    URLs the dupefilter has seen (requests scheduled, seeds included); on
                      the IRL scheduler, stat irl/urlseen/unique (URLs found new by URLseen)
    scheduled  int    requests waiting in the scheduler
    due        int    IRL scheduler only: 1 if a host is due in the workbench now, else 0
    rss        int    resident set size, bytes (psutil)
    cpu        float  process CPU seconds, user + system, since the process started: all
                      threads (the reactor, DRUM's merges, LevelDB's, DNS lookups) and the
                      kernel's work for them
    cpu_system float  the system (kernel) part of ``cpu``
    cpu_reactor float the reactor thread's CPU seconds, user + system (the sampler runs on
                      it: ``time.thread_time``)
    event      str    "open", "tick", "stop" (a limit was reached; closing) or "close"
    reason     str    close reason (on the "close" line only)
"""

from __future__ import annotations

import json
import time
from typing import IO, Any

import psutil
from replay import ReplayScheduler
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import task

SAMPLE_SECONDS = 1.0
STOP_REASON = "bench_limit"


def seen_urls(crawler: Crawler) -> int:
    """How many request fingerprints Scrapy's stock RFPDupeFilter holds.

    The one place this benchmark touches a private attribute: ``RFPDupeFilter._fingerprints``
    (a set of bytes). Scrapy 2.19 deprecates the public ``fingerprints`` property, which
    also builds a new frozenset of hex strings on every call, too costly once a second
    on a million URLs. Fails loudly if a Scrapy upgrade moves it.
    """
    engine = crawler.engine
    scheduler = engine.scheduler if engine is not None else None
    if scheduler is None:
        return 0
    if isinstance(scheduler, ReplayScheduler):  # the replay floor keeps no URLs
        return 0
    if hasattr(scheduler, "frontier"):  # the IRL scheduler counts its unique URLs
        assert crawler.stats is not None
        return int(crawler.stats.get_value("irl/urlseen/unique", 0))
    df = getattr(scheduler, "df", None)
    fingerprints = getattr(df, "_fingerprints", None)
    if not isinstance(fingerprints, set):
        raise RuntimeError(
            f"bench/sampler.py: scheduler {type(scheduler).__name__} has no dupefilter with a "
            "_fingerprints set; Scrapy moved it, update seen_urls()"
        )
    return len(fingerprints)


def due_now(scheduler: Any) -> dict[str, int]:
    """``{"due": 1}`` if the IRL scheduler's workbench has a host due now, ``{"due": 0}``
    if not; ``{}`` on another scheduler."""
    frontier = getattr(scheduler, "frontier", None)
    if frontier is None:
        return {}
    due = frontier.workbench.next_due()
    return {"due": int(due is not None and due <= scheduler.waker.clock.seconds())}


class Sampler:
    def __init__(
        self, crawler: Crawler, path: str, interval: float, stop_unique: int, stop_rss: int
    ) -> None:
        self.crawler = crawler
        self.path = path
        self.interval = interval
        self.stop_unique = stop_unique
        self.stop_rss = stop_rss
        self.started = 0.0
        self.stopping = False
        self._file: IO[str] | None = None
        self._loop: task.LoopingCall | None = None
        self._process = psutil.Process()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Sampler:
        s = crawler.settings
        path = s.get("BENCH_SAMPLER_FILE")
        if not path:
            raise NotConfigured("BENCH_SAMPLER_FILE is not set")
        ext = cls(
            crawler,
            path,
            s.getfloat("BENCH_SAMPLER_INTERVAL", SAMPLE_SECONDS),
            s.getint("BENCH_SAMPLER_STOP_UNIQUE", 0),
            s.getint("BENCH_SAMPLER_STOP_RSS", 0),
        )
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Spider) -> None:
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in spider_closed)
        self.started = time.monotonic()
        self.write("open")
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(self.interval, now=False)

    def sample(self, event: str) -> dict[str, Any]:
        stats = self.crawler.stats
        assert stats is not None
        engine = self.crawler.engine
        scheduler = engine.scheduler if engine is not None else None
        cpu = self._process.cpu_times()
        return {
            "t": round(time.monotonic() - self.started, 4),
            "pages": stats.get_value("response_received_count", 0),
            "html": stats.get_value("irl/spider/pages", 0),
            "links": stats.get_value("irl/spider/links", 0),
            "unique": seen_urls(self.crawler),
            "scheduled": len(scheduler) if scheduler is not None else 0,  # type: ignore[arg-type]
            "rss": self._process.memory_info().rss,
            "cpu": round(cpu.user + cpu.system, 3),
            "cpu_system": round(cpu.system, 3),
            "cpu_reactor": round(time.thread_time(), 3),
            "event": event,
            **due_now(scheduler),
        }

    def write(self, event: str, **extra: Any) -> dict[str, Any]:
        record = {**self.sample(event), **extra}
        assert self._file is not None
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        return record

    def tick(self) -> None:
        record = self.write("tick")
        if self.stopping:
            return
        if (self.stop_unique and record["unique"] >= self.stop_unique) or (
            self.stop_rss and record["rss"] >= self.stop_rss
        ):
            self.stopping = True
            self.write("stop")
            engine = self.crawler.engine
            assert engine is not None
            deferred_from_coro(engine.close_spider_async(reason=STOP_REASON))

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.write("close", reason=reason)
        assert self._file is not None
        self._file.close()
