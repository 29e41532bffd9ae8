"""When a page is done, on a real IRL scheduler: once the engine has let go of its
request (which it does after the spider's output has been passed on), not when the
spider's iterator ends; and only a retry or redirect of a fetch ends its page early,
not a request the spider or an errback yields with the page's meta (``meta=
response.meta``), which carries the fetch's token."""

from __future__ import annotations

from scrapy import Request
from scrapy.http import Response

from irlscrapy.middlewares.fetchend import PageDoneMiddleware
from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.metakeys import ADDRESS_KEY, FETCH_KEY

PAGE = "http://site.example/page"


def _fetched(scheduler: IRLScheduler) -> Request:
    """A page request handed out, out of the downloader, its response in the spider:
    the engine holds it."""
    dispatcher = scheduler.dispatcher
    assert dispatcher is not None
    request = Request(PAGE)
    token = dispatcher.ledger.hand_out(None, (b"page", 1), False, request)  # type: ignore[arg-type]
    request.meta[FETCH_KEY] = token
    request.meta[ADDRESS_KEY] = "192.0.2.1"
    dispatcher.ledger.end(token)  # (released as it left the downloader)
    scheduler.crawler.engine._slot.inprogress.add(request)  # type: ignore[union-attr]
    return request


def _pending(scheduler: IRLScheduler) -> int:
    assert scheduler.dispatcher is not None
    return scheduler.dispatcher.ledger.pages_pending


def test_a_page_is_done_once_the_engine_lets_go_of_its_request(
    irl_scheduler: IRLScheduler,
) -> None:
    page = _fetched(irl_scheduler)
    middleware = PageDoneMiddleware(irl_scheduler.crawler)
    child = Request("http://site.example/child", meta=page.meta)  # the page's meta, copied
    output = middleware.process_spider_output(Response(PAGE, request=page), iter([child]))
    yielded = next(output)
    assert FETCH_KEY not in yielded.meta and ADDRESS_KEY not in yielded.meta
    assert FETCH_KEY in page.meta  # (the page's own request keeps its token)
    irl_scheduler.enqueue_request(yielded)
    assert _pending(irl_scheduler) == 1, "the child ended its page"
    assert list(output) == []  # the iterator ends: the page is handled
    dispatcher = irl_scheduler.dispatcher
    assert dispatcher is not None and dispatcher.ledger.pages_handled == 1
    dispatcher.finish_pages(handled=True)
    assert _pending(irl_scheduler) == 1, "done while the engine still held its request"
    irl_scheduler.crawler.engine._slot.inprogress.discard(page)  # type: ignore[union-attr]
    dispatcher.finish_pages(handled=True)
    assert _pending(irl_scheduler) == 0 and dispatcher.ledger.pages_handled == 0


def test_an_errbacks_request_with_the_failed_requests_meta_is_a_new_one(
    irl_scheduler: IRLScheduler,
) -> None:
    """A failure is final when it reaches the errback (its retries are spent): a
    request yielded there with its meta is not a retry of it."""
    page = _fetched(irl_scheduler)
    irl_scheduler.fetch_failed(page)
    child = Request("http://site.example/other", meta={**page.meta, "retry_times": 2})
    irl_scheduler.enqueue_request(child)
    assert _pending(irl_scheduler) == 1, "the errback's request ended the failed page"


def test_a_retry_of_the_fetch_ends_its_page_at_once(irl_scheduler: IRLScheduler) -> None:
    """RetryMiddleware's copy of the request, stored first, replaces the fetch."""
    page = _fetched(irl_scheduler)
    retry = page.replace(meta={**page.meta, "retry_times": 1}, dont_filter=True)
    irl_scheduler.enqueue_request(retry)
    assert _pending(irl_scheduler) == 0
