"""The middlewares that tell the IRL scheduler when a fetch, and its page, are over, and
how the host answered.

``FetchEndMiddleware`` (downloader middleware, outermost): a request that ends without
leaving the downloader (dropped by a middleware, or answered by one, such as a cache)
releases its host and IP at once; ``request_left_downloader`` covers the rest. An
exception that reaches it is final: the URL is done (no page; once the engine has passed
on what its errback yields), but for a download cut because the spider was closing
(:mod:`irlscrapy.runtime.closing`): that URL stays admitted, for a resume to fetch. A
request the frontier refused (robots.txt, DNS) comes back through it to fail as Scrapy's own
components would fail it: IgnoreRequest("Forbidden by robots.txt") and stat
``robotstxt/forbidden``, IgnoreRequest("address guard: ...") for a host the address
guard refuses, or CannotResolveHostError; so its errback runs.

``PageDoneMiddleware`` (spider middleware, outermost): once the spider's output for a
response has all been yielded, it tells the scheduler, which marks the URL done in the
admitted journal when the engine has finished with the request: Scrapy's scraper may
still be passing requests of that output on (``irlscrapy.scheduler.ledger``). Before
that, a kill -9 makes the URL be fetched again rather than its links be lost. A page
whose failure no middleware of ours sees (one raised in a downloader middleware's
``process_response``) is done once the engine has finished with its request too. A
request the spider yields is a new one, even with its page's meta (``meta=response.meta``,
``response.request.replace(...)``): the middleware takes the page's fetch token off it,
which would make the scheduler take it for a retry or redirect of that fetch (sent
straight to its host, and its page done at once, before the rest of its links).

``HostHealthMiddleware`` (downloader middleware, order HOST_HEALTH_ORDER: above
RetryMiddleware's 550, so it sees each answer and failure before a retry is made of it):
a 429 or 503 (with its Retry-After: the host's failure), a network failure
(``RETRY_EXCEPTIONS``: its origin's failure) or any other answer goes to the scheduler's
host health (:mod:`irlscrapy.scheduler.hosts.hosthealth`).

All do nothing (``NotConfigured``) unless the IRL scheduler is the crawl's scheduler.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import load_object

from irlscrapy.runtime.internals import DownloadCut
from irlscrapy.scheduler.hosts.addressguard import GUARD_REFUSAL
from irlscrapy.scheduler.hosts.hosthealth import FAILURE_STATUSES, retry_after_seconds
from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.metakeys import ADDRESS_KEY, FETCH_KEY, REFUSED_KEY
from irlscrapy.scheduler.stages import GIVEN_UP

#: Orders in DOWNLOADER_MIDDLEWARES and SPIDER_MIDDLEWARES: outermost, below Scrapy's
#: lowest (OffsiteMiddleware 50; StartSpiderMiddleware 25).
FETCH_END_ORDER = 10
PAGE_DONE_ORDER = 5
HOST_HEALTH_ORDER = 880


def _scheduler_class_is_irl(crawler: Crawler) -> bool:
    scheduler = crawler.settings.get("SCHEDULER")
    if isinstance(scheduler, str):
        return scheduler.endswith(".IRLScheduler")
    return isinstance(scheduler, type) and issubclass(scheduler, IRLScheduler)


class FetchEndMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchEndMiddleware:
        if not _scheduler_class_is_irl(crawler):
            raise NotConfigured("the IRL scheduler is not the crawl's scheduler")
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        why = request.meta.pop(REFUSED_KEY, None)
        if why is None:
            return
        if why == "robots.txt":
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("robotstxt/forbidden")
            raise IgnoreRequest("Forbidden by robots.txt")
        if why.startswith(GUARD_REFUSAL) or why == GIVEN_UP:
            raise IgnoreRequest(why)
        raise CannotResolveHostError(why)

    def process_response(self, request: Request, response: Response) -> Response:
        self._ended(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        # Outermost: an exception that reaches us is final (a RetryMiddleware retry would
        # have come back as a Request instead).
        scheduler = IRLScheduler.of(self.crawler)
        if scheduler is None:
            return
        if isinstance(exception, DownloadCut):
            scheduler.fetch_cut(request)  # the spider is closing: fetched on resume
        else:
            scheduler.fetch_failed(request)

    def _ended(self, request: Request) -> None:
        scheduler = IRLScheduler.of(self.crawler)
        if scheduler is not None:
            scheduler.fetch_ended(request)


class PageDoneMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDoneMiddleware:
        if not _scheduler_class_is_irl(crawler):
            raise NotConfigured("the IRL scheduler is not the crawl's scheduler")
        return cls(crawler)

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any]
    ) -> Iterator[Any]:
        for obj in result:
            if isinstance(obj, Request):
                _as_new(obj)
            yield obj
        self._done(response)

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for obj in result:
            if isinstance(obj, Request):
                _as_new(obj)
            yield obj
        self._done(response)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        self._done(response)

    def _done(self, response: Response | None) -> None:
        scheduler = IRLScheduler.of(self.crawler)
        if scheduler is not None and response is not None and response.request is not None:
            scheduler.page_handled(response.request)


def _as_new(request: Request) -> None:
    """Take a fetch's token (and its address) off a request the spider yields."""
    meta = request.meta
    if FETCH_KEY in meta:
        del meta[FETCH_KEY]
        meta.pop(ADDRESS_KEY, None)


class HostHealthMiddleware:
    def __init__(self, crawler: Crawler, failures: tuple[type[BaseException], ...]) -> None:
        self.crawler = crawler
        self.failures = failures

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HostHealthMiddleware:
        if not _scheduler_class_is_irl(crawler):
            raise NotConfigured("the IRL scheduler is not the crawl's scheduler")
        failures = tuple(
            load_object(x) if isinstance(x, str) else x
            for x in crawler.settings.getlist("RETRY_EXCEPTIONS")
        )
        return cls(crawler, failures)

    def process_response(self, request: Request, response: Response) -> Response:
        scheduler = self._scheduler()
        if scheduler is not None:
            if response.status in FAILURE_STATUSES:
                wait = retry_after_seconds(response.headers.get(b"Retry-After"))
                scheduler.host_failed(request, wait)
            else:
                scheduler.host_answered(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        scheduler = self._scheduler()
        if scheduler is not None and isinstance(exception, self.failures):
            scheduler.origin_failed(request)

    def _scheduler(self) -> IRLScheduler | None:
        return IRLScheduler.of(self.crawler)
