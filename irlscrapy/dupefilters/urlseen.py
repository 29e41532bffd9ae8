"""``DRUMDupeFilter``: Scrapy's DUPEFILTER_CLASS on a DRUM, with RAM bounded.

Use it with Scrapy's stock scheduler::

    DUPEFILTER_CLASS = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"

``request_seen`` must answer at once, so the filter does not wait for DRUM's batched
check: it looks the key up in the keys submitted since the last merge (a set in RAM)
and in the merged cache (one LevelDB chunk, :meth:`DRUM.contains`), then submits unseen
keys to DRUM as updates. When ``IRL_URLSEEN_MEMORY / 128`` keys are pending, they are
merged in a worker thread while new keys go on arriving; the reactor never waits for a
merge, except once at start-up for a merge a crash left unfinished.

Files: ``<state dir>/urlseen/`` is a DRUM directory (see irlscrapy.storage.drum),
in the crawl's state directory (:mod:`irlscrapy.state.directory`: ``IRL_STATE_DIR``, else
``JOBDIR``, else a temporary directory removed when the crawl closes). Rerunning with
the same directory resumes: every key whose ``request_seen`` returned False is still
known, a kill -9 included.

Stats: ``dupefilter/filtered`` (as Scrapy's RFPDupeFilter), ``irl/urlseen/merges``,
``irl/urlseen/keys`` (keys in the merged cache after each merge), and what its open
mended after a kill (``irl/recovered/<kind>/urlseen``: :mod:`irlscrapy.storage.recovery`).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.statscollectors import StatsCollector
from scrapy.utils.request import referer_str
from twisted.internet import defer

from irlscrapy import defaults
from irlscrapy.dupefilters.identity import RequestIdentity
from irlscrapy.dupefilters.urlkey import url_keys
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.mergethread import MergeThread
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage.drum import CHECK_UPDATE, DRUM, UPDATE, ResultBatch
from irlscrapy.storage.drumsizing import DrumSizes
from irlscrapy.storage.recovery import Recoveries

logger = logging.getLogger(__name__)
#: The duplicates are logged where Scrapy's RFPDupeFilter logs them, so a project's
#: logging set-up for them (a level, a filter) keeps working.
duplicates_logger = logging.getLogger("scrapy.dupefilters")

PENDING_KEY_BYTES = 128  # RAM per pending key held in a Python set, with slack


def _release(drum: DRUM, merge_thread: MergeThread | None, state: StateDirectory | None) -> None:
    """Close what an open URLseen holds: its merge thread, its DRUM (files, LevelDB,
    lock) and its hold on its state directory (a temporary one goes with its last
    holder). Run by close(), or when a URLseen that was never closed is
    garbage-collected (its crawl failed to start, a test failed): then too no file is
    left open (no ResourceWarning), no directory locked, no temporary left."""
    if merge_thread is not None:
        merge_thread.stop()
    drum.close()
    if state is not None:
        state.close()


#: the finalizer that runs _release (weakref.finalize is not subscriptable at run time)
_Release: TypeAlias = (
    "weakref.finalize[[DRUM, MergeThread | None, StateDirectory | None], DRUMDupeFilter]"
)


#: URLseen merges early once the URLs pending are this share of its store ...
EARLY_MERGE_SHARE = 0.25
#: ... and at least this many (DRUMDupeFilter.should_merge).
EARLY_MERGE_MIN = 10_000


class DRUMDupeFilter(BaseDupeFilter):
    def __init__(
        self,
        path: Path | None,
        identity: RequestIdentity,
        *,
        memory: int = 64 << 20,
        debug: bool = False,
        stats: StatsCollector | None = None,
        in_thread: Callable[..., defer.Deferred[Any]] | None = None,
        state: StateDirectory | None = None,
    ) -> None:
        #: the state directory URLseen is ``urlseen/`` in (the crawl's; without it and
        #: without ``path``, a temporary one of its own); None: ``path`` itself
        if path is None and state is None:
            state = StateDirectory(None)
        self.state = state
        if state is not None and state.path is not None:
            path = state.path / "urlseen"  # configured: known before open()
        self.path = path
        self.identity = identity
        self.debug = debug
        self.stats = stats
        self.pending_limit = max(1, memory // PENDING_KEY_BYTES)
        self.sizes = DrumSizes.from_memory(memory)
        self.drum: DRUM | None = None
        self.logdupes = True
        self._pending: set[int] = set()  # submitted, not in a merge yet
        self._merging: set[int] = set()  # in the merge running now
        self._merge: defer.Deferred[Any] | None = None
        self._pending_at_flush = 0  # tuples pending when the running merge was asked for
        # runs a merge off the reactor thread (the default: in a low-priority thread)
        self._merge_thread: MergeThread | None = None
        if in_thread is None:
            self._merge_thread = in_thread = MergeThread()
        self._in_thread = in_thread
        #: set by open(), see _release
        self._release: _Release | None
        self._release = None
        #: True when a consumer reads results() and acknowledges them itself (the IRL
        #: scheduler sets it before open()); False for request_seen(), which needs no results
        self.batched = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DRUMDupeFilter:
        settings = crawler.settings
        return cls(
            None,
            RequestIdentity.from_crawler(crawler),
            memory=defaults.get(settings, "IRL_URLSEEN_MEMORY"),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            stats=crawler.stats,
            state=StateDirectory.of(crawler),
        )

    def open(self) -> None:
        if self.state is not None:
            self.path = self.state.open() / "urlseen"
        assert self.path is not None
        self.drum = DRUM(
            self.path,
            buckets=self.sizes.buckets,
            bucket_bytes=self.sizes.bucket_bytes,
            spill_bytes=self.sizes.spill_bytes,
        )
        recoveries = Recoveries()  # (inside the IRL scheduler's open, it collects them)
        try:
            with recoveries.collect():
                self.drum.open()
        finally:
            recoveries.publish(self.stats, self.path.parent)
        self._release = weakref.finalize(self, _release, self.drum, self._merge_thread, self.state)
        if self.drum.should_merge():  # a crash left submitted keys unmerged
            logger.info(
                "merging %d keys left by the previous run in %s", self.drum.pending, self.path
            )
            self.drum.merge()
        if not self.batched:
            self.drum.ack_merged()

    def request_seen(self, request: Request) -> bool:
        assert self.drum is not None, "open() first"
        key = self.identity.request_key(request)
        if key in self._pending or key in self._merging or self.drum.contains(key):
            return True
        self.drum.submit([key], UPDATE)
        self._pending.add(key)
        if len(self._pending) >= self.pending_limit and self._merge is None:
            self._start_merge()
        return False

    def _start_merge(self) -> None:
        assert self.drum is not None
        self._merging, self._pending = self._pending, set()
        self._merge = self._in_thread(self.drum.merge)
        self._merge.addCallback(self._merged)

    def _merged(self, merged: int) -> None:
        assert self.drum is not None
        self.drum.ack_merged()
        self._merging = set()
        self._flushed(merged)

    # -- the batched asynchronous API (the IRL scheduler's) ------------------------------
    # One instance serves one mode: request_seen(), or these methods with ``batched``
    # set before open() (then results are acknowledged only by the consumer).

    def submit_urls(self, urls: Sequence[str], aux: Sequence[bytes] | None = None) -> int:
        """Check+update URL strings in one batch (the Links fast path); return its
        sequence number. ``aux`` (default: the URLs) comes back with the results, which
        :meth:`results` delivers after a merge."""
        assert self.drum is not None, "open() first"
        if not self.identity.url_only:
            raise ConfigurationError(
                "a custom REQUEST_FINGERPRINTER_CLASS keys requests by more than their URL: "
                "URLs must become Requests before they are checked"
            )
        if aux is None:
            aux = [u.encode() for u in urls]
        return self.drum.submit(url_keys(urls), CHECK_UPDATE, aux=aux)

    def submit_requests(self, requests: Sequence[Request], aux: Sequence[bytes]) -> int:
        """Check+update Requests (by :class:`RequestIdentity`) in one batch."""
        return self.submit_keyed([self.identity.request_key(r) for r in requests], aux)

    def submit_keyed(self, keys: np.ndarray | Sequence[int], aux: Sequence[bytes]) -> int:
        """Check+update keys the caller made, with their aux (handed-over URLs:
        irlscrapy.scheduler.intake.Intake.receive)."""
        assert self.drum is not None, "open() first"
        return self.drum.submit(keys, CHECK_UPDATE, aux=aux)

    def submit_keys(self, keys: np.ndarray) -> int:
        """Insert keys as seen, with no check and an empty aux each (what an agent that
        left the crawl had seen: irlscrapy.distributed.leave)."""
        assert self.drum is not None, "open() first"
        return self.drum.submit(keys, UPDATE, aux=[b""] * len(keys))

    @property
    def pending(self) -> int:
        """Tuples submitted and not merged yet."""
        return self.drum.pending if self.drum is not None else 0

    def should_merge(self) -> bool:
        """True when DRUM's fullest bucket is full (see DRUM), or when what is pending
        is :data:`EARLY_MERGE_SHARE` of the store and at least :data:`EARLY_MERGE_MIN`.

        The early merge is for a young crawl: URLs wait in URLseen until a merge, where
        BEAST cannot order them, and with the buckets' rule alone a crawl of 100,000
        pages merged every 40,000 pages (800,000 URLs pending) while BEAST, left with
        the farms' endless URLs, fed the crawler spam (BENCHMARKS.md, issue 19). A merge
        costs in proportion to the store, so merging a batch a quarter of its size
        costs at most a few times the store's size over the whole crawl; once the store
        outgrows four full batches, the buckets fill first and nothing changes."""
        drum = self.drum
        if drum is None:
            return False
        early = max(EARLY_MERGE_MIN, drum.stored_keys * EARLY_MERGE_SHARE)
        return drum.should_merge() or drum.pending >= early

    def behind(self) -> bool:
        """A merge is running and a whole batch more has been submitted since it was
        asked for: URLseen is not keeping up (its merge thread is starved of CPU, or the
        disk is slow), and what is submitted now only grows the backlog on disk. The IRL
        scheduler holds fetches while this is true."""
        drum = self.drum
        return (
            self._merge is not None
            and drum is not None
            and drum.pending - self._pending_at_flush >= drum.batch_tuples
        )

    def flush(self) -> defer.Deferred[int]:
        """Merge everything submitted, in a worker thread (also the early flush a
        starving crawl asks for). Fires with the number of tuples merged."""
        assert self.drum is not None, "open() first"
        if self._merge is not None:  # one merge at a time; chain the next after it
            return self._merge.addCallback(lambda _: self.flush())
        self._pending_at_flush = self.drum.pending
        merge = self._merge = self._in_thread(self.drum.merge)
        merge.addBoth(self._flushed)
        return merge

    def _flushed(self, result: Any) -> Any:
        self._merge = None
        if self.stats is not None and self.drum is not None:
            self.stats.inc_value("irl/urlseen/merges")
            self.stats.set_value("irl/urlseen/keys", self.drum.stored_keys)
        return result

    def results(self) -> Iterator[ResultBatch]:
        """Merged batches, in order; after a restart, the unacknowledged ones again."""
        assert self.drum is not None, "open() first"
        return self.drum.results()

    def ack(self, seq: int) -> None:
        """The consumer has durably stored the results of every batch up to ``seq``."""
        assert self.drum is not None, "open() first"
        self.drum.ack(seq)

    def close(self, reason: str) -> defer.Deferred[None] | None:
        if self._merge is None:
            self._close_drum()
            return None
        done: defer.Deferred[None] = defer.Deferred()
        self._merge.addBoth(lambda _: self._close_drum())
        self._merge.addBoth(done.callback)
        return done

    def _close_drum(self) -> None:
        if self._release is not None:
            self._release()  # once: a second call does nothing
        elif self._merge_thread is not None:  # never opened
            self._merge_thread.stop()
        self.drum = None

    def log(self, request: Request, spider: Spider) -> None:
        if self.debug:
            duplicates_logger.debug(
                "Filtered duplicate request: %(request)s (referer: %(referer)s)",
                {"request": request, "referer": referer_str(request)},
                extra={"spider": spider},
            )
        elif self.logdupes:
            duplicates_logger.debug(
                "Filtered duplicate request: %(request)s - no more duplicates will be "
                "shown (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": request},
                extra={"spider": spider},
            )
            self.logdupes = False
        if self.stats is not None:
            self.stats.inc_value("dupefilter/filtered")
