"""``StarMiddleware``: the spider middleware of STAR, and the hand-off of ``Links``.

Two jobs, on every page a spider callback handles:

1. **PLD edges** (seeds/003 section VI.B, Fig. 4): the page's pay-level domain and the
   PLDs of everything the callback yields that leads to another page (the URLs of
   ``Links``, the URL of each ``Request``) go to the crawl's :class:`PLDInDegree`, which
   counts each PLD's in-degree (distinct other PLDs linking to it) and turns the
   ranking into the budgets BEAST and the workbench delays use. Every link counts,
   followed or not (offsite, too deep, disallowed): the in-degree is a property of the
   web, not of this crawl's rules. robots.txt responses are not pages.
2. **Links hand-off**: with the IRL scheduler, a page's ``Links`` go to
   ``enqueue_links`` through the one crawler-level accessor
   :meth:`irlscrapy.scheduler.irl.IRLScheduler.of` (the scheduler then applies depth,
   URL-length, allowed-domains and Referer rules itself). Without it, they become
   ordinary Requests: that is how a spider that yields ``Links`` runs on Scrapy's stock
   scheduler. The middleware sits closer to the spider (order 950) than Scrapy's Depth
   (900), UrlLength (800) and Referer (700) middlewares, so the Requests it makes get
   depth, URL-length limits and Referer exactly as Requests a spider yields itself.

STAR is off (pages are not counted, every PLD has the default budget) under Scrapy's
stock scheduler. Under the IRL scheduler it always counts; ``IRL_BUDGET_MODE`` decides
whether its ranking sets the budgets (:mod:`irlscrapy.star.budgets`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from irlscrapy.domains import PayLevelDomains, url_host
from irlscrapy.links import Links
from irlscrapy.runtime.crawlservices import crawl_plds
from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.metakeys import ROBOTS_KEY

#: Where the middleware goes in SPIDER_MIDDLEWARES.
ORDER = 950


class StarMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.plds = crawl_plds(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StarMiddleware:
        return cls(crawler)

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any]
    ) -> Iterator[Any]:
        edges = self.edges(response)
        for obj in result:
            if isinstance(obj, Links):
                edges.add(obj.urls)
                yield from self.hand_off(obj, response)
            else:
                if isinstance(obj, Request):
                    edges.add((obj.url,))
                yield obj
        edges.record()

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        edges = self.edges(response)
        async for obj in result:
            if isinstance(obj, Links):
                edges.add(obj.urls)
                for request in self.hand_off(obj, response):
                    yield request
            else:
                if isinstance(obj, Request):
                    edges.add((obj.url,))
                yield obj
        edges.record()

    def record(self, response: Response | None, urls: Iterable[str]) -> None:
        """Count the PLD edges of ``response``, a page that links to ``urls``."""
        edges = self.edges(response)
        edges.add(urls)
        edges.record()

    def edges(self, response: Response | None) -> PageEdges:
        """The PLD edges of ``response``, to be counted if STAR runs and it is a page."""
        sink = IRLScheduler.of(self.crawler)
        host = url_host(response.url) if response is not None else ""
        robots = response is not None and ROBOTS_KEY in getattr(response.request, "meta", {})
        # not counted: without STAR, a robots.txt, a data: or file: page (no site's)
        if sink is None or sink.indegree is None or not host or robots:
            return PageEdges(None, "", "", self.plds)
        assert response is not None
        # links to the page's own host (most of them) name no other PLD: skipped unparsed
        own = response.url[: response.url.find("://") + 3] + host + "/"
        return PageEdges(sink, self.plds(host), own, self.plds)

    def hand_off(self, links: Links, response: Response | None) -> Iterator[Request]:
        """Give ``links`` (of ``response``) to the IRL scheduler, or yield them as Requests."""
        sink = IRLScheduler.of(self.crawler)
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


class PageEdges:
    """The PLDs one page links to, gathered as its links arrive (a page's ``Links`` may
    come in slices, one reactor turn each: the PLD of each URL is looked up in the turn
    it arrives in), and given to the scheduler's in-degree once, at the page's end."""

    def __init__(
        self, sink: IRLScheduler | None, source: str, own: str, plds: PayLevelDomains
    ) -> None:
        self.sink = sink  # None: STAR does not count this page
        self.source = source  # the page's PLD
        self.own = own  # "scheme://host/" of the page: its links name no other PLD
        self.plds = plds
        self.targets: set[str] = set()

    def add(self, urls: Iterable[str]) -> None:
        if self.sink is None:
            return
        own, plds = self.own, self.plds
        self.targets.update(plds(url_host(u)) for u in urls if not u.startswith(own) and "://" in u)

    def record(self) -> None:
        if self.sink is not None:
            self.sink.record_page(self.source, self.targets)
