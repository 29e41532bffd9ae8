"""Waking Scrapy's engine: the one module that touches the engine's private ``nextcall``.

Scrapy's engine asks the scheduler for requests when something happens (a download
ends, a request is enqueued) and otherwise only every 5 seconds (its heartbeat). A
politeness scheduler knows when its next host becomes due, so it wakes the engine then:
one timer, set to the earliest due time, moved when an earlier one comes up.

Scrapy has no public API for this; ``engine._slot.nextcall`` (a ``CallLaterOnce``) is
what the engine itself calls. tests/component/test_engineclock.py fails loudly if a
Scrapy upgrade moves it.
"""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from irlscrapy.exceptions import IrlscrapyError


class EngineWaker:
    def __init__(self, crawler: Crawler, clock: IReactorTime) -> None:
        self.crawler = crawler
        self.clock = clock
        self._timer: IDelayedCall | None = None
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
        engine = self.crawler.engine
        if engine is None:
            return None
        try:
            slot = engine._slot
        except AttributeError:
            raise IrlscrapyError(
                "this Scrapy version has no ExecutionEngine._slot; irlscrapy's engine "
                "adapter (irlscrapy/scheduler/engineclock.py) needs updating"
            ) from None
        if slot is None:
            return None  # the engine is not running a spider (closing or closed)
        return slot.nextcall
