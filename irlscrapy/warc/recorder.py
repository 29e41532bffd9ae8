"""ExchangeRecorder: WARC records and content dedup for every response, off the reactor.

Theory of operation
-------------------
The download handler (:class:`irlscrapy.warc.handler.RecordingDownloadHandler`) passes
each response here as it was received, before any downloader middleware: the body
still compressed, the head as it came off the wire (:mod:`irlscrapy.warc.exchange`
says exactly what is recorded). On the reactor, :meth:`ExchangeRecorder.record` only
gathers references (bytes already in memory) into a queue. One worker thread, niced
(:data:`NICENESS`) so that a saturated core goes to the reactor first, takes the whole
queue as a batch when it is idle, at most every :data:`BATCH_SECONDS`, so batches grow
with the load. (A worker process instead, spawned, niced or at
SCHED_IDLE, kept 0.49-0.69 of the crawl's pages/s on the one-core benchmark against
the thread's 0.66-0.80: BENCHMARKS.md, "WARC files and content dedup".) For a batch it:

1. hashes each body (SHA-1; hashlib releases the GIL);
2. with ``IRL_CONTENTSEEN_ENABLED``, checks the digests against ContentSeen
   (:mod:`irlscrapy.dupefilters.contentseen`);
3. with ``IRL_WARC_DIR``, writes each exchange (request + response records, or request
   + revisit when dedup found the body before), then hands the files to the OS;

and the reactor gets the batch's verdicts and counts when it is done. It releases the
verdicts one per reactor turn (:class:`PacedRelease`): fired together, a batch's
responses would all go on to the spider in one turn, a burst of parsing that makes
every timer of the crawl late and the load governor cut the fetches in flight.

``record`` returns at once, unless the queue holds more than ``IRL_WARC_QUEUE_BYTES``
of bodies: then it waits for the worker (the crawl slows to the disk's pace instead of
filling RAM). So the fetch ends, and the scheduler frees its host, IP and load-governor
slot, without waiting for the worker. With dedup on, the response then waits for its
verdict in :class:`~irlscrapy.middlewares.duplicates.DuplicateContentMiddleware`, inside every
stock downloader middleware but the HTTP cache (at most :data:`BATCH_SECONDS` and one
batch's work, holding only one of the engine's ``CONCURRENT_REQUESTS``), so every later
middleware and the spider see ``response.meta["irl_duplicate_of"]`` (the first
capture's WARC-Date) on a duplicate.
Responses no spider sees (robots.txt fetches: :func:`is_flagged`) do not wait.

What a crash can lose (kill -9): the exchanges in the queue and in the batch being
written (at most ``IRL_WARC_QUEUE_BYTES`` plus one batch). Their pages were delivered
to the spider, so a resumed crawl does not fetch them again, except those still in
the downloader at the kill. The files' torn tails are cut on the next open
(:mod:`irlscrapy.warc.files`); ContentSeen's side is in its module docstring.

A failure in the worker (a full disk, an unwritable directory) is logged once, stops
recording, and closes the spider with reason ``warc_error``: a crawl does not go on
archiving nothing.

Stats: ``irl/warc/records`` (responses and revisits), ``irl/warc/revisits``,
``irl/warc/bytes`` (compressed), ``irl/warc/files`` (files finished),
``irl/warc/head_rebuilt`` (responses whose received head did not reach the recorder),
``irl/content/unique``, ``irl/content/duplicates``; what opening the files mended
(``irl/recovered/warc_file``, ``irl/recovered/<kind>/contentseen``:
:mod:`irlscrapy.storage.recovery`), and ``irl/given_up/warc_error`` when recording fails.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.log import failure_to_exc_info
from scrapy.utils.misc import load_object
from twisted.internet import defer
from twisted.python.failure import Failure

from irlscrapy import defaults
from irlscrapy.domains import host_name, url_host
from irlscrapy.dupefilters.contentseen import ContentSeen, Verdict
from irlscrapy.runtime.closing import close_spider
from irlscrapy.runtime.crawlservices import shared
from irlscrapy.runtime.internals import ReceivedHead
from irlscrapy.runtime.mediatype import media_type
from irlscrapy.runtime.workers import NicedWorker
from irlscrapy.scheduler.metakeys import ADDRESS_KEY, ROBOTS_KEY
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage.recovery import Recoveries
from irlscrapy.version import __version__
from irlscrapy.warc import exchange
from irlscrapy.warc.files import Capture, WarcFiles

logger = logging.getLogger(__name__)

#: ``request.meta`` key set on a response whose body was downloaded before: the
#: WARC-Date of the first capture.
DUPLICATE_KEY = "irl_duplicate_of"
FAILED_REASON = "warc_error"
#: Batches begin at most this often: each costs the reactor a thread hand-off and a
#: wake-up, whatever its size, and a response flagged by DuplicateContentMiddleware
#: waits at most about this long (plus the batch's work) for its verdict.
BATCH_SECONDS = 0.05
#: The worker thread's nice value (:mod:`irlscrapy.runtime.workers`): on a saturated core
#: it writes with what the reactor leaves.
NICENESS = 10


@dataclass
class _Pending:
    capture: Capture
    verdict: defer.Deferred[Verdict] | None  # fired by the worker when dedup is on


class ExchangeRecorder:
    def __init__(
        self,
        *,
        files: WarcFiles | None,
        seen: ContentSeen | None,
        stats: Any,
        address_of: Callable[[Request, Response], str | None],
        queue_bytes: int,
        close_spider: Callable[[str], None],
        clock: Callable[[], float] = time.time,
        reactor: Any = None,
        state: StateDirectory | None = None,
    ) -> None:
        self.files = files
        self.seen = seen
        self.stats = stats
        self.address_of = address_of
        self.queue_bytes = queue_bytes
        self.close_spider = close_spider
        self.clock = clock
        #: the crawl's state directory, where content dedup keeps ContentSeen
        #: (``contentseen/``), opened at the first exchange; None: ``seen`` as given
        self.state = state
        self._queue: list[_Pending] = []
        self._queued_bytes = 0
        self._busy = False
        self._failed = False
        self._opened = False
        self._closed = False
        self._closing = False  # close() began: batches go at once
        self._timer: Any = None  # the IDelayedCall of a batch put off (BATCH_SECONDS)
        self._last_batch = float("-inf")  # reactor time the last batch began
        self._worker = NicedWorker("irlscrapy-warc", NICENESS, reactor)
        self._waiters: list[defer.Deferred[None]] = []  # for room in the queue, or idle
        #: verdicts not yet taken by DuplicateContentMiddleware (weak: a response that
        #: never reaches it does not keep its entry)
        self._verdicts: WeakKeyDictionary[Request, defer.Deferred[Verdict]] = WeakKeyDictionary()
        self._release = PacedRelease(lambda: self._worker.reactor)

    @classmethod
    def of(cls, crawler: Crawler) -> ExchangeRecorder | None:
        """The crawler's one recorder, shared by the download handler and
        DuplicateContentMiddleware; built on first use (None: both features off)."""
        return shared(crawler, cls, lambda: cls.from_crawler(crawler))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ExchangeRecorder | None:
        """None when neither ``IRL_WARC_DIR`` nor ``IRL_CONTENTSEEN_ENABLED`` is set."""
        settings = crawler.settings
        warc_dir = defaults.get(settings, "IRL_WARC_DIR")
        dedup = defaults.get(settings, "IRL_CONTENTSEEN_ENABLED")
        if not warc_dir and not dedup:
            return None
        files = None
        if warc_dir:
            files = WarcFiles(
                warc_dir,
                prefix=defaults.get(settings, "IRL_WARC_PREFIX"),
                max_size=defaults.get(settings, "IRL_WARC_MAX_SIZE"),
                cdxj=defaults.get(settings, "IRL_WARC_CDXJ"),
                gzip_level=defaults.get(settings, "IRL_WARC_GZIP_LEVEL"),
                info=_warcinfo(settings),
            )
        recorder = cls(
            files=files,
            seen=None,
            stats=crawler.stats,
            address_of=_address_finder(crawler),
            queue_bytes=defaults.get(settings, "IRL_WARC_QUEUE_BYTES"),
            close_spider=lambda reason: close_spider(crawler, reason),
            state=StateDirectory.of(crawler) if dedup else None,
        )
        # Downloads are over when the spider closes: finish the files then, so the stats
        # Scrapy dumps next count them (the handler's own close comes later, at
        # engine_stopped, and finds nothing left to do).
        crawler.signals.connect(recorder.close, signal=signals.spider_closed)
        return recorder

    @property
    def reactor(self) -> Any:
        return self._worker.reactor

    # -- the reactor's side ----------------------------------------------------------------
    async def record(
        self, request: Request, response: Response, head: ReceivedHead | None
    ) -> Response:
        """Queue the exchange; with dedup, mark a duplicate's meta before returning."""
        if self._failed or self._closed:
            return response
        if not self._opened:  # the worker opens the files before its first batch
            self._opened = True
            root = self.state.open() if self.state is not None else None
            if root is not None:
                self.seen = ContentSeen(root / "contentseen")
            recoveries = Recoveries()
            opened = self._run(self._open, recoveries)

            def publish(result: Any) -> Any:  # (a failed open mended files too)
                recoveries.publish(self.stats, root)
                return result

            opened.addBoth(publish)
            opened.addErrback(self._fail)
        pending = _Pending(self._capture(request, response, head), None)
        if self.seen is not None and is_flagged(request):
            pending.verdict = defer.Deferred()
        self._queue.append(pending)
        self._queued_bytes += len(pending.capture.payload)
        self._kick()
        if pending.verdict is not None:
            self._verdicts[request] = pending.verdict
        while self._queued_bytes > self.queue_bytes and not self._failed:
            await maybe_deferred_to_future(self._wait())
        return response

    def _capture(self, request: Request, response: Response, head: ReceivedHead | None) -> Capture:
        body = response.body
        if head is not None:
            sent = head.request
            request_head = exchange.request_block(
                sent.method, sent.uri, sent.headers.getAllRawHeaders(), b"", sent.persistent
            )
            response_head = exchange.record_head(head.head, len(body))
        else:
            self.stats.inc_value("irl/warc/head_rebuilt")
            host = (request.headers.get(b"Host") or _netloc(response.url)).strip()
            request_head = exchange.request_block(
                request.method.encode("ascii"),
                response.url.encode("ascii"),
                [(b"Host", [host]), *request.headers.items()],
                b"",
                True,
            )
            response_head = exchange.rebuilt_head(
                response.protocol or "HTTP/1.1", response.status, response.headers.items()
            )
        return Capture(
            url=response.url,
            date=self.clock(),
            request_head=request_head,
            request_body=request.body,
            response_head=response_head,
            payload=body,
            payload_digest="",  # the worker computes it
            ip_address=self.address_of(request, response),
            truncated="disconnect" if "dataloss" in response.flags else None,
            mime=media_type(response.headers),
        )

    def _kick(self) -> None:
        """Hand the queue to the worker as one batch, if it is idle and the last batch
        began at least :data:`BATCH_SECONDS` ago (else when that time comes)."""
        if self._busy or not self._queue or self._failed or self._timer is not None:
            return
        now = self.reactor.seconds()
        wait = self._last_batch + BATCH_SECONDS - now
        if wait > 0 and not self._closing:
            self._timer = self.reactor.callLater(wait, self._timer_fired)
            return
        self._last_batch = now
        batch, self._queue = self._queue, []
        self._busy = True
        d = self._run(self._work, batch)
        d.addCallbacks(self._done, self._worker_failed, callbackArgs=(batch,))

    def _timer_fired(self) -> None:
        self._timer = None
        self._kick()

    async def verdict(self, request: Request) -> Verdict | None:
        """The content-dedup verdict on ``request``'s response, once it is known (None
        without dedup, or for a response the recorder did not see)."""
        d = self._verdicts.pop(request, None)
        if d is None:
            return None
        verdict: Verdict = await maybe_deferred_to_future(d)
        return verdict

    def _answer(self, batch: list[_Pending], verdicts: list[Verdict]) -> None:
        for pending, verdict in zip(batch, verdicts, strict=True):
            duplicate = "duplicates" if verdict.duplicate else "unique"
            self.stats.inc_value(f"irl/content/{duplicate}")
            if pending.verdict is not None:
                self._release.fire(pending.verdict, verdict)
                pending.verdict = None

    def _done(self, result: tuple[list[Verdict], int, int, int], batch: list[_Pending]) -> None:
        verdicts, records, revisits, size = result
        if self.seen is not None:
            self._answer(batch, verdicts)
        if records:
            self.stats.inc_value("irl/warc/records", records)
            self.stats.inc_value("irl/warc/revisits", revisits)
            self.stats.inc_value("irl/warc/bytes", size)
            assert self.files is not None
            self.stats.set_value("irl/warc/files", self.files.files_written)
        self._settle(batch)

    def _worker_failed(self, failure: Failure, batch: list[_Pending]) -> None:
        self._fail(failure)
        for pending in batch + self._queue:
            if pending.verdict is not None:
                self._release.fire(pending.verdict, Verdict(False, pending.capture.date))
        self._queue = []
        self._settle(batch)

    def _fail(self, failure: Failure) -> None:
        if self._failed:
            return
        self._failed = True
        self.stats.inc_value(f"irl/given_up/{FAILED_REASON}")
        logger.error(
            "irlscrapy: recording responses (WARC files, content dedup) failed; it stops "
            "and the spider closes (%s). Fix the cause, then resume with the same JOBDIR.",
            failure.getErrorMessage(),
            exc_info=failure_to_exc_info(failure),
        )
        self.close_spider(FAILED_REASON)

    def _settle(self, batch: list[_Pending]) -> None:
        self._queued_bytes -= sum(len(p.capture.payload) for p in batch)
        self._busy = False
        self._kick()
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def _wait(self) -> defer.Deferred[None]:
        d: defer.Deferred[None] = defer.Deferred()
        self._waiters.append(d)
        return d

    def _run(self, f: Callable[..., Any], *args: Any) -> defer.Deferred[Any]:
        return self._worker(f, *args)

    async def close(self) -> None:
        """Write everything queued, then close the files and ContentSeen (once)."""
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._kick()
        while self._busy or self._queue:
            await maybe_deferred_to_future(self._wait())
        if self._closed:
            return
        self._closed = True
        if self._opened:
            await maybe_deferred_to_future(self._run(self._close))
            if self.files is not None:
                self.stats.set_value("irl/warc/files", self.files.files_written)
        self._worker.stop()
        if self.state is not None and self.seen is not None:
            self.state.close()

    # -- the worker thread ---------------------------------------------------------------
    def _open(self, recoveries: Recoveries) -> None:
        """Open the files, noting in ``recoveries`` what the open mended (published on
        the reactor's thread, whether the open succeeds or not)."""
        with recoveries.collect():
            if self.files is not None:
                self.files.open()
            if self.seen is not None:
                self.seen.open()

    def _close(self) -> None:
        if self.files is not None:
            self.files.close()
        if self.seen is not None:
            self.seen.close()

    def _work(self, batch: list[_Pending]) -> tuple[list[Verdict], int, int, int]:
        """Hash, check, write one batch: its verdicts, and the records, revisits and
        bytes written."""
        if self._failed:  # opening failed (set on the reactor before this batch ran)
            return [Verdict(False, p.capture.date) for p in batch], 0, 0, 0
        sha1s = [hashlib.sha1(p.capture.payload).digest() for p in batch]
        for pending, sha1 in zip(batch, sha1s, strict=True):
            pending.capture.payload_digest = "sha1:" + base64.b32encode(sha1).decode("ascii")
        verdicts = [Verdict(False, p.capture.date) for p in batch]
        if self.seen is not None:
            verdicts = self.seen.check(sha1s, [p.capture.date for p in batch])
        if self.files is None:
            return verdicts, 0, 0, 0
        size = revisits = 0
        for pending, verdict in zip(batch, verdicts, strict=True):
            if verdict.duplicate:
                pending.capture.duplicate_of = verdict.first
                revisits += 1
            size += self.files.write(pending.capture)
        self.files.flush()
        return verdicts, len(batch), revisits, size


def is_flagged(request: Request) -> bool:
    """Is the response to ``request`` held for its verdict, to be flagged? Not a
    robots.txt fetch of the IRL scheduler, nor a request without a callback (Scrapy's
    ``NO_CALLBACK``, such as its RobotsTxtMiddleware's): no spider sees their responses.
    (Holding robots.txt responses cost the benchmark crawl 13-30% of its pages/s: the
    scheduler counts a robots.txt fetch in flight until its outcome is known, so each
    held one kept a load-governor slot.) Their verdicts still choose their records."""
    return ROBOTS_KEY not in request.meta and request.callback is not NO_CALLBACK


class PacedRelease:
    """Fires Deferreds one per reactor turn, in the order given.

    Invariants (tests/unit/test_paced_release.py): every Deferred handed to
    :meth:`fire` is fired exactly once, with its result, in the order of the calls; at
    once if none fired in this reactor turn and none is waiting, else a reactor turn (a
    ``callLater(0)``) after the one before it.
    """

    def __init__(self, reactor: Callable[[], Any]) -> None:
        self._reactor = reactor  # called when first needed: the reactor may be set late
        self._due: deque[tuple[defer.Deferred[Any], Any]] = deque()
        self._turn: Any = None  # the IDelayedCall of the next release

    def fire(self, d: defer.Deferred[Any], result: Any) -> None:
        self._due.append((d, result))
        if self._turn is None:
            self._next()

    def _next(self) -> None:
        self._turn = None
        if not self._due:
            return
        d, result = self._due.popleft()
        # The turn is taken even if nothing else is due yet: one fired later in this
        # turn must wait for the next.
        self._turn = self._reactor().callLater(0, self._next)
        d.callback(result)


def _netloc(url: str) -> bytes:
    return urlsplit(url).netloc.encode("ascii")


def _address_finder(crawler: Crawler) -> Callable[[Request, Response], str | None]:
    """WARC-IP-Address: with the IRL resolver, the address the scheduler's DNS cache
    gave the host (where the crawler meant to connect, also through a proxy); else the
    peer's address, unless the request went through a proxy (the peer is the proxy)."""
    from irlscrapy.scheduler.hosts.dns import DNSCache, IRLResolver, is_ip

    resolver = crawler.settings.get("TWISTED_DNS_RESOLVER")
    if resolver and load_object(resolver) is IRLResolver:
        cache = DNSCache.of(crawler)

        def from_cache(request: Request, response: Response) -> str | None:
            address = request.meta.get(ADDRESS_KEY)  # the IRL scheduler's requests
            if address is not None:
                return str(address)
            host = host_name(url_host(response.url))
            return host if is_ip(host) else cache.stale(host)

        return from_cache

    def from_peer(request: Request, response: Response) -> str | None:
        if request.meta.get("proxy") or response.ip_address is None:
            return None
        return str(response.ip_address)

    return from_peer


def _warcinfo(settings: Any) -> dict[str, str]:
    return {
        "software": (
            f"irlscrapy/{__version__} (Scrapy {scrapy.__version__}; warcio {version('warcio')})"
        ),
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "isPartOf": settings.get("BOT_NAME", ""),
        "http-header-user-agent": settings.get("USER_AGENT", ""),
        "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
    }
