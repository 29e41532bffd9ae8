"""The one module that touches private parts of Scrapy.

1. Waking the engine (:class:`EngineWaker`), through the engine's private ``nextcall``.
2. A download handler that never re-sends a request on its own
   (:class:`PoliteHTTPDownloadHandler`), through the HTTP/1.1 handler's private ``_pool``.

tests/component/test_internals.py fails loudly if a Scrapy upgrade moves either.

Waking the engine
-----------------

Scrapy's engine asks the scheduler for requests when something happens (a download
ends, a request is enqueued) and otherwise only every 5 seconds (its heartbeat). A
politeness scheduler knows when its next host becomes due, so it wakes the engine then:
one timer, set to the earliest due time, moved when an earlier one comes up.

Scrapy has no public API for this; ``engine._slot.nextcall`` (a ``CallLaterOnce``) is
what the engine itself calls.

No silent re-sends
------------------
Twisted's ``HTTPConnectionPool`` re-sends a GET at once, on a new connection, when a
reused keep-alive connection fails before any answer (``retryAutomatically``). The
server then sees two requests with no delay between them: a politeness violation the
scheduler cannot see. Scrapy's RetryMiddleware retries such failures anyway, through
the scheduler and its delays, so the handler turns Twisted's re-send off.
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler

from irlscrapy.exceptions import IrlscrapyError


class EngineWaker:
    def __init__(self, crawler: Crawler, clock: Any) -> None:
        """``clock``: an IReactorTime (the reactor, or a task.Clock in tests)."""
        self.crawler = crawler
        self.clock = clock
        self._timer: Any = None  # the IDelayedCall of the wake-up
        self._when = float("inf")

    def wake(self) -> None:
        """Have the engine ask for requests at its next turn."""
        nextcall = self._nextcall()
        if nextcall is not None:
            nextcall.schedule()

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

    def _nextcall(self) -> Any:
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy 2.19 raises when no crawl has started
            return None
        if engine is None:
            return None
        try:
            slot = engine._slot
        except AttributeError:
            raise IrlscrapyError(
                "this Scrapy version has no ExecutionEngine._slot; irlscrapy's "
                "adapter (irlscrapy/internals.py) needs updating"
            ) from None
        if slot is None:
            return None  # the engine is not running a spider (closing or closed)
        return slot.nextcall


class PoliteHTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 download handler without Twisted's automatic re-send."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        try:
            pool = self._pool
        except AttributeError:
            raise IrlscrapyError(
                "this Scrapy version's HTTP11DownloadHandler has no _pool; irlscrapy's "
                "adapter (irlscrapy/internals.py) needs updating"
            ) from None
        pool.retryAutomatically = False
