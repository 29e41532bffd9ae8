"""``SpiderState`` that a full disk or a crash cannot leave half-written.

Scrapy's own extension (``scrapy.extensions.spiderstate``) keeps ``spider.state`` in
``JOBDIR/spider.state``: it truncates the file at close, then pickles into it. When
the disk is full (the IRL scheduler stops the crawl for that, saying to rerun with the
same JOBDIR), the pickle fails after the truncation, and the rerun logs an EOFError
from a signal handler and opens the spider without ``spider.state`` at all.

This subclass writes the state to a temporary file beside it and renames it over the
old one only when it is whole, so the file holds either this run's state or the last
run's (a full disk keeps the last run's, with a warning). A file that cannot be read
(written by Scrapy's extension and cut short, damaged, or holding a class the spider's
code no longer has) is logged as a warning, counted (``irl/recovered/spider_state``)
and the spider starts with an empty state, as it would without one.

The add-on puts it in the place of Scrapy's extension; a project that lists Scrapy's
in ``EXTENSIONS`` keeps it.
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Self

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.extensions import spiderstate
from scrapy.statscollectors import StatsCollector

from irlscrapy.exceptions import disk_full

logger = logging.getLogger(__name__)


class SpiderState(spiderstate.SpiderState):
    #: the crawl's stats (set by from_crawler; None: a state lost is counted nowhere)
    stats: StatsCollector | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = super().from_crawler(crawler)
        extension.stats = crawler.stats
        return extension

    def spider_closed(self, spider: Spider) -> None:
        if not self.jobdir or not hasattr(spider, "state"):
            return  # (no state was read: the spider never opened)
        path = Path(self.statefn)
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("wb") as f:
                pickle.dump(spider.state, f, protocol=4)
                f.flush()
                os.fsync(f.fileno())
        except BaseException as exc:
            partial.unlink(missing_ok=True)
            if not disk_full(exc):
                raise
            logger.warning(
                "spider.state was not saved: the disk holding %s is full (%s); a rerun "
                "starts from the state saved before",
                path,
                exc,
            )
            return
        os.replace(partial, path)

    def spider_opened(self, spider: Spider) -> None:
        try:
            super().spider_opened(spider)
        except Exception as exc:  # a damaged pickle raises about anything
            logger.warning(
                "%s cannot be read (%r; cut short by a full disk or a crash, or it holds a "
                "class this code no longer has?): the spider starts with an empty state",
                self.statefn,
                exc,
            )
            spider.state = {}  # type: ignore[attr-defined]
            if self.stats is not None:
                self.stats.inc_value("irl/recovered/spider_state")
