"""``GCTuning``: keep CPython's cyclic GC from stalling the reactor in a long crawl.

Theory of operation
-------------------
CPython's full (generation 2) collection visits every container object the GC tracks,
and runs on the reactor thread whenever enough objects have survived since the last
one. In a broad crawl it ran every two seconds and held the reactor for 100-700 ms,
growing with the heap: most of the reactor's long stalls (measured in issue 4). Two
measures, both when the spider opens (the scheduler is open then, a resumed frontier
included):

- ``gc.freeze()`` after one full collection: every object alive then (the modules,
  classes and functions of Scrapy, Twisted and irlscrapy, the settings, the spider and
  its middlewares) moves to a permanent generation that collections skip. Those objects
  are still freed by reference counting; only a reference cycle among them would be
  kept, and they live as long as the process anyway. ``IRL_GC_FREEZE`` (default on).
- a full collection after ``IRL_GC_FULL_EVERY`` generation-1 collections instead of
  CPython's 10 (``gc.set_threshold``'s third threshold; 0 leaves CPython's): at 1,000,
  about one every few minutes at a few hundred pages per second, so cyclic garbage is
  still reclaimed, and its pause is one sample among tens of thousands.

What a crawl holds per URL and per host is kept out of the GC by its data layout (the
workbench's heap items and URLs are tuples of bytes, ints and strings, which the GC
stops tracking; the DNS cache holds bytes), so a full collection's pause grows with the
hosts in RAM, not with the URLs.

The add-on enables the extension. Stat: ``irl/gc/frozen_objects``.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError

logger = logging.getLogger(__name__)


class GCTuning:
    def __init__(self, stats: Any, freeze: bool, full_every: int) -> None:
        self.stats = stats
        self.freeze = freeze
        self.full_every = full_every

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GCTuning:
        freeze = defaults.get(crawler.settings, "IRL_GC_FREEZE")
        full_every = defaults.get(crawler.settings, "IRL_GC_FULL_EVERY")
        if full_every < 0:
            raise ConfigurationError(f"IRL_GC_FULL_EVERY must be >= 0 (got {full_every})")
        if not freeze and not full_every:
            raise NotConfigured("IRL_GC_FREEZE is false and IRL_GC_FULL_EVERY is 0")
        extension = cls(crawler.stats, freeze, full_every)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        if self.full_every:
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, self.full_every)
        if self.freeze:
            gc.collect()
            gc.freeze()
            frozen = gc.get_freeze_count()
            self.stats.set_value("irl/gc/frozen_objects", frozen)
            logger.debug("froze %d start-up objects out of the cyclic GC", frozen)
