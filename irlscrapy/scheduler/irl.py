"""``IRLScheduler``: Scrapy's SCHEDULER on the IRL frontier (DESIGN.md sections 2-3).

Use it with its dupefilter (the add-on ``irlscrapy.Addon`` sets both)::

    SCHEDULER = "irlscrapy.scheduler.irl.IRLScheduler"
    DUPEFILTER_CLASS = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"

Data flow: a Request (``enqueue_request``) or a page's ``Links``
(:meth:`IRLScheduler.enqueue_links`, reached through :func:`links_sink`) is encoded to
bytes (:mod:`irlscrapy.scheduler.requestcodec`; no Request object for a link) and sent
to URLseen in one batch per call; batches are merged when enough are pending, or at once
when the crawl would otherwise starve. Unique URLs go to BEAST (ack to URLseen after the
BEAST append: nothing discovered is lost), then through DNS and robots.txt into the
workbench (:mod:`irlscrapy.scheduler.pipeline`). ``next_request`` hands out the top due
host's next URL, built into a Request only then; the host and its IP are released when
the request leaves the downloader (``request_left_downloader``), or when it ends before
reaching it (:class:`irlscrapy.middlewares.fetchend.FetchEndMiddleware`, or a retry or redirect
coming back); its URL is done (in the admitted journal) once the spider has handled
the page (:class:`irlscrapy.middlewares.fetchend.PageDoneMiddleware`). The
engine is woken when the next host becomes due (:mod:`irlscrapy.internals`). The fetches
in flight are capped by :class:`irlscrapy.scheduler.frontier.loadgovernor.LoadGovernor`
(``IRL_REACTOR_LAG_TARGET``) so the reactor keeps up, and held while URLseen has a whole
batch waiting behind a running merge (``irl/scheduler/held_for_urlseen``).

Differences from Scrapy's stock scheduler, by design:
- ``enqueue_request`` cannot know yet whether a request is a duplicate (URLseen answers
  in batches), so it returns True and duplicates are counted in ``dupefilter/filtered``
  without a ``request_dropped`` signal;
- the order is BEAST's across domains and ``Request.priority`` only within a host.

Files under the state directory (``IRL_STATE_DIR``, else ``JOBDIR``, else a temporary
directory removed at close): ``urlseen/`` (DRUM), ``beast/`` (BEAST queue files),
``dns/`` (the DNS cache's spill), ``robots/`` (the robots cache), ``admitted-*.rec``
(the admitted journal), ``LOCK``.

Stats: ``irl/scheduler/enqueued/{requests,links}``, ``irl/scheduler/dequeued``,
``irl/urlseen/unique``, ``irl/frontier/*``, ``irl/robots/*``, ``irl/dns/*``,
``irl/guard/*``, ``irl/hosts/*`` (host health), ``irl/traps/*``,
``irl/governor/{cap,cuts}``, and Scrapy's ``dupefilter/filtered``, ``offsite/filtered``,
``scheduler/unserializable``, ``scheduler/enqueued/memory`` (requests kept in RAM),
``urllength/request_ignored_count``, ``request_depth_max``,
``robotstxt/{request_count,response_count,forbidden}`` and
``robotstxt/response_status_count/<status>`` (as RobotsTxtMiddleware counts them).
"""

from __future__ import annotations

import errno
import functools
import logging
import shutil
import struct
import tempfile
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.job import job_dir
from scrapy.utils.log import failure_to_exc_info
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet import defer, task
from twisted.python.failure import Failure

from irlscrapy import defaults
from irlscrapy.closing import close_spider
from irlscrapy.dirlock import DirectoryLock
from irlscrapy.domains import domain_key, pld, url_host, url_origin, use_private_suffixes
from irlscrapy.dupefilters.drum import ResultBatch
from irlscrapy.dupefilters.urlseen import DRUMDupeFilter
from irlscrapy.exceptions import ConfigurationError, IrlscrapyError
from irlscrapy.internals import EngineWaker
from irlscrapy.lagprobe import LagProbe
from irlscrapy.links import Links
from irlscrapy.scheduler.frontier.admitted import AdmittedJournal
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.frontier.loadgovernor import LoadGovernor
from irlscrapy.scheduler.frontier.parking import ParkedStore
from irlscrapy.scheduler.frontier.workbench import IPEntry, VisitState, Workbench
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.scheduler.hosts.dns import DNSCache, dns_cache
from irlscrapy.scheduler.hosts.hosthealth import HostHealth
from irlscrapy.scheduler.hosts.robots import REDIRECT_HOPS, RobotsRules
from irlscrapy.scheduler.hosts.robotscache import RobotsCache
from irlscrapy.scheduler.keys import FETCH_KEY, REFUSED_KEY, ROBOTS_KEY, state_closed
from irlscrapy.scheduler.ledger import FetchLedger
from irlscrapy.scheduler.linkrules import LinkRules, origin
from irlscrapy.scheduler.pipeline import (
    Frontier,
    Item,
    MemoryItem,
    RobotsFetch,
    item_url,
    record_batch,
)
from irlscrapy.scheduler.requestcodec import (
    LINK,
    RequestCodecError,
    decode_request,
    encode_link,
    encode_request,
    link_from_payload,
    payload_kind,
)
from irlscrapy.star.indegree import PLDInDegree

logger = logging.getLogger(__name__)

#: URLseen aux := route: u8, priority: i32be, payload
_AUX = struct.Struct(">Bi")
TO_BEAST, TO_HOST = 0, 1
#: URL beginnings (lower-cased) of the requests the frontier schedules; any other scheme
#: skips it (IRLScheduler._direct)
FRONTIER_SCHEMES = ("http://", "https://")
#: Statuses a robots.txt callback sees: all but redirects (RedirectMiddleware follows
#: those, as RFC 9309 asks) and 2xx (which reach it anyway).
ROBOTS_STATUSES = [*range(100, 200), *range(400, 600)]
#: Records handled per reactor turn when draining URLseen results into BEAST.
DRAIN_SLICE = 32
#: status() counts the IPs due up to this many.
DUE_COUNT_LIMIT = 1_000
#: Seconds between admissions from BEAST (each at most frontier.ADMIT_SECONDS of work).
ADMIT_INTERVAL = 0.02
#: Seconds between the refills of a crawler with room for more fetches and nothing due
#: (_idle): a URLseen flush and a resumed admission. With nothing in flight, at once.
IDLE_REFILL_INTERVAL = 1.0
#: The close reason of a crawl stopped by a full disk.
DISK_FULL_REASON = "irlscrapy_disk_full"

_schedulers: weakref.WeakKeyDictionary[Crawler, IRLScheduler] = weakref.WeakKeyDictionary()


def links_sink(crawler: Crawler) -> IRLScheduler | None:
    """The crawler-level accessor for ``Links``: the crawl's IRL scheduler, if it runs one.

    The one documented way for a spider middleware to hand over a page's ``Links``
    (``links_sink(crawler).enqueue_links(links)``); None means Scrapy's stock scheduler
    (or another) is in use, and Links must become Requests.
    """
    return _schedulers.get(crawler)


def _own_download_slot(request: Request, ip: str) -> bool:
    """Does ``request`` name a downloader slot other than its host's (or its IP's, which
    Scrapy names with CONCURRENT_REQUESTS_PER_IP, and a retry keeps)? The project paces
    such a slot itself (``DOWNLOAD_SLOTS``: delay, concurrency), so its host is released
    when it is handed out instead of when it leaves the downloader: the host delay
    still spaces hand-outs, and requests of one host in slots of their own wait each in
    its slot side by side, as in stock Scrapy (they waited in turn, each holding the
    host through its slot's delay: Scrapy's test_downloaderslotssettings::test_delay)."""
    slot = request.meta.get("download_slot")
    return slot is not None and slot not in (urlparse_cached(request).hostname, ip)


def _forget_environment_proxy(request: Request) -> None:
    """A retry or redirect carries the proxy HttpProxyMiddleware took from the
    environment (``_scheme_proxy``); stored, it would outlive the run and point a resumed
    crawl at a proxy that may have moved. The middleware sets it again at download."""
    meta = request.meta
    if meta.pop("_scheme_proxy", None):
        meta.pop("proxy", None)
        if meta.pop("_auth_proxy", None) is not None:
            request.headers.pop(b"Proxy-Authorization", None)


def disk_full(exc: BaseException | None) -> bool:
    """Is ``exc`` a write that failed for want of space (OSError, or LevelDB's IOError)?"""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return exc is not None and "No space left on device" in str(exc)


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _stops_when_disk_is_full(default: Any) -> Callable[[_Method], _Method]:
    """An entry point that stops the crawl cleanly when the disk is full, and once it
    has stopped does nothing and returns ``default`` (what is not stored then is
    fetched again on resume: the page that found it is not done)."""

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def guarded(self: IRLScheduler, *args: Any, **kwargs: Any) -> Any:
            if self._stopped:
                return default
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                if not disk_full(exc):
                    raise
                self._stop_disk_full(exc)
                return default

        return cast(_Method, guarded)

    return decorate


class IRLScheduler(BaseScheduler):
    """Scrapy's SCHEDULER on the IRL frontier (the module docstring is the design).

    *No idle crawler while work exists.* Whenever nothing is in flight and no host is
    due, the scheduler is not sitting on fetchable work: it flushes URLseen (unless a
    merge runs, whose drain wakes the engine), resumes admission paused for a full host,
    and admits from BEAST (:meth:`_idle`). What may then still wait is only work that
    cannot be fetched yet: hosts within their politeness delay, and hosts or origins in
    back-off, retirement or a robots.txt retry. A finite crawl waits for those at most
    ``IRL_GIVE_UP_AFTER`` beyond the longest politeness delay, then parks them and ends
    (``IRL_CONTINUOUS`` waits). ``irlscrapy.report.idlewatch`` checks the invariant from
    outside in every crawl.
    """

    def __init__(
        self,
        crawler: Crawler,
        dupefilter: DRUMDupeFilter,
        dns: DNSCache,
        politeness: Politeness,
        robots: RobotsCache,
        health: HostHealth,
        guard: AddressGuard,
        *,
        state_dir: Path | None,
        max_queues: int,
        capacity: int,
        host_cap: int,
        reputation: PLDInDegree | None = None,
        governor: LoadGovernor | None = None,
        give_up_after: float = 30.0,
        continuous: bool = False,
        dedup: bool = True,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.df = dupefilter
        #: False with DUPEFILTER_CLASS = scrapy.dupefilters.BaseDupeFilter (dedup off):
        #: every request and link goes to the frontier as if dont_filter were set, and
        #: URLseen (still the state's, and the request keys') gets nothing
        self.dedup = dedup
        self.dns = dns
        self.politeness = politeness
        self.robots = robots
        self.health = health
        self.guard = guard
        self.reputation = reputation  # STAR's budgets; None: every PLD has the default
        self.governor = governor  # the cap on fetches in flight; None: the engine's only
        self.ceiling = crawler.settings.getint("CONCURRENT_REQUESTS")
        self.max_crawl_delay = defaults.get(crawler.settings, "IRL_ROBOTS_MAX_CRAWL_DELAY")
        self.give_up_after = give_up_after  # IRL_GIVE_UP_AFTER (see _idle)
        self.continuous = continuous
        #: the clock's time a host last answered (or the crawl opened, or new URLs were
        #: stored): a finite crawl that is blocked gives up give_up_after past it
        self._progress_at = 0.0
        self.state_dir = state_dir
        self.max_queues = max_queues
        self.capacity = capacity
        self.host_cap = host_cap
        settings = crawler.settings
        self.obey_robots = settings.getbool("ROBOTSTXT_OBEY")
        self.user_agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        self.link_rules = LinkRules.from_crawler(crawler)
        self.spider: Spider | None = None
        self.frontier: Frontier | None = None
        self.waker = EngineWaker(crawler, _installed_reactor())
        self._lag_probe = LagProbe(self.waker.clock, self._lag_tick) if governor else None
        self._lock: DirectoryLock | None = None
        self._temporary = state_dir is None
        self.ledger: FetchLedger[VisitState, Item | MemoryItem | RobotsFetch] = FetchLedger()
        #: (URLseen batch, its URLs stored) of the last batch found in the state on open
        self._stored_before_restart = (-1, 0)
        self.journal: AdmittedJournal | None = None
        self._memory_seen: set[int] = set()  # keys of requests kept in RAM
        #: SCHEDULER_DEBUG: log the first request the codec cannot store, as Scrapy does
        self._log_unserializable = settings.getbool("SCHEDULER_DEBUG")
        self._stopped = False  # the disk is full: take no more work
        self._closing = False  # close() was called: no URLseen drain starts any more
        self._refusals: deque[Request] = deque()  # refused requests, back to the engine
        #: requests of schemes without hosts to be polite to (data:, file:, and those no
        #: download handler knows, which then fail with Scrapy's NotSupported), handed
        #: out first, in RAM, deduplicated by _memory_seen: they need no DNS, robots.txt
        #: or politeness
        self._direct: deque[Request] = deque()
        self._admission_due = 0.0  # the clock's time admission may run again
        self._refill_due = 0.0  # the clock's time _idle may flush URLseen and resume again
        self._merging = False  # a URLseen merge, or the drain of its results, is running
        self._drain_task: Any = None  # the task.CooperativeTask draining URLseen results

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IRLScheduler:
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
        base = defaults.get(settings, "IRL_STATE_DIR") or job_dir(settings)
        budget = defaults.get(settings, "IRL_BEAST_BUDGET")
        if budget < 1:
            raise ConfigurationError(f"IRL_BEAST_BUDGET={budget}: a budget must be >= 1")
        politeness = Politeness(
            host_delay=defaults.get(settings, "IRL_HOST_DELAY"),
            host_delay_min=defaults.get(settings, "IRL_HOST_DELAY_MIN"),
            ip_delay=defaults.get(settings, "IRL_IP_DELAY"),
            ip_delay_min=defaults.get(settings, "IRL_IP_DELAY_MIN"),
            default_budget=budget,
        )
        for name in ("IRL_WORKBENCH_URLS", "IRL_WORKBENCH_HOST_URLS"):
            if defaults.get(settings, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1")
        use_private_suffixes(defaults.get(settings, "IRL_STAR_PRIVATE_SUFFIXES"))
        reputation = None
        if defaults.get(settings, "IRL_STAR_ENABLED"):
            reputation = PLDInDegree.from_settings(
                settings, crawler.stats, _installed_reactor().seconds
            )
        lag_target = defaults.get(settings, "IRL_REACTOR_LAG_TARGET")
        if lag_target < 0:
            raise ConfigurationError(f"IRL_REACTOR_LAG_TARGET={lag_target}: must be >= 0")
        governor = None
        if lag_target > 0:
            governor = LoadGovernor(lag_target, settings.getint("CONCURRENT_REQUESTS"))
        scheduler = cls(
            crawler,
            dupefilter,
            dns_cache(crawler),
            politeness,
            RobotsCache.from_settings(settings),
            HostHealth.from_settings(settings),
            AddressGuard.from_setting(defaults.get(settings, "IRL_ALLOW_PRIVATE_ADDRESSES")),
            state_dir=Path(base) if base else None,
            max_queues=defaults.get(settings, "IRL_BEAST_MAX_QUEUES"),
            capacity=defaults.get(settings, "IRL_WORKBENCH_URLS"),
            host_cap=defaults.get(settings, "IRL_WORKBENCH_HOST_URLS"),
            reputation=reputation,
            governor=governor,
            give_up_after=defaults.get(settings, "IRL_GIVE_UP_AFTER"),
            continuous=defaults.get(settings, "IRL_CONTINUOUS"),
            dedup=dedup,
        )
        crawler.signals.connect(scheduler._left_downloader, signals.request_left_downloader)
        _schedulers[crawler] = scheduler
        return scheduler

    # -- open / close --------------------------------------------------------------------
    def open(self, spider: Spider) -> defer.Deferred[None] | None:
        try:
            self._open(spider)
        except Exception as exc:
            if disk_full(exc):
                raise IrlscrapyError(
                    f"the disk holding {self.state_dir} is full ({exc}): free some space, "
                    "then start the crawl again"
                ) from exc
            raise
        return None

    def _open(self, spider: Spider) -> None:
        self.spider = spider
        if self.state_dir is None:
            self.state_dir = Path(tempfile.mkdtemp(prefix="irlscrapy-state-"))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._lock = DirectoryLock(self.state_dir, "irlscrapy state")
        self._lock.acquire()
        self.df.batched = True
        self.df.path = self.state_dir / "urlseen"
        self.df.open()
        self.dns.open(self.state_dir / "dns")
        self.robots.open(self.state_dir / "robots")
        budget = self.politeness.default_budget
        budget_of: Callable[[int], int] = lambda _: budget  # noqa: E731
        if self.reputation is not None:
            self.reputation.on_error = lambda failure: self._failed(failure, "refreshing STAR")
            self.reputation.open(self.state_dir / "star")
            budget_of = self.reputation.budget_of
        self.journal = AdmittedJournal(self.state_dir)
        admitted = self.journal.open()
        beast = Beast(self.state_dir / "beast", budget_of, max_queues=self.max_queues)
        found: Counter[int] = Counter()
        beast.open(self.journal.cursor, lambda record: found.update((record_batch(record),)))
        found.update(record_batch(a.item) for a in admitted)
        found.pop(0, None)  # records from no URLseen batch
        if found:
            last = max(found)
            self._stored_before_restart = (last, found[last])

        def host_budget(host: str) -> int:
            """The budget of the host's PLD: where a host joins the workbench, and at
            every release (STAR's ranks change while it stays)."""
            return budget_of(domain_key(pld(host)))

        workbench = Workbench(self._host_delay, self._ip_delay, budget_of=host_budget)
        parked = ParkedStore(self.state_dir)
        parked_before = parked.open()
        self.frontier = Frontier(
            beast,
            workbench,
            self.journal,
            parked,
            self.dns.resolve,
            host_budget,
            self.stats,
            capacity=self.capacity,
            host_cap=self.host_cap,
            user_agent=self.user_agent,
            robots=self.robots if self.obey_robots else None,
            clock=self.waker.clock.seconds,
            max_crawl_delay=self.max_crawl_delay,
            guard=self.guard,
            on_ready=self._ready,
            on_refused=self._refused,
        )
        if admitted or len(beast):
            logger.info(
                "resuming from %s: %d URLs queued, %d admitted before the stop fetched again",
                self.state_dir,
                len(beast),
                len(admitted),
            )
        self.frontier.readmit(admitted)
        replayed = self.frontier.replay_parked(parked_before)
        if replayed:
            logger.info(
                "%d parked URLs (of hosts retired, or given up by the last run) queued again",
                replayed,
            )
        self.link_rules.set_allowed_domains(getattr(spider, "allowed_domains", None))
        self._progress_at = self.waker.clock.seconds()
        self._start_drain()  # results a previous run merged but did not store
        if self._lag_probe is not None:
            self._lag_probe.start()

    def close(self, reason: str) -> defer.Deferred[None] | None:
        self._closing = True
        self.waker.cancel()
        if self._lag_probe is not None:
            self._lag_probe.stop()
        # Fetches in flight, and pages whose links were not all handed over (a stop can
        # cut that short), stay admitted in the journal: fetched again on resume.
        if self._drain_task is not None:
            self._drain_task.stop()  # what it did not store is delivered again next run
        done: defer.Deferred[None] = defer.Deferred()
        closing = self.df.close(reason) or defer.succeed(None)
        if self.reputation is not None:
            reputation = self.reputation
            closing.addBoth(lambda _: reputation.close())
        closing.addBoth(lambda _: self._close_files(reason))
        closing.addBoth(lambda _: done.callback(None))
        return done

    def _close_files(self, reason: str) -> None:
        if self.frontier is not None:
            parked = self.frontier.parked.count
            if parked:
                self.stats.set_value("irl/frontier/parked_at_close", parked)
                logger.info(
                    "%d URLs of hosts or origins that kept failing are parked in %s%s",
                    parked,
                    self.state_dir,
                    ""
                    if self._temporary
                    else "; run the crawl again with the same JOBDIR to try them again",
                )
            self.frontier.close()
        elif self.journal is not None:
            self.journal.close()
        self.robots.close()
        self.dns.close()
        if self._lock is not None:
            self._lock.release()
        if self.state_dir is not None:
            self.crawler.signals.send_catch_log(
                state_closed, state_dir=self.state_dir, temporary=self._temporary, reason=reason
            )
        if self._temporary and self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    # -- in ------------------------------------------------------------------------------
    @_stops_when_disk_is_full(default=False)
    def enqueue_request(self, request: Request) -> bool:
        frontier = self._frontier()
        meta = request.meta
        token = meta.pop(FETCH_KEY, None)  # set: a retry or redirect of our own fetch
        self.stats.inc_value("irl/scheduler/enqueued/requests")
        if not request.url[:8].lower().startswith(FRONTIER_SCHEMES):
            return self._enqueue_direct(request, token)
        robots_host = meta.get(ROBOTS_KEY)
        own = token is not None and ("retry_times" in meta or "redirect_times" in meta)
        if robots_host is not None:  # robots.txt retried or redirected
            frontier.push_robots(request.url, RobotsFetch(robots_host, request))
        elif not request.dont_filter and not own and self.link_rules.trapped(request.url):
            logger.debug("Ignoring a crawler trap: %s", request.url)
            if token is not None:
                self._end(token)
                self._page_done(token)
            return False
        else:
            _forget_environment_proxy(request)
            try:
                payload = encode_request(request, self.spider)
            except RequestCodecError as exc:
                self._unserializable(request, exc)
                self._keep_in_memory(request, own)
            else:
                if request.dont_filter or not self.dedup:
                    if own:
                        frontier.push_direct(payload, request.priority)
                    else:
                        frontier.push(payload, request.priority)
                else:
                    aux = _AUX.pack(TO_HOST if own else TO_BEAST, request.priority) + payload
                    self.df.submit_requests([request], [aux])
                    self._submitted()
        if token is not None:  # stored first, then the fetch it replaces is over
            self._end(token)
            self._page_done(token)
        self._ready()
        return True

    def _enqueue_direct(self, request: Request, token: int | None) -> bool:
        """A request of a scheme the frontier does not schedule (see ``_direct``): kept
        in RAM, so a resume does not have it; with a JOBDIR, where Scrapy would store it
        on disk, one the codec could not store either is counted as Scrapy counts it."""
        if not self._temporary:
            try:
                encode_request(request, self.spider)
            except RequestCodecError as exc:
                self._unserializable(request, exc)
        kept = request.dont_filter or self._first_in_memory(request)
        if kept:
            self.stats.inc_value("scheduler/enqueued/memory")
            self._direct.append(request)
            self.waker.wake()
        if token is not None:  # a redirect of our own fetch to such a scheme
            self._end(token)
            self._page_done(token)
        return kept

    def _first_in_memory(self, request: Request) -> bool:
        """Has no request with the key of ``request`` been kept in RAM yet? (Scrapy's
        ``dupefilter/filtered`` counts those that had.)"""
        if not self.dedup:
            return True
        key = self.df.identity.request_key(request)
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

    def _refused(self, item: Item | MemoryItem, why: str) -> None:
        """A URL dropped by robots.txt or DNS: a Request (not a link) goes back to the
        engine marked so, and FetchEndMiddleware fails it as Scrapy would have (its
        errback sees IgnoreRequest, or CannotResolveHostError)."""
        if isinstance(item, MemoryItem):
            request = item.request
        elif payload_kind(item[0]) != LINK:
            request = decode_request(item[0], self.spider)
        else:
            return
        request.meta[REFUSED_KEY] = why
        self._refusals.append(request)
        self._ready()

    @_stops_when_disk_is_full(default=None)
    def enqueue_links(self, links: Links, response: Response | None = None) -> None:
        """Queue a page's links (the fast path: strings, no Request objects), under the
        rules Scrapy's spider middlewares apply to Requests (:mod:`.linkrules`);
        ``response``: the page, whose Referrer-Policy header counts."""
        frontier = self._frontier()
        rules = self.link_rules
        depth = rules.depth(links.depth)
        if depth is None:
            logger.debug("Ignoring the links of %s (depth > %d)", links.source, rules.depth_limit)
            return
        urls = rules.keep(links.urls)
        if not urls:
            return
        self.stats.inc_value("irl/scheduler/enqueued/links", len(urls))
        priority = rules.priority(depth)
        referers = rules.referers(links.source, urls, response)
        payloads = [
            encode_link(url, depth, links.callback, referers.get(origin(url))) for url in urls
        ]
        if not self.dedup:
            for payload in payloads:
                frontier.push(payload, priority)
            self._ready()
            return
        head = _AUX.pack(TO_BEAST, priority)
        self.df.submit_urls(urls, [head + payload for payload in payloads])
        self._submitted()

    @_stops_when_disk_is_full(default=None)
    def record_page(self, source: str, targets: set[str]) -> None:
        """STAR: a crawled page of PLD ``source`` links to the PLDs ``targets``."""
        if self.reputation is not None:
            self.reputation.record_page(source, targets)

    # -- URLseen -------------------------------------------------------------------------
    def _submitted(self) -> None:
        """URLs went to URLseen: merge when a batch is full, or at once when nothing is
        in flight (no fetch will end to wake the engine: the no-idle invariant)."""
        if self.df.should_merge() or not self.ledger:
            self._flush()

    def _flush(self) -> None:
        if self._merging:
            return
        self._merging = True
        merge = self.df.flush()
        merge.addCallback(lambda _: self._start_drain())
        merge.addErrback(self._fatal, "merging URLseen")

    def _start_drain(self) -> None:
        if self._closing:
            # A merge that ends during close: URLseen is closed right after it, so its
            # results are not drained now; they are delivered again on the next run
            # (JOBDIR), like those of a drain that close() stops.
            return
        self._merging = True
        self._drain_task = task.cooperate(self._drain_results())
        drain = self._drain_task.whenDone()
        drain.addCallback(self._drained)
        drain.addErrback(self._drain_failed)

    def _drained(self, _: Any) -> None:
        self._merging = False
        self._drain_task = None
        if self.df.pending and not self.ledger:
            # URLs submitted during the merge, and no fetch will end to flush them
            # (the no-idle invariant; _submitted skipped them while the merge ran)
            self._flush()
        frontier = self.frontier
        if frontier is not None and frontier.can_admit():
            self.waker.wake()  # new hosts' robots.txt may be due at once: admit them now
        else:
            self._ready()

    def _drain_failed(self, failure: Failure) -> None:
        self._drain_task = None
        if not failure.check(task.TaskStopped):
            self._fatal(failure, "storing unique URLs")

    def _drain_results(self) -> Iterator[None]:
        frontier = self._frontier()
        done = 0
        for batch in self.df.results():
            done += self._store(frontier, batch)
            self.df.ack(batch.seq)
            if done >= DRAIN_SLICE:
                done = 0
                frontier.admit()
                yield None

    def _store(self, frontier: Frontier, batch: ResultBatch) -> int:
        unique = batch.unique.nonzero()[0].tolist()
        assert batch.aux is not None
        filtered = len(batch.unique) - len(unique)
        if filtered:
            self.stats.inc_value("dupefilter/filtered", filtered)
        self.stats.inc_value("irl/urlseen/unique", len(unique))
        if unique:
            self._progress_at = self.waker.clock.seconds()
        tag = batch.seq + 1  # the frontier's batch tag (0: no batch)
        last_tag, stored = self._stored_before_restart
        if tag < last_tag:
            return len(batch.unique)  # stored before a restart, not yet acknowledged
        if tag == last_tag:
            unique = unique[stored:]  # a restart cut it short: store the rest
        for i in unique:
            aux = batch.aux[i]
            route, priority = _AUX.unpack_from(aux)
            payload = aux[_AUX.size :]
            if route == TO_BEAST:
                frontier.push(payload, priority, tag)
            else:
                frontier.push_direct(payload, priority, tag)
        return len(batch.unique)

    def _fatal(self, failure: Failure, what: str) -> None:
        """URLseen's merge or drain failed: it is not running any more."""
        self._merging = False
        self._failed(failure, what)

    def _failed(self, failure: Failure, what: str) -> None:
        if disk_full(failure.value):
            self._stop_disk_full(failure.value)
            return
        logger.error(
            "irlscrapy: %s failed; closing the spider",
            what,
            exc_info=failure_to_exc_info(failure),
        )
        close_spider(self.crawler, "irlscrapy_error")

    def _stop_disk_full(self, exc: BaseException | None) -> None:
        """Out of disk space: stop taking work, close the spider, say how to go on.
        Everything written before is whole (each store appends whole records), so the
        state directory resumes once there is room."""
        if self._stopped:
            return
        self._stopped = True
        logger.error(
            "irlscrapy: the disk holding %s is full (%s); the crawl stops. Free some space, "
            "then run the crawl again with the same JOBDIR (or IRL_STATE_DIR) to resume.",
            self.state_dir,
            exc,
        )
        close_spider(self.crawler, DISK_FULL_REASON)

    # -- out -----------------------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        frontier = self._frontier()
        return bool(
            len(frontier)
            or self._refusals
            or self._direct
            or self._merging
            or self.df.pending
            or (self.continuous and (frontier.parked.count or frontier.bench.in_force()))
        )

    def __len__(self) -> int:
        return len(self._frontier()) + self.df.pending + len(self._direct)

    def status(self) -> dict[str, int]:
        """The frontier now, for the progress line and the status endpoint: RAM reads
        only (``ips_due`` walks the due part of the IP heap, up to DUE_COUNT_LIMIT)."""
        frontier = self.frontier
        if frontier is None:
            return {}
        workbench = frontier.workbench
        return {
            "urlseen_pending": self.df.pending,
            "beast_urls": len(frontier.beast),
            "beast_queues": frontier.beast.j,
            "beast_overflow_urls": frontier.beast.qf_records,
            "dns_waiting_urls": frontier.waiting_dns,
            "workbench_urls": len(workbench),
            "workbench_hosts": len(workbench.hosts),
            "workbench_ips": len(workbench.ips),
            "ips_due": workbench.due_ips(self.waker.clock.seconds(), DUE_COUNT_LIMIT),
            "fetches_in_flight": len(self.ledger),
            "urlseen_merging": int(self._merging),
            "admission_paused": int(frontier.admission_paused),
            "workbench_full": int(frontier.ram_full),
            "held_urls": len(frontier.bench),
            "parked_urls": frontier.parked.count,
            "fetch_cap": self._fetch_cap(),
        }

    def idle_status(self) -> dict[str, int] | None:
        """What the no-idle watch (irlscrapy.report.idlewatch) samples ten times a
        second: status()'s figures it reads, the due IPs counted (up to one) only when
        nothing is in flight, so a busy crawl pays nothing for the walk."""
        frontier = self.frontier
        if frontier is None or self._stopped or not self.waker.engine_asks():
            return None  # stopped (disk full) or closing: the rest waits for a rerun
        in_flight = len(self.ledger)
        idle = not in_flight and not self._merging
        now = self.waker.clock.seconds()
        return {
            "fetches_in_flight": in_flight,
            "urlseen_merging": int(self._merging),
            "urlseen_pending": self.df.pending,
            "beast_urls": len(frontier.beast),
            "admission_paused": int(frontier.admission_paused),
            "workbench_full": int(frontier.ram_full),
            "ips_due": frontier.workbench.due_ips(now, 1) if idle else 0,
        }

    @_stops_when_disk_is_full(default=None)
    def next_request(self) -> Request | None:
        frontier = self._frontier()
        if self._refusals:
            return self._refusals.popleft()
        if self._direct:
            self.stats.inc_value("irl/scheduler/dequeued")
            return self._direct.popleft()
        if self.governor is not None and not self.governor.admits(len(self.ledger)):
            return None  # a fetch that ends wakes the engine (_ready)
        if self.df.behind():
            # More fetches would only grow URLseen's backlog (measured: 34 million URLs
            # pending behind one starved merge). The drain after the merge wakes the engine.
            self.stats.inc_value("irl/scheduler/held_for_urlseen")
            return None
        now = self.waker.clock.seconds()
        if now >= self._admission_due:
            # At most every ADMIT_INTERVAL: the engine asks for a request per free
            # downloader slot, dozens in one reactor turn, and admitting on each call made
            # turns of 50-100 ms; once per turn took a fifth of the core when turns were
            # short (the load governor's), mostly deferring records of full hosts.
            self._admission_due = now + ADMIT_INTERVAL
            frontier.admit()
        if frontier.can_admit():
            self.waker.wake_at(self._admission_due)  # come back for the rest
        if not len(frontier.beast) and not self._merging and self.df.pending:
            self._flush()  # the early flush: BEAST is dry, the workbench will be next
        self._sweep_pages(now)
        got = frontier.take(now)
        if got is None:
            self._idle(frontier)
            return None
        state, item = got
        token = self.ledger.hand_out(state, item, robots=isinstance(item, RobotsFetch))
        request = self._request(state, item)
        request.meta[FETCH_KEY] = token
        self.stats.inc_value("irl/scheduler/dequeued")
        if _own_download_slot(request, state.ip):
            self._end(token)
        return request

    def _lag_tick(self, lag: float) -> None:
        governor = self.governor
        assert governor is not None
        cap = governor.cap
        governor.tick(lag, len(self.ledger))
        if governor.cap != cap:
            self.stats.set_value("irl/governor/cap", governor.cap)
            self.stats.set_value("irl/governor/cuts", governor.cuts)
            if governor.cap > cap:
                self.waker.wake()  # room for one more fetch

    def _idle(self, frontier: Frontier) -> None:
        """Nothing is due. Keep the no-idle invariant (see the class docstring): with
        nothing in flight, no fetchable work may sit in URLseen or BEAST; with fetches
        in flight but room for more (below the cap), URLseen is flushed and admission
        resumed at most every IDLE_REFILL_INTERVAL, since new hosts may be due at once
        (a hung fetch can hold the only IP the workbench has for a whole timeout). A
        finite crawl whose work is all blocked ends after a bounded wait; otherwise the
        engine is woken when something will be due."""
        now = self.waker.clock.seconds()
        idle = not self.ledger and not self._refusals
        refill = now >= self._refill_due and len(self.ledger) < self._fetch_cap()
        if (idle or refill) and self.df.pending and not self._merging:
            self._flush()
        if refill:
            # When every record left in BEAST is of a full host, each resume reads and
            # gives back up to frontier.DEFERRAL_RUN of them: hence the interval.
            self._refill_due = now + IDLE_REFILL_INTERVAL
            frontier.resume_admission()
        if idle:
            if frontier.can_admit() and frontier.admit():
                self.waker.wake()
                return
            if self._blocked(frontier):
                due = frontier.next_due()
                deadline = self._progress_at + self._give_up_wait(frontier)
                waits_on_failures = due is None or frontier.waits_on_failures(now)
                if (
                    not self.continuous
                    and waits_on_failures
                    and (due is None or due > deadline or now >= deadline)
                ):
                    self._give_up(frontier)
                elif due is not None:
                    self.waker.wake_at(due if self.continuous else min(due, deadline))
                return
        due = frontier.next_due()
        if due is not None:
            self.waker.wake_at(due)

    def _fetch_cap(self) -> int:
        return self.governor.cap if self.governor is not None else self.ceiling

    def _blocked(self, frontier: Frontier) -> bool:
        """Nothing in flight, nothing due, and nothing queued outside the workbench and
        the bench: what is left waits on politeness, or on back-off, retirement or a
        robots.txt retry (only those are ever given up: Frontier.waits_on_failures)."""
        return not (self._merging or self.df.pending or len(frontier.beast) or frontier.waiting_dns)

    def _give_up_wait(self, frontier: Frontier) -> float:
        """How long a blocked finite crawl waits after the last answer before it gives
        up: IRL_GIVE_UP_AFTER beyond the longest politeness delay in force (the delays,
        and the Crawl-delay of a host in the workbench), so no wait that politeness
        alone imposes is given up, only waits on back-off, retirement or robots.txt."""
        politeness = self.politeness
        longest = max(politeness.host_delay, politeness.ip_delay)
        for state in frontier.workbench.hosts.values():
            longest = max(longest, state.crawl_delay)
        return self.give_up_after + longest

    def _give_up(self, frontier: Frontier) -> None:
        given = frontier.give_up()
        self._progress_at = self.waker.clock.seconds()
        if given:
            self.stats.inc_value("irl/frontier/given_up", given)
            logger.info(
                "gave up on %d URLs: their hosts or origins are in back-off or retired and "
                "nothing else is left to crawl (IRL_GIVE_UP_AFTER; IRL_CONTINUOUS waits "
                "instead). They are parked in the state directory.",
                given,
            )
        self.waker.wake()  # the engine sees no pending request and closes the spider

    def _request(self, state: VisitState, item: Item | MemoryItem | RobotsFetch) -> Request:
        if isinstance(item, RobotsFetch):
            if item.request is not None:
                return item.request
            self.stats.inc_value("robotstxt/request_count")
            return Request(
                f"{_scheme_of(state)}://{state.host}/robots.txt",
                callback=self._robots_answered,
                errback=self._robots_failed,
                meta={
                    ROBOTS_KEY: item.host,
                    "handle_httpstatus_list": ROBOTS_STATUSES,
                    "redirect_ttl": REDIRECT_HOPS,
                },
                dont_filter=True,
            )
        if isinstance(item, MemoryItem):
            return item.request
        payload = item[0]
        if payload_kind(payload) != LINK:
            return decode_request(payload, self.spider)
        link = link_from_payload(payload)
        callback = getattr(self.spider, link.callback) if link.callback else None
        headers = {"Referer": link.referer} if link.referer else None
        return Request(link.url, callback=callback, headers=headers, meta={"depth": link.depth})

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        self.fetch_ended(request)

    @_stops_when_disk_is_full(default=None)
    def fetch_ended(self, request: Request) -> None:
        """The request left the downloader, or ended before reaching it (see
        FetchEndMiddleware): release its host and IP. A robots.txt fetch keeps its host
        until the outcome is known (its rules, or its retry or redirect queued), so no
        URL of the host can slip out in between."""
        token = request.meta.get(FETCH_KEY)
        fetch = self.ledger.in_flight(token)
        if token is None or fetch is None:
            return
        if fetch.robots:
            fetch.ended = self.waker.clock.seconds()
        else:
            self._end(token)

    def _end(self, token: int) -> None:
        """Release the host and IP of a fetch; its page is still to be processed."""
        now = self.waker.clock.seconds()
        fetch = self.ledger.end(token, now)
        if fetch is None:
            return  # already released
        end = fetch.ended if fetch.ended is not None else now
        self._frontier().workbench.release(fetch.state, end, ip_only=fetch.robots)
        self._ready()

    def fetch_failed(self, request: Request) -> None:
        """The request failed for good (no retry follows): no page, nothing to hand over."""
        self.page_done(request)

    @_stops_when_disk_is_full(default=None)
    def page_done(self, request: Request) -> None:
        """The spider has handled the response of ``request`` (see PageDoneMiddleware):
        its URL is done for good, its links already submitted."""
        token = request.meta.get(FETCH_KEY)
        if token is None:
            return
        fetch = self.ledger.in_flight(token)
        if fetch is not None and fetch.robots:
            return  # a robots.txt fetch ends with its outcome (_robots_outcome)
        self._end(token)
        self._page_done(token)

    def _page_done(self, token: int) -> None:
        item = self.ledger.page_done(token)
        if item is not None:
            self._frontier().finished(item)

    def _sweep_pages(self, now: float) -> None:
        """Pages whose end no middleware reported (a response no callback saw, a
        download error) are done ledger.PAGE_DONE_AFTER seconds after their fetch
        ended."""
        for item in self.ledger.sweep(now):
            self._frontier().finished(item)

    def _ready(self) -> None:
        frontier = self.frontier
        if frontier is None:
            return
        due = frontier.next_due()
        if due is not None:
            self.waker.wake_at(due)
        elif not self._merging:
            self.waker.wake()

    # -- robots.txt ----------------------------------------------------------------------
    def _robots_answered(self, response: Response) -> None:
        # RobotsTxtMiddleware's stats, for dashboards that read them
        self.stats.inc_value("robotstxt/response_count")
        self.stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        rules = self._robots_outcome(response.request, response.status, response.body)
        if rules is not None and 200 <= response.status < 300:
            # Scrapy's signal, for extensions written for RobotsTxtMiddleware
            self.crawler.signals.send_catch_log(
                signals.robots_parsed, robotparser=rules, request=response.request
            )

    def _robots_failed(self, failure: Failure) -> None:
        response = getattr(failure.value, "response", None)
        request = failure.request  # type: ignore[attr-defined]
        if response is not None:
            self._robots_outcome(request, response.status, response.body)
        elif failure.check(IgnoreRequest) and request.meta.get("redirect_times"):
            # Redirected more than REDIRECT_HOPS times: RFC 9309 2.3.1.2 counts a
            # redirect not followed as "unavailable" (4xx).
            self._robots_outcome(request, 400, b"")
        else:
            self._robots_outcome(request, None, b"")

    def _robots_outcome(
        self, request: Request | None, status: int | None, body: bytes
    ) -> RobotsRules | None:
        assert request is not None
        rules = self._frontier().robots_known(request.meta[ROBOTS_KEY], status, body)
        token = request.meta.get(FETCH_KEY)
        if token is not None:
            self._end(token)
        return rules

    # -- host health ---------------------------------------------------------------------
    def host_answered(self, request: Request) -> None:
        """The host of ``request`` answered (with anything but 429 or 503)."""
        self._progress_at = self.waker.clock.seconds()
        state = self._host_of(request)
        if state is not None:
            self.health.answered(state, url_origin(request.url), self._frontier())

    @_stops_when_disk_is_full(default=None)
    def host_failed(self, request: Request, retry_after: float | None) -> None:
        """The host of ``request`` answered 429 or 503 (asking to wait ``retry_after``
        seconds, if it said): back it off, or retire it."""
        state = self._host_of(request)
        if state is not None:
            now = self.waker.clock.seconds()
            self.health.failed(state, self._frontier(), now, retry_after, self.stats)
            self._ready()

    @_stops_when_disk_is_full(default=None)
    def origin_failed(self, request: Request) -> None:
        """No connection to the origin of ``request`` (refused, reset, timed out):
        back the origin off, or retire it; the host's other origins go on. A robots.txt
        fetch counts too (its retry is the robots cache's): so the host's next robots.txt
        fetch goes to an origin that may answer (``_scheme_of``)."""
        state = self.frontier.workbench.hosts.get(url_host(request.url)) if self.frontier else None
        if state is not None:
            now = self.waker.clock.seconds()
            origin = url_origin(request.url)
            self.health.origin_failed(state, origin, self._frontier(), now, self.stats)
            self._ready()

    def _host_of(self, request: Request) -> VisitState | None:
        """The visit state of a page request's host (robots.txt fetches have their own
        retry schedule, see the robots cache)."""
        if ROBOTS_KEY in request.meta or self.frontier is None:
            return None
        return self.frontier.workbench.hosts.get(url_host(request.url))

    # -- delays --------------------------------------------------------------------------
    def _host_delay(self, state: VisitState) -> float:
        return self.politeness.host(state.budget, state.crawl_delay, state.backoff)

    def _ip_delay(self, entry: IPEntry) -> float:
        return self.politeness.ip(entry.mean_budget, entry.backoff)

    def _frontier(self) -> Frontier:
        assert self.frontier is not None, "open() first"
        return self.frontier


def _installed_reactor() -> Any:
    from twisted.internet import reactor  # the one Scrapy installed: import it late

    return reactor


def _scheme_of(state: VisitState) -> str:
    """The scheme of a host's URLs (its robots.txt is fetched with it): that of its
    first URL; an origin whose connections failed has its URLs held out of the host
    (irlscrapy.scheduler.frontier.parking), so this is one that has not failed."""
    for _, item in state.urls:
        if isinstance(item, tuple):
            return item_url(item).partition(":")[0]
    return "http"
