"""A test-only extension: counts responses that reach the engine flagged as duplicate
content (``meta["irl_duplicate_of"]``), as stat ``test/flagged_duplicates``; those of
robots.txt fetches (never held for a verdict, so never flagged) as
``test/flagged_robots``."""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

from irlscrapy.warc.recorder import DUPLICATE_KEY


class DuplicateProbe:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DuplicateProbe:
        probe = cls(crawler)
        crawler.signals.connect(probe.response_received, signal=signals.response_received)
        return probe

    def response_received(self, response: Any, request: Any, **_: Any) -> None:
        if DUPLICATE_KEY in request.meta:
            assert self.stats is not None
            robots = request.url.endswith("/robots.txt")
            self.stats.inc_value("test/flagged_robots" if robots else "test/flagged_duplicates")
