"""The one module that touches private parts of Scrapy.

1. Waking the engine (:class:`EngineWaker`), through the engine's private ``nextcall``.
2. A download handler that never re-sends a request on its own
   (:class:`PoliteHTTPDownloadHandler`), through the HTTP/1.1 handler's private ``_pool``.
3. The response head as received (:func:`capture_heads`), for the WARC writer, through
   the same ``_pool``'s protocol factory and Scrapy's private response parser.
4. Forgetting the proxy HttpProxyMiddleware took from the environment
   (:func:`forget_environment_proxy`), through its private meta keys.
5. Whether the spider still handles a response (:func:`spider_busy`), through the
   engine's scraper's slot (public names, no documented API).
6. The requests the engine has not finished with (:func:`engine_requests`), through its
   private ``_slot.inprogress``: a failure a downloader middleware raises in
   ``process_response`` goes to the request's errback and reaches no middleware of
   ours, so the scheduler learns that such a fetch is over when the engine lets go of
   its request.
7. Switching the downloader's own delay off (:func:`switch_off_downloader_delay`) when
   the workbench keeps the project's DOWNLOAD_DELAY (irlscrapy.scheduler.hosts.pace),
   through the downloader's private ``_delay``, the delay of its new slots (Scrapy's
   AutoThrottle sets it the same way).
8. The engine starting to close the spider (:func:`on_engine_closing`), through its
   private ``_slot.close``, and the download handlers it built
   (:func:`download_handlers`), through the downloader's private ``handlers._handlers``:
   downloads still in flight a moment after a close began are cut
   (:mod:`irlscrapy.runtime.closing`), which needs both.

tests/component/test_internals.py fails loudly if a Scrapy upgrade moves any of them.

Waking the engine
-----------------

Scrapy's engine asks the scheduler for requests when something happens (a download
ends, a request is enqueued) and otherwise only every 5 seconds (its heartbeat). A
politeness scheduler knows when its next host becomes due, so it wakes the engine then:
one timer, set to the earliest due time, moved when an earlier one comes up.

Scrapy has no public API for this; ``engine._slot.nextcall`` (a ``CallLaterOnce``) is
what the engine itself calls.

The engine starting to close
----------------------------
Scrapy logs "Closing spider" and then waits for every request in flight: a hung
download holds the close for up to ``DOWNLOAD_TIMEOUT``. It sends no signal when the
close begins (``spider_closed`` comes at its end), so :func:`on_engine_closing` wraps
the engine's ``_slot.close``, the first thing ``close_spider_async`` awaits.
:meth:`PoliteHTTPDownloadHandler.cut_downloads` then ends the downloads still in flight.

No silent re-sends
------------------
Twisted's ``HTTPConnectionPool`` re-sends a GET at once, on a new connection, when a
reused keep-alive connection fails before any answer (``retryAutomatically``). The
server then sees two requests with no delay between them: a politeness violation the
scheduler cannot see. Scrapy's RetryMiddleware retries such failures anyway, through
the scheduler and its delays, so the handler turns Twisted's re-send off.

The environment's proxy
-----------------------
A retry or redirect carries the proxy HttpProxyMiddleware took from the environment
(meta ``_scheme_proxy``, ``proxy``, ``_auth_proxy``); stored, it would outlive the run
and point a resumed crawl at a proxy that may have moved. The middleware sets it again
at download, so the scheduler drops it before storing a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Container
from typing import Any, NamedTuple

from scrapy import Request
from scrapy.core.downloader.handlers import http11
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import CancelledError, Deferred

from irlscrapy.exceptions import IrlscrapyError

#: HttpProxyMiddleware's private meta keys (scrapy/downloadermiddlewares/httpproxy.py)
ENVIRONMENT_PROXY_KEY = "_scheme_proxy"
PROXY_AUTH_KEY = "_auth_proxy"


def forget_environment_proxy(request: Any) -> None:
    """Drop the proxy HttpProxyMiddleware took from the environment from ``request``
    (see "The environment's proxy" above); a proxy the request itself named stays."""
    meta = request.meta
    if meta.pop(ENVIRONMENT_PROXY_KEY, None):
        meta.pop("proxy", None)
        if meta.pop(PROXY_AUTH_KEY, None) is not None:
            request.headers.pop(b"Proxy-Authorization", None)


def crawl_engine(crawler: Crawler) -> Any:
    """The crawler's ExecutionEngine; None before its crawl starts (Scrapy 2.18 and
    later raise RuntimeError there, which a handler of an early signal such as
    ``spider_opened`` of another crawler's extension would otherwise meet)."""
    try:
        return crawler.engine
    except RuntimeError:
        return None


def switch_off_downloader_delay(crawler: Crawler) -> None:
    """New downloader slots get no delay: the workbench waits the project's
    DOWNLOAD_DELAY between a host's requests, and the downloader would wait it again
    (``DOWNLOAD_SLOTS`` that name their own delay keep it). Called before the first
    request, when no slot exists yet; without an engine there is no downloader."""
    downloader = getattr(crawl_engine(crawler), "downloader", None)
    if downloader is None:
        return
    if not hasattr(downloader, "_delay"):
        raise IrlscrapyError(
            "this Scrapy version's downloader has no _delay; irlscrapy's adapter "
            "(irlscrapy/runtime/internals.py) needs updating"
        )
    downloader._delay = 0.0


def spider_busy(crawler: Crawler) -> bool:
    """Does the engine's scraper still handle a response (the spider's callback, or
    what it yielded)? An agent leaving a crawl waits for its last pages' links."""
    engine = crawl_engine(crawler)
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    return slot is not None and not slot.is_idle()


def engine_requests(crawler: Crawler) -> Container[Any] | None:
    """The requests the engine took from the scheduler and has not finished with: being
    downloaded, or their response or failure in the spider. An engine lets go of a
    request once what its callback or errback returned has been handled. None before
    the engine opens its spider, or after it closed it."""
    slot = getattr(crawl_engine(crawler), "_slot", None)
    return None if slot is None else slot.inprogress


def engine_slot(crawler: Crawler) -> Any:
    """The engine's slot (``nextcall``, ``closing``, ``close``); None while no spider
    runs."""
    engine = crawl_engine(crawler)
    if engine is None:
        return None
    try:
        return engine._slot  # None: not running a spider (closing or closed)
    except AttributeError:
        raise IrlscrapyError(
            "this Scrapy version has no ExecutionEngine._slot; irlscrapy's "
            "adapter (irlscrapy/runtime/internals.py) needs updating"
        ) from None


def on_engine_closing(crawler: Crawler, callback: Callable[[], None]) -> None:
    """Have ``callback()`` called when the engine starts closing the running spider
    (right after it logs "Closing spider", before it waits for the requests in flight);
    see "The engine starting to close" above. Call it while the spider runs
    (``spider_opened``)."""
    slot = engine_slot(crawler)
    if slot is None:
        raise IrlscrapyError("on_engine_closing: no spider is running")
    try:
        close = slot.close
    except AttributeError:
        raise IrlscrapyError(
            "this Scrapy version's engine slot has no close(); irlscrapy's adapter "
            "(irlscrapy/runtime/internals.py) needs updating"
        ) from None

    async def closing() -> None:
        callback()
        await close()

    slot.close = closing


def download_handlers(crawler: Crawler) -> list[Any]:
    """The download handlers the crawler's downloader has built so far (one per scheme
    in use; Scrapy builds them on the first request of their scheme)."""
    engine = crawl_engine(crawler)
    if engine is None:
        return []
    try:
        return list(engine.downloader.handlers._handlers.values())
    except AttributeError:
        raise IrlscrapyError(
            "this Scrapy version's downloader has no handlers._handlers; irlscrapy's "
            "adapter (irlscrapy/runtime/internals.py) needs updating"
        ) from None


def wake_engine(crawler: Crawler) -> None:
    """Have the engine ask for requests at its next turn (nothing while no spider runs)."""
    slot = engine_slot(crawler)
    if slot is not None:
        slot.nextcall.schedule()


class DownloadCut(IgnoreRequest):
    """A download ended by :meth:`PoliteHTTPDownloadHandler.cut_downloads`: the spider
    was closing. An IgnoreRequest, so Scrapy logs no error for it; its URL was not
    fetched (a crawl resumed with the same JOBDIR fetches it)."""


class EngineWaker:
    def __init__(self, crawler: Crawler, clock: Any) -> None:
        """``clock``: an IReactorTime (the reactor, or a task.Clock in tests)."""
        self.crawler = crawler
        self.clock = clock
        self._timer: Any = None  # the IDelayedCall of the wake-up
        self._when = float("inf")

    def wake(self) -> None:
        """Have the engine ask for requests at its next turn."""
        wake_engine(self.crawler)

    def wake_at(self, when: float) -> None:
        """Have the engine ask for requests at ``when`` (the clock's time), or earlier."""
        if self._timer is not None and self._timer.active() and self._when <= when:
            return
        self.cancel()
        self._when = when
        self._timer = self.clock.callLater(max(0.0, when - self.clock.seconds()), self._fire)

    def cancel(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        self._when = float("inf")

    def _fire(self) -> None:
        self._timer = None
        self._when = float("inf")
        self.wake()

    def engine_asks(self) -> bool:
        """Does the engine still ask the scheduler for requests: running, not paused,
        not closing the spider? (While it closes, work left in the frontier waits for
        a rerun, not for the engine.)"""
        slot = self._slot()
        engine = self.crawler.engine if slot is not None else None
        return (
            slot is not None
            and getattr(slot, "closing", None) is None
            and bool(getattr(engine, "running", False))
            and not getattr(engine, "paused", False)
        )

    def _slot(self) -> Any:
        return engine_slot(self.crawler)


class PoliteHTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 download handler without Twisted's automatic re-send (WARC
    capture builds on it: :class:`irlscrapy.warc.handler.RecordingDownloadHandler`)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.private_pool().retryAutomatically = False
        #: the downloads in flight (each a Deferred whose cancel ends it)
        self._downloads: set[Deferred[Response]] = set()
        #: the downloads cut_downloads() ended
        self._cut: set[Deferred[Response]] = set()

    async def download_request(self, request: Request) -> Response:
        download = deferred_from_coro(super().download_request(request))
        self._downloads.add(download)
        try:
            return await maybe_deferred_to_future(download)
        except (CancelledError, asyncio.CancelledError):
            # Twisted's when the reactor is not asyncio's; asyncio's when it is (the
            # download runs as an asyncio task, which cancelling the Deferred cancels)
            if download in self._cut:
                raise DownloadCut(f"download cut: the spider was closing ({request.url})") from None
            raise
        finally:
            self._downloads.discard(download)
            self._cut.discard(download)

    def cut_downloads(self) -> int:
        """End every download in flight (each fails with :class:`DownloadCut`); how many."""
        downloads = list(self._downloads)
        self._cut.update(downloads)
        for download in downloads:
            download.cancel()
        return len(downloads)

    def private_pool(self) -> Any:
        """The handler's HTTPConnectionPool (Scrapy's private ``_pool``)."""
        try:
            return self._pool
        except AttributeError:
            raise IrlscrapyError(
                "this Scrapy version's HTTP11DownloadHandler has no _pool; irlscrapy's "
                "adapter (irlscrapy/runtime/internals.py) needs updating"
            ) from None


# -- the response head as received ---------------------------------------------------------
#
# Twisted's parser hands Scrapy a response whose headers are already interpreted: names
# re-cased, repeats merged by name, and the connection headers (Content-Length,
# Transfer-Encoding, Connection, Keep-Alive) moved out of them. A WARC records what was
# exchanged, so the parser keeps each status and header line as it came (CR included)
# until the blank line. The head reaches the download handler by the only path that
# has both the Twisted response and the Scrapy request: the parser publishes it just
# before it fires the response Deferred, whose callbacks (Scrapy's agent) send the
# headers_received signal with the request in the same call stack; the handler takes it
# there and checks that the URLs agree. A head that does not arrive (a Scrapy change;
# the test in tests/component/test_internals.py catches it) leaves the recorder to
# rebuild the head from Scrapy's headers, counted as irl/warc/head_rebuilt.


class ReceivedHead(NamedTuple):
    """A response's status line and header lines, each with its line end, as received,
    through the blank line; and the Twisted request that was sent (method, target,
    headers as written, ``persistent``)."""

    head: bytes
    request: Any


_published: list[ReceivedHead] = []  # at most one: the head whose Deferred is firing


def take_received_head() -> ReceivedHead | None:
    """The head being delivered now (see above), once."""
    return _published.pop() if _published else None


def capture_heads(pool: Any) -> None:
    """Have ``pool``'s connections keep each response's head (see above)."""
    try:
        base_factory = http11._LenientHTTP11ClientFactory
        base_protocol = http11._LenientHTTP11ClientProtocol
        base_parser = http11._LenientHTTPClientParser
    except AttributeError:
        raise IrlscrapyError(
            "this Scrapy version has no _LenientHTTP11ClientFactory/_LenientHTTPClientParser; "
            "irlscrapy's adapter (irlscrapy/runtime/internals.py) needs updating"
        ) from None

    class HeadKeepingParser(base_parser):  # type: ignore[misc,valid-type]
        _irl_lines: list[bytes]

        def connectionMade(self) -> None:  # also the reset after a 1xx response
            self._irl_lines = []
            super().connectionMade()

        def lineReceived(self, line: bytes) -> None:
            self._irl_lines.append(line)
            super().lineReceived(line)

        def allHeadersReceived(self) -> None:
            if 100 <= self.response.code < 200:  # Twisted skips it and parses anew
                super().allHeadersReceived()
                return
            head = b"".join(line + b"\n" for line in self._irl_lines)
            _published[:] = [ReceivedHead(head, self.request)]
            try:
                super().allHeadersReceived()
            finally:
                _published.clear()

    class HeadKeepingProtocol(base_protocol):  # type: ignore[misc,valid-type]
        def request(self, request: Any) -> Any:
            d = super().request(request)
            # Scrapy's request() swapped its parser's class in the same way
            self._parser.__class__ = HeadKeepingParser
            self._parser._irl_lines = []
            return d

    class HeadKeepingFactory(base_factory):  # type: ignore[misc,valid-type]
        def buildProtocol(self, addr: Any) -> Any:
            return HeadKeepingProtocol(self._quiescentCallback)

    pool._factory = HeadKeepingFactory
