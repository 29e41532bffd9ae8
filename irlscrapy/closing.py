"""Closing the spider on a failure the crawl cannot go past (a full disk, an error in
the scheduler, WARC files that cannot be written), with the reason Scrapy logs and
puts in the stats (``finish_reason``)."""

from __future__ import annotations

from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro

from irlscrapy.internals import crawl_engine


def close_spider(crawler: Crawler, reason: str) -> None:
    """Ask the engine to close the running spider with ``reason``; nothing if no spider
    is running (none yet, or it is already closing)."""
    engine = crawl_engine(crawler)
    if engine is not None and engine.spider is not None:
        deferred_from_coro(engine.close_spider_async(reason=reason))
