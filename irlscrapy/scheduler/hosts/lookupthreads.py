"""``LookupThreads``: the system resolver's blocking calls (``getaddrinfo``), off the
reactor, without holding the process at its exit.

Not the reactor's thread pool: Twisted runs every job queued there before the process
may exit, however long each takes, so a crawl that closed with host lookups queued
behind a slow or unreachable nameserver stayed alive, writing nothing, until the last
of them had timed out (about 40 s after "Spider closed" on a real web). Here at most
``size`` lookups run at a time, each on a daemon thread of its own; the rest wait in a
queue that :meth:`LookupThreads.close` empties. A lookup still running at the exit is
abandoned (a daemon thread does not hold the interpreter), and its Deferred never
fires: its caller's own timeout has answered for it already.

Invariants: *running <= size*; *a queued lookup starts only while running < size and
the pool is open*; *each Deferred fires at most once, on the reactor's thread*.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

#: Lookups at a time: Twisted's default thread pool size, which they used until now.
DEFAULT_SIZE = 10


class LookupThreads:
    def __init__(self, reactor: Any, size: int = DEFAULT_SIZE) -> None:
        """``reactor``: what answers are delivered through (``callFromThread``)."""
        assert size >= 1
        self.reactor = reactor
        self.size = size
        self.running = 0
        self.closed = False
        self._queue: deque[tuple[Callable[..., Any], tuple[Any, ...], Deferred[Any]]] = deque()

    def __len__(self) -> int:
        """Lookups queued, not started."""
        return len(self._queue)

    def __call__(self, f: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """``f(*args)`` on a thread; its result (or exception) through the Deferred."""
        d: Deferred[Any] = Deferred()
        if not self.closed:
            self._queue.append((f, args, d))
            self._start()
        return d

    def close(self) -> None:
        """Drop the lookups not started; the running ones are abandoned."""
        self.closed = True
        self._queue.clear()

    def _start(self) -> None:
        while self.running < self.size and self._queue and not self.closed:
            f, args, d = self._queue.popleft()
            self.running += 1
            threading.Thread(
                target=self._run, args=(f, args, d), name="irl-lookup", daemon=True
            ).start()

    def _run(self, f: Callable[..., Any], args: tuple[Any, ...], d: Deferred[Any]) -> None:
        try:
            outcome: Any = f(*args)
        except BaseException:
            outcome = Failure()
        self.reactor.callFromThread(self._done, d, outcome)

    def _done(self, d: Deferred[Any], outcome: Any) -> None:
        self.running -= 1
        if not self.closed and not d.called:
            if isinstance(outcome, Failure):
                d.errback(outcome)
            else:
                d.callback(outcome)
        self._start()
