"""Intake: Requests and a page's ``Links`` on their way to the frontier.

Theory of operation
-------------------
A Request (:meth:`Intake.enqueue_request`) or a page's Links (:meth:`enqueue_links`,
the fast path: strings, no Request objects) is encoded to bytes
(:mod:`irlscrapy.scheduler.requestcodec`) and submitted to URLseen (the DRUM
dupefilter, :mod:`irlscrapy.dupefilters.urlseen`) in one batch per call, with an *aux*
saying where its unique URLs go::

    aux := route: u8, priority: i32be, payload
           route: TO_BEAST (0), or TO_HOST (1): a retry or redirect of the crawl's own
           fetch, which goes to the front of its host (Frontier.push_direct), or
           START (3): a start request, to BEAST (below); HANDED_OFF (2): receive()

URLseen merges when a batch is full, or at once when nothing is in flight (no fetch
would end to trigger it: the no-idle invariant, see irlscrapy.scheduler.dispatch). The
results are *drained* into the frontier cooperatively (``DRAIN_SLICE`` records per
reactor turn, admitting as they come), and each batch is acknowledged to URLseen only
after its unique URLs are stored.

What skips URLseen: ``dont_filter`` requests (and every request when dedup is off)
go straight to the frontier, but for start requests with a JOBDIR (below); requests of
other schemes than http(s) (data:, file:, and those no download handler knows) go to
``direct``, in RAM, handed out first (they need no DNS, robots.txt or politeness); a
request the codec cannot store is kept in RAM in the frontier (``Frontier.push_memory``),
as Scrapy's scheduler keeps what its disk queues refuse. Both are deduplicated in RAM
by their keys.

Invariants:
*A URL URLseen found unique is in the frontier before its batch is acknowledged:
nothing discovered is lost* (a crash in between delivers the batch again).
*The restart skip.* Each stored record carries its URLseen batch's tag (sequence + 1).
At open, :func:`irlscrapy.scheduler.resume.open_frontier` finds the last tag stored
and which of its URLs were (BEAST writes a batch's records a queue file at a time, so
a stop may have stored any of them); a batch delivered again with an older tag was
stored whole before the stop and is skipped, the batch with that tag is stored but for
the URLs found, and later ones whole. So a restart stores every unique URL exactly
once.
*A start request is taken in once per state directory*
(:mod:`irlscrapy.scheduler.startrequests`): with a JOBDIR, a ``dont_filter`` start
request goes through URLseen under a key of its own, so a rerun does not queue it again.
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet import task
from twisted.python.failure import Failure

from irlscrapy.domains import canonical_authority
from irlscrapy.dupefilters.urlkey import url_keys
from irlscrapy.dupefilters.urlseen import DRUMDupeFilter
from irlscrapy.exceptions import ConfigurationError, RequestCodecError
from irlscrapy.links import Links
from irlscrapy.runtime.internals import EngineWaker, forget_environment_proxy
from irlscrapy.scheduler.frontieritems import RobotsFetch
from irlscrapy.scheduler.linkrules import LinkRules
from irlscrapy.scheduler.metakeys import ROBOTS_KEY
from irlscrapy.scheduler.requestcodec import encode_link, encode_links, encode_request
from irlscrapy.scheduler.stages import Frontier
from irlscrapy.scheduler.startrequests import StartRequests
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage.drum import ResultBatch

logger = logging.getLogger(__name__)


class Routing(Protocol):
    """What the intake asks of the other agents of a multi-agent crawl: the part of
    :class:`irlscrapy.scheduler.peers.Peers` it uses."""

    #: Does the crawl span other processes? (False: every other member is a no-op.)
    shared: bool

    def route_urls(self, urls: list[str], auxes: list[bytes]) -> tuple[list[str], list[bytes]]:
        """The URLs (and aux bytes) that stay here; the others go to their owners."""

    @property
    def kept_salt(self) -> int | None:
        """The salt of URLs this agent handed over and holds still (None: none)."""


_AUX = struct.Struct(">Bi")
#: Keys a URLseen batch of handed-over keys holds at most (receive_keys).
HANDOVER_KEYS_BATCH = 65_536
#: Where a URL URLseen finds new goes: BEAST, or the front of its host (a retry or a
#: redirect). HANDED_OFF marks a URL another agent held and hands over (see receive()).
TO_BEAST, TO_HOST, HANDED_OFF = 0, 1, 2
#: A start request, to BEAST (see the module docstring).
START = 3
#: A handed-off URL's salt (after the aux's head): its URLseen key, xor the salt, is the
#: key its admission is checked under.
_SALT = struct.Struct(">Q")


def stored_aux(priority: int, payload: bytes) -> bytes:
    """The aux bytes of a URL stored at ``priority`` (to BEAST): how an agent that
    leaves sends the URLs it held (irlscrapy.distributed.leave)."""
    return _AUX.pack(TO_BEAST, priority) + payload


def handed_off_aux(priority: int, payload: bytes, salt: int) -> bytes:
    """The aux bytes of a URL an agent holds and hands over to the partition's owner,
    under ``salt`` (irlscrapy.distributed.leave; see Intake.receive)."""
    return _AUX.pack(HANDED_OFF, priority) + _SALT.pack(salt) + payload


def seed_aux(url: str) -> bytes:
    """The aux bytes the intake stores with a seed URL sent by ``irlscrapy agents seed``:
    a link of depth 0 for the spider's default callback, to BEAST at priority 0."""
    return stored_aux(0, encode_link(url, 0, None, None))


#: URL beginnings (lower-cased) of the requests the frontier schedules; any other scheme
#: skips it (``Intake.direct``)
FRONTIER_SCHEMES = ("http://", "https://")
#: Records handled per reactor turn when draining URLseen results into the frontier.
DRAIN_SLICE = 32


class Intake:
    def __init__(
        self,
        dupefilter: DRUMDupeFilter,
        link_rules: LinkRules,
        stats: Any,
        waker: EngineWaker,
        *,
        dedup: bool,
        persistent: bool,
        log_unserializable: bool,
        peers: Routing,
    ) -> None:
        self.urlseen = dupefilter
        self.link_rules = link_rules
        self.stats = stats
        self.waker = waker
        #: False with DUPEFILTER_CLASS = scrapy.dupefilters.BaseDupeFilter (dedup off):
        #: every request and link goes to the frontier as if dont_filter were set, and
        #: URLseen (still the state's, and the request keys') gets nothing
        self.dedup = dedup
        self.persistent = persistent  # a JOBDIR: Scrapy would store requests on disk
        #: SCHEDULER_DEBUG: log the first request the codec cannot store, as Scrapy does
        self._log_unserializable = log_unserializable
        #: requests of schemes without hosts to be polite to, handed out first
        self.direct: deque[Request] = deque()
        self.merging = False  # a URLseen merge, or the drain of its results, is running
        self.merges = 0  # URLseen merges started ...
        self.merges_stored = 0  # ... and the number of the last one stored (drained)
        self.merges_held = False  # no merge starts (a handoff reads URLseen's keys)
        #: the clock's time from which a starving crawler may flush URLseen again: the
        #: last merge's end plus its length, so such flushes take at most half the time
        #: (cheap in a young crawl, rare at scale, where a merge costs as the store)
        self.starving_flush_at = 0.0
        self._merge_started = 0.0
        self._flush_soon = False  # a flush is called for at the end of this reactor turn
        self.closing = False  # the scheduler is closing: no drain starts any more
        self._memory_seen: set[int] = set()  # keys of requests kept in RAM
        self.start_requests = StartRequests(enabled=persistent and dedup)
        self._drain_task: Any = None  # the task.CooperativeTask draining URLseen results
        self.spider: Spider | None = None
        self.frontier: Frontier | None = None
        #: the other agents of a multi-agent crawl (irlscrapy.scheduler.peers): URLs of
        #: PLDs they own go to them instead of URLseen
        self.peers = peers
        #: (URLseen tag, its URLs stored) of the last batch found in the state on open
        self._stored_before_restart: tuple[int, set[bytes]] = (-1, set())
        # set by open(): the dispatcher's side of the fetch lifecycle
        self._fetch_over: Callable[[int], None] = lambda token: None
        self._ready: Callable[[], None] = lambda: None
        self._in_flight: Callable[[], int] = lambda: 0
        self._progress: Callable[[], None] = lambda: None
        self._failed: Callable[[Failure, str], None] = lambda failure, what: None

    @classmethod
    def from_crawler(cls, crawler: Crawler, waker: EngineWaker, peers: Routing) -> Intake:
        settings = crawler.settings
        dupefilter_class = load_object(settings["DUPEFILTER_CLASS"])
        dedup = dupefilter_class is not BaseDupeFilter  # Scrapy's way to turn dedup off
        dupefilter = build_from_crawler(dupefilter_class if dedup else DRUMDupeFilter, crawler)
        if not isinstance(dupefilter, DRUMDupeFilter):
            raise ConfigurationError(
                f"IRLScheduler needs DUPEFILTER_CLASS = "
                f"'irlscrapy.dupefilters.urlseen.DRUMDupeFilter' (or "
                f"'scrapy.dupefilters.BaseDupeFilter': no dedup), not "
                f"{settings['DUPEFILTER_CLASS']!r} (or use the add-on irlscrapy.Addon)"
            )
        return cls(
            dupefilter,
            LinkRules.from_crawler(crawler),
            crawler.stats,
            waker,
            dedup=dedup,
            persistent=not StateDirectory.of(crawler).temporary,
            log_unserializable=settings.getbool("SCHEDULER_DEBUG"),
            peers=peers,
        )

    def open(
        self,
        spider: Spider,
        frontier: Frontier,
        stored_before_restart: tuple[int, set[bytes]],
        *,
        fetch_over: Callable[[int], None],
        ready: Callable[[], None],
        in_flight: Callable[[], int],
        progress: Callable[[], None],
        failed: Callable[[Failure, str], None],
    ) -> None:
        """Start on ``frontier``; drain what a previous run merged but did not store.
        ``fetch_over(token)``: the fetch a retry, redirect or trap replaces is over;
        ``ready()``: work may have become due or admissible; ``in_flight()``: fetches in flight;
        ``progress()``: new URLs were stored; ``failed(failure, what)``: URLseen failed."""
        self.spider = spider
        self.frontier = frontier
        self._stored_before_restart = stored_before_restart
        self._fetch_over = fetch_over
        self._ready = ready
        self._in_flight = in_flight
        self._progress = progress
        self._failed = failed
        self.link_rules.set_allowed_domains(getattr(spider, "allowed_domains", None))
        self.start_drain()

    def close(self) -> None:
        self.closing = True
        if self._drain_task is not None:
            self._drain_task.stop()  # what it did not store is delivered again next run

    @property
    def pending(self) -> int:
        """URLs waiting for URLseen's next batch check."""
        return self.urlseen.pending

    # -- Requests ------------------------------------------------------------------------
    def enqueue_request(self, request: Request, token: int | None) -> bool:
        """``token``: the fetch ``request`` is a retry or redirect of (None: a new one)."""
        frontier = self._frontier()
        meta = request.meta
        self.stats.inc_value("irl/scheduler/enqueued/requests")
        if not request.url[:8].lower().startswith(FRONTIER_SCHEMES):
            return self._enqueue_direct(request, token)
        url = canonical_authority(request.url)
        if url != request.url:  # before its key and its fetch: one URL, one spelling
            self.stats.inc_value("irl/scheduler/respelt_urls")
            request = request.replace(url=url)
            meta = request.meta
        robots_host = meta.get(ROBOTS_KEY)
        own = token is not None and ("retry_times" in meta or "redirect_times" in meta)
        if robots_host is not None:  # robots.txt retried or redirected
            frontier.push_robots(request.url, RobotsFetch(robots_host, request))
        elif not request.dont_filter and not own and self.link_rules.trapped(request.url):
            logger.debug("Ignoring a crawler trap: %s", request.url)
            if token is not None:
                self._fetch_over(token)
            return False
        else:
            forget_environment_proxy(request)
            try:
                payload = encode_request(request, self.spider)
            except RequestCodecError as exc:
                self._unserializable(request, exc)
                self._keep_in_memory(request, own)
            else:
                if request.dont_filter or not self.dedup:
                    if own:
                        frontier.push_direct(payload, request.priority)
                    elif self._taken_once(request):
                        self._submit_start(request, payload)
                    else:
                        frontier.push(payload, request.priority)
                else:
                    aux = _AUX.pack(TO_HOST if own else TO_BEAST, request.priority) + payload
                    self._submit_request(request, aux)
        if token is not None:  # stored first, then the fetch it replaces is over
            self._fetch_over(token)
        self._ready()
        return True

    def _taken_once(self, request: Request) -> bool:
        """Is ``request`` a start request to take in once per state directory? Not in
        the multi-agent mode, where URLs go to their owners."""
        return not self.peers.shared and self.start_requests.taken_once(request)

    def _submit_start(self, request: Request, payload: bytes) -> None:
        key = self.start_requests.key(self.urlseen.identity.request_key(request))
        self.urlseen.submit_keyed([key], [_AUX.pack(START, request.priority) + payload])
        self.submitted()

    def _submit_request(self, request: Request, aux: bytes) -> None:
        """To URLseen, or (a GET of a PLD another agent owns) to its owner."""
        if self.peers.shared and request.method == "GET" and not request.body:
            # (a GET's key is its URL's: the agent requires a URL-only fingerprinter)
            mine, _ = self.peers.route_urls([request.url], [aux])
            if not mine:
                return
        self.urlseen.submit_requests([request], [aux])
        self.submitted()

    def receive(self, urls: list[str], auxes: list[bytes]) -> None:
        """URLs another agent sent, for this one owns their PLDs: to URLseen, durable on
        return (the agent acknowledges them to Redis after this).

        A URL handed over (HANDED_OFF) was admitted once, at the agent that held it, and
        never fetched; this agent's URLseen may know it nonetheless (the keys of that
        agent, or its own: the URL may be coming back). So it is checked under its key
        xor the handover's salt, which admits it once per handover however often it
        comes (a handover a kill cut short sends again, with the same salt), and its
        own key is only stored as seen. One under this agent's own leave salt is its
        own, back from a leave a kill cut short: it holds it still, and drops it. (One
        it handed off to an agent that joined and has now left comes back under its
        handoff salt: it went from here when forwarded, and is admitted.)"""
        handed = [i for i, aux in enumerate(auxes) if aux[0] == HANDED_OFF]
        if handed:
            own = self.peers.kept_salt
            given, salts, stored = [], [], []
            for i in handed:
                aux = auxes[i]
                salt = _SALT.unpack_from(aux, _AUX.size)[0]
                if salt != own:
                    given.append(urls[i])
                    salts.append(salt)
                    head = _AUX.pack(TO_BEAST, _AUX.unpack_from(aux)[1])
                    stored.append(head + aux[_AUX.size + _SALT.size :])
            if given:
                keys = url_keys(given)
                self.urlseen.submit_keyed(keys ^ np.array(salts, dtype=np.uint64), stored)
                self.urlseen.submit_keys(keys)
            kept = set(handed)
            urls = [u for i, u in enumerate(urls) if i not in kept]
            auxes = [a for i, a in enumerate(auxes) if i not in kept]
        if urls:
            self.urlseen.submit_urls(urls, auxes)
        self.submitted()

    def receive_keys(self, keys: np.ndarray) -> None:
        """URLseen keys an agent that left had seen (irlscrapy.distributed.leave): in
        URLseen as seen, durable on return, and never delivered (their aux is empty)."""
        for at in range(0, len(keys), HANDOVER_KEYS_BATCH):
            part = keys[at : at + HANDOVER_KEYS_BATCH]
            self.urlseen.submit_keys(part)

    def _enqueue_direct(self, request: Request, token: int | None) -> bool:
        """A request of a scheme the frontier does not schedule (see ``direct``): kept
        in RAM, so a resume does not have it; with a JOBDIR, where Scrapy would store it
        on disk, one the codec could not store either is counted as Scrapy counts it."""
        if self.persistent:
            try:
                encode_request(request, self.spider)
            except RequestCodecError as exc:
                self._unserializable(request, exc)
        kept = request.dont_filter or self._first_in_memory(request)
        if kept:
            self.stats.inc_value("scheduler/enqueued/memory")
            self.direct.append(request)
            self.waker.wake()
        if token is not None:  # a redirect of our own fetch to such a scheme
            self._fetch_over(token)
        return kept

    def _first_in_memory(self, request: Request) -> bool:
        """Has no request with the key of ``request`` been kept in RAM yet? (Scrapy's
        ``dupefilter/filtered`` counts those that had.)"""
        if not self.dedup:
            return True
        key = self.urlseen.identity.request_key(request)
        if key in self._memory_seen:
            self.stats.inc_value("dupefilter/filtered")
            return False
        self._memory_seen.add(key)
        return True

    def _unserializable(self, request: Request, exc: RequestCodecError) -> None:
        """Count (and with SCHEDULER_DEBUG log, once) a request the codec cannot store,
        with the stat and the message of Scrapy's scheduler."""
        self.stats.inc_value("scheduler/unserializable")
        if self._log_unserializable:
            self._log_unserializable = False
            logger.warning(
                "Unable to serialize request: %(request)s - reason: %(reason)s - no more "
                "unserializable requests will be logged (stats being collected)",
                {"request": request, "reason": exc},
                extra={"spider": self.spider},
            )

    def _keep_in_memory(self, request: Request, own: bool) -> None:
        """A request the codec cannot store: deduplicated by a set in RAM, queued in RAM
        (as Scrapy's scheduler does with requests its disk queues refuse)."""
        if request.dont_filter or self._first_in_memory(request):
            self.stats.inc_value("scheduler/enqueued/memory")
            self._frontier().push_memory(request, front=own)

    # -- Links ---------------------------------------------------------------------------
    def enqueue_links(self, links: Links, response: Response | None = None) -> None:
        """Queue a page's links under the rules Scrapy's spider middlewares apply to
        Requests (:mod:`.linkrules`); ``response``: the page, whose Referrer-Policy
        header counts."""
        frontier = self._frontier()
        rules = self.link_rules
        depth = rules.depth(links.depth)
        if depth is None:
            logger.debug("Ignoring the links of %s (depth > %d)", links.source, rules.depth_limit)
            return
        urls = rules.keep(links.urls)
        if not urls:
            return
        canonical = [canonical_authority(url) for url in urls]
        if canonical != urls:
            respelt = sum(a != b for a, b in zip(urls, canonical, strict=True))
            self.stats.inc_value("irl/scheduler/respelt_urls", respelt)
            urls = canonical
        self.stats.inc_value("irl/scheduler/enqueued/links", len(urls))
        priority = rules.priority(depth)
        referers = rules.referers(links.source, urls, response)
        if not self.dedup:
            for payload in encode_links(urls, depth, links.callback, referers):
                frontier.push(payload, priority)
            self._ready()
            return
        head = _AUX.pack(TO_BEAST, priority)
        auxes = encode_links(urls, depth, links.callback, referers, prefix=head)
        if self.peers.shared:
            urls, auxes = self.peers.route_urls(urls, auxes)
            if not urls:
                return
        self.urlseen.submit_urls(urls, auxes)
        self.submitted()

    # -- URLseen -------------------------------------------------------------------------
    def submitted(self) -> None:
        """URLs went to URLseen: merge when a batch is full, or when nothing is in
        flight (no fetch will end to wake the engine: the no-idle invariant) at the end
        of this reactor turn, so that the other requests a callback yields in the turn
        join the batch (a host's URLs are ordered by priority within one batch)."""
        if self.urlseen.should_merge():
            self.flush()
        elif not self._in_flight() and not self._flush_soon:
            self._flush_soon = True
            self.waker.clock.callLater(0, self._flush_if_idle)

    def _flush_if_idle(self) -> None:
        self._flush_soon = False
        if not self.closing and self.urlseen.pending and not self._in_flight():
            self.flush()

    def flush(self) -> None:
        if self.merging or self.merges_held:
            return
        self.merging = True
        self.merges += 1
        self._merge_started = self.waker.clock.seconds()
        merge = self.urlseen.flush()
        merge.addCallback(lambda _: self.start_drain())
        merge.addErrback(self._fatal, "merging URLseen")

    def start_drain(self) -> None:
        if self.closing:
            # A merge that ends during close: URLseen is closed right after it, so its
            # results are not drained now; they are delivered again on the next run
            # (JOBDIR), like those of a drain that close() stops.
            return
        self.merging = True
        self._drain_task = task.cooperate(self._drain_results())
        drain = self._drain_task.whenDone()
        drain.addCallback(self.drained)
        drain.addErrback(self._drain_failed)

    def hold_merges(self, hold: bool) -> None:
        """Hold URLseen's merges (URLseen's keys can then be read), or let them go on
        (with the merge a flush held back, if URLs wait)."""
        released = self.merges_held and not hold
        self.merges_held = hold
        if released and self.urlseen.pending:
            self.flush()

    def drained(self, _: Any) -> None:
        self.merging = False
        self.merges_stored = self.merges
        self._drain_task = None
        now = self.waker.clock.seconds()
        self.starving_flush_at = now + max(0.0, now - self._merge_started)
        if self.urlseen.pending and not self._in_flight():
            # URLs submitted during the merge, and no fetch will end to flush them
            # (the no-idle invariant; submitted() skipped them while the merge ran)
            self.flush()
        self._ready()  # (the records stored may be admitted now: Dispatcher.ready)

    def _fatal(self, failure: Failure, what: str) -> None:
        """URLseen's merge or drain failed: it is not running any more."""
        self.merging = False
        self._failed(failure, what)

    def _drain_failed(self, failure: Failure) -> None:
        self._drain_task = None
        if not failure.check(task.TaskStopped):
            self._fatal(failure, "storing unique URLs")

    def _drain_results(self) -> Iterator[None]:
        frontier = self._frontier()
        done = 0
        for batch in self.urlseen.results():
            done += self._store(frontier, batch)
            self.urlseen.ack(batch.seq)
            if done >= DRAIN_SLICE:
                done = 0
                frontier.admission.admit()
                yield None

    def _store(self, frontier: Frontier, batch: ResultBatch) -> int:
        assert batch.aux is not None
        if len(batch.aux) and not batch.aux[0]:
            return len(batch.unique)  # keys handed over (receive_keys): nothing to store
        unique = batch.unique.nonzero()[0].tolist()
        filtered = len(batch.unique) - len(unique)
        if filtered and batch.aux[0][0] == START:  # (a start request's batch is its own)
            self.stats.inc_value("irl/scheduler/start_requests_taken_before", filtered)
        elif filtered:
            self.stats.inc_value("dupefilter/filtered", filtered)
        self.stats.inc_value("irl/urlseen/unique", len(unique))
        if unique:
            self._progress()
        tag = batch.seq + 1  # the frontier's batch tag (0: no batch)
        last_tag, stored = self._stored_before_restart
        if tag < last_tag:
            return len(batch.unique)  # stored before a restart, not yet acknowledged
        to_beast: list[tuple[bytes, int]] = []
        for i in unique:
            aux = batch.aux[i]
            route, priority = _AUX.unpack_from(aux)
            payload = aux[_AUX.size :]
            if tag == last_tag and payload in stored:
                continue  # a restart cut the batch short: stored before it
            if route in (TO_BEAST, START):
                to_beast.append((payload, priority))
            else:
                frontier.push_direct(payload, priority, tag)
        frontier.push_many(to_beast, tag)
        return len(batch.unique)

    def _frontier(self) -> Frontier:
        assert self.frontier is not None, "open() first"
        return self.frontier
