"""What a crawl is doing now: one set of figures for the progress line and the status
endpoint (:mod:`irlscrapy.report.status`), so the two never disagree.

:func:`crawl_figures` reads Scrapy's stats, the process's RSS and, on the IRL scheduler,
its frontier (:meth:`irlscrapy.scheduler.irl.IRLScheduler.status`): RAM reads only, cheap
enough to run on every request to the endpoint. :class:`Throughput` keeps pages per
second over the last samples, for the rate and the sparkline.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import psutil
from scrapy.crawler import Crawler

from irlscrapy.runtime.internals import crawl_engine

#: Running totals: figure name -> (Scrapy stat, meaning). Prometheus exposes them as
#: counters, everything else as gauges.
COUNTERS: dict[str, tuple[str, str]] = {
    "pages": (
        "response_received_count",
        "responses received, robots.txt included (what CLOSESPIDER_PAGECOUNT counts)",
    ),
    "robots_responses": ("robotstxt/response_count", "robots.txt responses received"),
    "ignored_responses": (
        "httperror/response_ignored_count",
        "responses HttpErrorMiddleware kept from the spider (a status it does not handle)",
    ),
    "items": ("item_scraped_count", "items scraped"),
    "links": ("irl/spider/links", "links extracted by the broad spider"),
    "requests": ("downloader/request_count", "requests sent to the downloader"),
    "download_errors": ("downloader/exception_count", "downloads that failed"),
    "duplicates": ("dupefilter/filtered", "URLs URLseen found seen before"),
    "unique_urls": ("irl/urlseen/unique", "URLs URLseen found new"),
    "robots_disallowed": ("irl/robots/disallowed", "URLs robots.txt disallowed"),
    "agent_urls_out": ("irl/agent/urls_out", "URLs sent to the agents that own them"),
    "agent_urls_in": ("irl/agent/urls_in", "URLs received from other agents"),
}
#: Gauges: figure name -> meaning.
GAUGES: dict[str, str] = {
    "pages_per_second": "responses per second over the last samples",
    "uptime_seconds": "seconds since the spider opened",
    "rss_bytes": "resident memory of the crawler process",
    "downloader_active": "requests in the downloader",
    "scheduled": "requests the scheduler holds",
    "urlseen_pending": "URLs waiting for URLseen's next batch check",
    "beast_urls": "URLs in BEAST's disk queues",
    "beast_queues": "BEAST's queues j (doubling up to IRL_BEAST_MAX_QUEUES)",
    "beast_overflow_urls": "URLs in BEAST's overflow queue QF",
    "dns_waiting_urls": "admitted URLs whose host is being resolved",
    "workbench_urls": "URLs in the workbench (RAM)",
    "horizon_urls": "the workbench's target: URLs fetched within IRL_WORKBENCH_HORIZON at the "
    "recent rate (0: no horizon)",
    "workbench_hosts": "hosts in the workbench",
    "workbench_ips": "IP addresses in the workbench",
    "ips_due": "IPs with a host due now (counted up to 1,000)",
    "fetches_in_flight": "fetches the scheduler released that have not ended",
    "fetch_cap": "the load governor's cap on fetches in flight",
    "urlseen_merging": "1 while a URLseen merge (or the storing of its results) runs",
    "admission_paused": "1 while admission from BEAST waits for a full host to take a URL",
    "workbench_full": "1 while RAM holds IRL_WORKBENCH_URLS admitted URLs: admission waits",
    "held_urls": "URLs of origins in back-off, held out of their hosts (RAM)",
    "parked_urls": "URLs parked on disk: of retired hosts and origins, or given up",
}
#: Gauges of an agent of a multi-agent crawl only: figure name -> meaning.
AGENT_GAUGES: dict[str, str] = {
    "agent_partitions": "partitions this agent owns (multi-agent mode)",
    "agent_members": "agents of the crawl (multi-agent mode)",
    "agent_outbox": "URLs and PLD edges waiting to be sent to other agents",
    "agent_unsent_batches": "batches held because Redis could not be reached",
    "agent_redis_failing_seconds": "seconds since Redis was last reached (0: it is)",
    "agent_ips_held": "IPs whose lease this agent holds: it may fetch from them",
    "agent_ips_waiting": "IPs this agent waits for: another agent holds their lease",
}
#: Samples :class:`Throughput` keeps.
HISTORY = 120


def crawl_figures(crawler: Crawler, process: psutil.Process | None = None) -> dict[str, float]:
    """Every figure of :data:`COUNTERS` and :data:`GAUGES` the crawl has now (the
    frontier's only on the IRL scheduler, :data:`AGENT_GAUGES` only on an agent of a
    multi-agent crawl; the rate and uptime come from a
    :class:`Throughput`, see :meth:`Throughput.figures`)."""
    stats = crawler.stats
    assert stats is not None
    figures: dict[str, float] = {
        name: stats.get_value(key, 0) or 0 for name, (key, _) in COUNTERS.items()
    }
    figures["rss_bytes"] = (process or psutil.Process()).memory_info().rss
    engine = crawl_engine(crawler)
    if engine is None:  # the crawl has not started
        return figures
    figures["downloader_active"] = len(engine.downloader.active)
    scheduler: Any = engine.scheduler
    if scheduler is not None:
        if hasattr(scheduler, "__len__"):
            figures["scheduled"] = len(scheduler)
        status = getattr(scheduler, "status", None)
        if callable(status):
            figures.update(status())
    return figures


class Throughput:
    """Pages at the last :data:`HISTORY` samples; rate and sparkline from them."""

    def __init__(self, clock: Any = time.monotonic, history: int = HISTORY) -> None:
        self.clock = clock
        self.started = clock()
        self.samples: deque[tuple[float, float]] = deque(maxlen=history)

    def add(self, pages: float) -> None:
        self.samples.append((self.clock(), pages))

    def rate(self) -> float:
        """Pages per second between the oldest and the newest sample (0 before two)."""
        if len(self.samples) < 2:
            return 0.0
        (t0, p0), (t1, p1) = self.samples[0], self.samples[-1]
        return (p1 - p0) / (t1 - t0) if t1 > t0 else 0.0

    def sparkline(self) -> list[float]:
        """Pages per second between consecutive samples, oldest first."""
        pairs = zip(self.samples, list(self.samples)[1:], strict=False)
        return [(p1 - p0) / (t1 - t0) if t1 > t0 else 0.0 for (t0, p0), (t1, p1) in pairs]

    def figures(self) -> dict[str, float]:
        return {"pages_per_second": self.rate(), "uptime_seconds": self.clock() - self.started}
