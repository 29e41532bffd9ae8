"""``MergeThread``: the one worker thread DRUM merges run in, below the reactor's priority.

A merge is seconds of partitioning, sorting and writing the disk cache's runs. In
Twisted's shared thread pool it competed with the reactor thread for the crawler's core
on equal terms, and every reactor turn that ran meanwhile took up to twice as long
(measured in issue 4: most reactor stalls of 50-130 ms overlapped a merge). This thread
lowers its own CPU priority by :data:`NICENESS` (:class:`irlscrapy.runtime.workers.NicedWorker`),
so the kernel gives the reactor thread the core whenever both can run; the merge uses
what the reactor leaves. One thread: merges run one at a time anyway (DRUMDupeFilter
chains them).

A merge's arrays are large and short-lived: the thread pins glibc's mmap threshold when
it starts and returns the free heap to the OS before and after each merge
(:mod:`irlscrapy.storage.glibcheap`), so RSS does not keep what one merge, or the delivery of
its results, used. (Not on the reactor: ``malloc_trim`` on a heap of a few hundred MB
held it for milliseconds, which showed in the crawl's median reactor lag.) After each
merge it also pages out the LevelDB table pages read meanwhile
(:mod:`irlscrapy.storage.tablepages`).

Started on first use; :meth:`stop` joins it (the dupefilter's close, and the reactor's
shutdown as a fallback).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from irlscrapy.runtime.workers import NicedWorker
from irlscrapy.storage.glibcheap import pin_mmap_threshold, release_free_memory
from irlscrapy.storage.tablepages import release_table_pages

#: Added to the merge thread's nice value (0-19; 10: about a tenth of the core when the
#: reactor thread also wants it).
NICENESS = 10


class MergeThread(NicedWorker):
    def __init__(self, reactor: Any = None) -> None:
        super().__init__(
            "irlscrapy-drum-merge",
            NICENESS,
            reactor,
            on_start=pin_mmap_threshold,
            around=_releasing_memory,
        )


def _releasing_memory(f: Callable[..., Any], *args: Any) -> Any:
    release_free_memory()  # what the last delivery (on the reactor) left in the heap
    try:
        return f(*args)
    finally:
        release_free_memory()  # what this merge's arrays left
        release_table_pages()  # what its lookups mapped of the stores' tables
