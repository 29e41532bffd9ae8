"""``ReactorLag``: how late the reactor runs a timer, the measure of a blocked reactor.

Theory of operation
-------------------
A :class:`irlscrapy.runtime.lagprobe.LagProbe` ticks every :data:`TICK_SECONDS` (10 ms) and
reports each tick's *lag*: how long after it was due it fired, as long as the longest
piece of work that held the reactor thread in between. The performance model
(docs/architecture.md, section 6) allows ~50 ms.

Samples go to a fixed histogram (:func:`new_histogram`): :data:`BUCKETS_PER_DECADE`
log-spaced buckets per decade from :data:`LAG_LOW` (0.1 ms) to :data:`LAG_HIGH` (10 s),
one bucket below (every lag under 0.1 ms, an early firing included) and one above. RAM
is therefore the same after a minute or a month; the exact maximum is kept beside it.
:func:`percentile` reads a percentile from the histogram to within half a bucket (a
factor of 10 ** (1 / 40), under 6 %).

Off unless ``IRL_REACTOR_LAG_STATS`` is true. When the spider closes the extension sets the
stats ``irl/reactor/lag_p50_ms``, ``irl/reactor/lag_p99_ms``, ``irl/reactor/lag_p999_ms``,
``irl/reactor/lag_max_ms`` and ``irl/reactor/ticks``, and logs them in one INFO line.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from irlscrapy.runtime.lagprobe import TICK_SECONDS, LagProbe
from irlscrapy.runtime.workers import installed_reactor

logger = logging.getLogger(__name__)

#: The setting that turns the extension on (bool, default False).
SETTING = "IRL_REACTOR_LAG_STATS"
LAG_LOW = 1e-4  # seconds: the upper edge of the first bucket
LAG_HIGH = 10.0  # seconds: the lower edge of the last bucket
BUCKETS_PER_DECADE = 20
_DECADES = round(math.log10(LAG_HIGH / LAG_LOW))
#: Histogram length: under LAG_LOW, the log-spaced buckets, at or over LAG_HIGH.
BUCKETS = _DECADES * BUCKETS_PER_DECADE + 2
#: Percentiles set as stats, with their stat names.
REPORTED = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))


def new_histogram() -> list[int]:
    """An empty lag histogram: :data:`BUCKETS` counts."""
    return [0] * BUCKETS


def bucket_of(lag: float) -> int:
    """The histogram index of a lag in seconds."""
    if lag < LAG_LOW:
        return 0
    if lag >= LAG_HIGH:
        return BUCKETS - 1
    index = 1 + int(math.log10(lag / LAG_LOW) * BUCKETS_PER_DECADE)
    return min(index, BUCKETS - 2)  # rounding at the top edge


def bucket_value(index: int) -> float:
    """The lag in seconds a bucket stands for: 0 for the bucket under LAG_LOW, the
    geometric middle of a log-spaced bucket, LAG_HIGH (a lower bound) for the last."""
    if index <= 0:
        return 0.0
    if index >= BUCKETS - 1:
        return LAG_HIGH
    return float(LAG_LOW * 10 ** ((index - 0.5) / BUCKETS_PER_DECADE))


def percentile(hist: list[int], q: float) -> float:
    """The ``q``-th percentile (0 <= q <= 100) of the lags in ``hist``, in seconds.

    It is the value of the sample at 0-based rank ``floor(q / 100 * n)`` of the ``n``
    sorted samples: the least lag that fewer than (100 - q) % of the ticks exceeded. So
    of 1,000 ticks, p99.9 is the largest; of 999 on time and one 200 ms late, p99.9 is
    about 200 ms and p99 is 0. An empty histogram gives 0.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q={q}: must be within [0, 100]")
    n = sum(hist)
    if not n:
        return 0.0
    rank = min(n - 1, math.floor(q / 100 * n + 1e-9))  # the epsilon: 99.9 / 100 * 1000
    seen = 0
    for index, count in enumerate(hist):
        seen += count
        if seen > rank:
            return bucket_value(index)
    raise AssertionError("unreachable: rank < n")


class ReactorLag:
    """Scrapy extension: a 10 ms timer on the reactor, its lateness in a histogram."""

    def __init__(self, stats: Any, clock: Any, interval: float = TICK_SECONDS) -> None:
        """``stats``: a StatsCollector; ``clock``: an IReactorTime (the reactor, or a
        ``twisted.internet.task.Clock`` in tests)."""
        self.stats = stats
        self.clock = clock
        self.interval = interval
        self.hist = new_histogram()
        self.ticks = 0
        self.max_lag = 0.0  # seconds
        self.probe = LagProbe(clock, self.record, interval)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReactorLag:
        if not crawler.settings.getbool(SETTING, False):
            raise NotConfigured  # off by default: no args, so Scrapy logs no warning
        ext = cls(crawler.stats, installed_reactor())
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def record(self, lag: float) -> None:
        """Count one tick that fired ``lag`` seconds after it was due."""
        self.hist[bucket_of(lag)] += 1
        self.ticks += 1
        if lag > self.max_lag:
            self.max_lag = lag

    # -- signals ---------------------------------------------------------------------
    def spider_opened(self, spider: Spider) -> None:
        self.probe.start()

    def spider_closed(self, spider: Spider) -> None:
        self.probe.stop()
        figures = {name: percentile(self.hist, q) * 1000 for name, q in REPORTED}
        figures["max"] = self.max_lag * 1000
        if self.stats is not None:
            for name, ms in figures.items():
                self.stats.set_value(f"irl/reactor/lag_{name}_ms", round(ms, 3))
            self.stats.set_value("irl/reactor/ticks", self.ticks)
        logger.info(
            "reactor lag over %d ticks of %.0f ms: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, "
            "max %.1f ms",
            self.ticks,
            self.interval * 1000,
            figures["p50"],
            figures["p99"],
            figures["p999"],
            figures["max"],
        )
