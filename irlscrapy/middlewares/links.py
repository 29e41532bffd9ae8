"""Spider middleware that hands :class:`irlscrapy.Links` to the frontier.

With the IRL scheduler, a page's ``Links`` go to ``enqueue_links`` through the one
crawler-level accessor :func:`irlscrapy.scheduler.irl.links_sink` (the scheduler then
applies depth, URL-length, allowed-domains and Referer rules itself). Without it, they
become ordinary Requests: that is how a spider that yields ``Links`` runs on Scrapy's
stock scheduler. The middleware sits closer to the spider (order 950) than Scrapy's
Depth (900), UrlLength (800) and Referer (700) middlewares, so the Requests it makes get
depth, URL-length limits and Referer exactly as Requests a spider yields itself.
(The STAR middleware takes over this hand-off when it lands.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from irlscrapy.links import Links
from irlscrapy.scheduler.irl import links_sink

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
                yield from self.hand_off(obj, response)
            else:
                yield obj

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for obj in result:
            if isinstance(obj, Links):
                for request in self.hand_off(obj, response):
                    yield request
            else:
                yield obj

    def hand_off(self, links: Links, response: Response | None) -> Iterator[Request]:
        """Give ``links`` (of ``response``) to the IRL scheduler, or yield them as Requests."""
        sink = links_sink(self.crawler)
        if sink is not None:
            sink.enqueue_links(links, response)
            return iter(())
        return self.requests(links)

    def requests(self, links: Links) -> Iterator[Request]:
        spider = self.crawler.spider
        callback = getattr(spider, links.callback) if links.callback else None
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("irl/links/degraded", len(links.urls))
        for url in links.urls:
            yield Request(url, callback=callback)
