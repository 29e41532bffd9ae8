"""Worker threads below the reactor's priority, and the reactor they report to.

:func:`installed_reactor` is the one way irlscrapy reaches the reactor Scrapy
installed: imported when first needed (importing ``twisted.internet.reactor`` earlier
would install Twisted's default reactor before Scrapy installs its own).

:class:`NicedWorker` runs blocking work (DRUM merges, WARC writing) in one thread of its
own that lowers its CPU priority before each job. Linux gives each thread its own nice
value (raising it needs no privilege), so the kernel gives the core to the reactor
thread whenever both can run: the worker uses what the reactor leaves. Elsewhere (or in
a sandbox that forbids it) the thread runs at the process's priority. The thread starts
on first use; :meth:`NicedWorker.stop` joins it (its owner's close, and the reactor's
shutdown as a fallback).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.python.threadpool import ThreadPool


def installed_reactor() -> Any:
    """The reactor Scrapy installed (see the module docstring)."""
    from twisted.internet import reactor

    return reactor


def lower_this_thread(niceness: int) -> None:
    """Raise the calling thread's nice value to ``niceness`` (0-19) if it is lower."""
    thread = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, thread) < niceness:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except OSError:
        pass


class NicedWorker:
    def __init__(
        self,
        name: str,
        niceness: int,
        reactor: Any = None,
        on_start: Callable[[], object] = lambda: None,
        around: Callable[..., Any] | None = None,
    ) -> None:
        """``name``: the thread's; ``niceness``: its nice value (0-19); ``reactor``: None
        for the installed one; ``on_start``: run (on the caller's thread) when the thread
        starts; ``around(f, *args)``: runs each job in the thread (default: ``f(*args)``)."""
        self.name = name
        self.niceness = niceness
        self._reactor = reactor
        self.on_start = on_start
        self.around = around
        self._pool: ThreadPool | None = None

    @property
    def reactor(self) -> Any:
        if self._reactor is None:
            self._reactor = installed_reactor()
        return self._reactor

    def __call__(self, f: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """Run ``f(*args)`` in the worker thread; its result or failure, on the reactor."""
        if self._pool is None:
            self.on_start()
            self._pool = ThreadPool(1, 1, self.name)
            self._pool.start()
            self.reactor.addSystemEventTrigger("during", "shutdown", self.stop)
        return threads.deferToThreadPool(self.reactor, self._pool, self._niced, f, *args)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool = None

    def _niced(self, f: Callable[..., Any], *args: Any) -> Any:
        lower_this_thread(self.niceness)
        return self.around(f, *args) if self.around is not None else f(*args)
