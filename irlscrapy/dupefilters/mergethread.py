"""``MergeThread``: the one worker thread DRUM merges run in, below the reactor's priority.

A merge is seconds of partitioning, sorting and LevelDB writes. In Twisted's shared
thread pool it competed with the reactor thread for the crawler's core on equal terms,
and every reactor turn that ran meanwhile took up to twice as long (measured in issue
4: most reactor stalls of 50-130 ms overlapped a merge). This thread lowers its own
CPU priority by :data:`NICENESS` (Linux's per-thread nice value; raising it needs no
privilege) before its first merge, so the kernel gives the reactor thread the core
whenever both can run; the merge uses what the reactor leaves. One thread: merges run
one at a time anyway (DRUMDupeFilter chains them).

A merge's arrays are large and short-lived: the thread pins glibc's mmap threshold when
it starts and returns the free heap to the OS before and after each merge
(:mod:`irlscrapy.glibcheap`), so RSS does not keep what one merge, or the delivery of
its results, used. (Not on the reactor: ``malloc_trim`` on a heap of a few hundred MB
held it for milliseconds, which showed in the crawl's median reactor lag.)

Started on first use; :meth:`stop` joins it (the dupefilter's close, and the reactor's
shutdown as a fallback).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.python.threadpool import ThreadPool

from irlscrapy.glibcheap import pin_mmap_threshold, release_free_memory
from irlscrapy.threadpriority import lower_this_thread

#: Added to the merge thread's nice value (0-19; 10: about a tenth of the core when the
#: reactor thread also wants it).
NICENESS = 10


class MergeThread:
    def __init__(self, reactor: Any = None) -> None:
        self._reactor = reactor  # None: the installed reactor, imported when first needed
        self._pool: ThreadPool | None = None

    def __call__(self, f: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """Run ``f(*args)`` in the merge thread; its result or failure, on the reactor."""
        if self._pool is None:
            if self._reactor is None:
                from twisted.internet import reactor

                self._reactor = reactor
            pin_mmap_threshold()
            self._pool = ThreadPool(1, 1, "irlscrapy-drum-merge")
            self._pool.start()
            self._reactor.addSystemEventTrigger("during", "shutdown", self.stop)
        return threads.deferToThreadPool(self._reactor, self._pool, _niced, f, *args)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool = None


def _niced(f: Callable[..., Any], *args: Any) -> Any:
    lower_this_thread(NICENESS)
    release_free_memory()  # what the last delivery (on the reactor) left in the heap
    try:
        return f(*args)
    finally:
        release_free_memory()  # what this merge's arrays left
