"""``FreezeStartupObjects``: keep what a crawl builds at start-up out of the cyclic GC.

Theory of operation
-------------------
CPython's full (generation 2) collection visits every container object the GC tracks,
and runs on the reactor thread whenever enough objects have survived since the last
one: in a broad crawl it ran every few seconds and held the reactor for 100-700 ms,
growing with the heap (most of the reactor's long stalls, measured in issue 4). Most of
those objects never become garbage: the modules, classes and functions of Scrapy,
Twisted and irlscrapy, the settings, the spider and its middlewares, all built before
the spider opens. ``gc.freeze()`` moves every object tracked at that moment to a
permanent generation that collections skip; they are still freed by reference
counting, and only a reference cycle among them would outlive the crawl (there is none
worth collecting: they live as long as the process).

So when the spider opens (the scheduler is open then, a resumed frontier included) the
extension runs one full collection, then freezes what is left. What a crawl holds per
URL is kept out of the GC by its data layout instead (the workbench's items are tuples
of bytes and ints, the DNS cache holds bytes: see irlscrapy/scheduler/frontier.py and
dns.py).

On unless ``IRL_GC_FREEZE`` is false; the add-on enables the extension. Stat:
``irl/gc/frozen_objects``.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

logger = logging.getLogger(__name__)

#: The setting that turns the extension off (bool, default True).
SETTING = "IRL_GC_FREEZE"


class FreezeStartupObjects:
    def __init__(self, stats: Any) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FreezeStartupObjects:
        if not crawler.settings.getbool(SETTING, True):
            raise NotConfigured(f"{SETTING} is false")
        extension = cls(crawler.stats)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        gc.collect()
        gc.freeze()
        frozen = gc.get_freeze_count()
        self.stats.set_value("irl/gc/frozen_objects", frozen)
        logger.debug("froze %d start-up objects out of the cyclic GC", frozen)
