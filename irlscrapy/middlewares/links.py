"""Spider middleware that turns :class:`irlscrapy.Links` into ordinary Requests.

This is how a spider that yields ``Links`` runs on Scrapy's stock scheduler. It sits
closer to the spider (order 950) than Scrapy's Depth (900), UrlLength (800) and Referer
(700) middlewares, so the Requests it makes get depth, URL-length limits and Referer
exactly as Requests a spider yields itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from irlscrapy.links import Links

#: Where the middleware goes in SPIDER_MIDDLEWARES.
ORDER = 950


class LinksMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinksMiddleware:
        return cls(crawler)

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any]
    ) -> Iterator[Any]:
        for obj in result:
            if isinstance(obj, Links):
                yield from self.requests(obj)
            else:
                yield obj

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for obj in result:
            if isinstance(obj, Links):
                for request in self.requests(obj):
                    yield request
            else:
                yield obj

    def requests(self, links: Links) -> Iterator[Request]:
        spider = self.crawler.spider
        callback = getattr(spider, links.callback) if links.callback else None
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("irl/links/degraded", len(links.urls))
        for url in links.urls:
            yield Request(url, callback=callback)
