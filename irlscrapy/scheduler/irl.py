"""``IRLScheduler``: Scrapy's SCHEDULER on the IRL frontier (DESIGN.md sections 2-3).

Use it with its dupefilter (the add-on ``irlscrapy.Addon`` sets both)::

    SCHEDULER = "irlscrapy.scheduler.irl.IRLScheduler"
    DUPEFILTER_CLASS = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.http import Response
from scrapy.utils.log import failure_to_exc_info
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet import defer
from twisted.python.failure import Failure

from irlscrapy import defaults
from irlscrapy.closing import close_spider
from irlscrapy.domains import use_private_suffixes
from irlscrapy.dupefilters.urlseen import DRUMDupeFilter
from irlscrapy.exceptions import ConfigurationError, IrlscrapyError
from irlscrapy.internals import EngineWaker
from irlscrapy.lagprobe import LagProbe
from irlscrapy.links import Links
from irlscrapy.scheduler.diskfull import DISK_FULL_REASON, disk_full, stops_when_disk_is_full
from irlscrapy.scheduler.dispatch import Dispatcher, DispatchSettings
from irlscrapy.scheduler.frontier.loadgovernor import LoadGovernor
from irlscrapy.scheduler.hosts.services import HostServices
from irlscrapy.scheduler.intake import Intake
from irlscrapy.scheduler.keys import FETCH_KEY, state_closed
from irlscrapy.scheduler.linkrules import LinkRules
from irlscrapy.scheduler.pipeline import Frontier
from irlscrapy.scheduler.resume import FrontierSettings, open_frontier, resume
from irlscrapy.services import provide, provided
from irlscrapy.star.indegree import PLDInDegree
from irlscrapy.statedir import StateDirectory

logger = logging.getLogger(__name__)


class IRLScheduler(BaseScheduler):
    """Scrapy's SCHEDULER on the IRL frontier.

    Theory of operation
    -------------------
    A Request (``enqueue_request``) or a page's ``Links`` (:meth:`enqueue_links`;
    a middleware finds the crawl's scheduler with :meth:`of`) goes through the *intake*
    (:mod:`irlscrapy.scheduler.intake`): encoded to bytes, checked by URLseen in
    batches, and its unique URLs stored in BEAST before URLseen's batch is acknowledged
    (nothing discovered is lost). From BEAST a URL goes through DNS and robots.txt into
    the workbench (the *frontier*, :mod:`irlscrapy.scheduler.pipeline`, on the
    structures of :mod:`irlscrapy.scheduler.frontier` and the host services of
    :mod:`irlscrapy.scheduler.hosts`). ``next_request`` is the *dispatcher*'s
    (:mod:`irlscrapy.scheduler.dispatch`): it hands out the top due host's next URL,
    built into a Request only then (a robots.txt fetch first, for a host whose rules
    are unknown: :mod:`irlscrapy.scheduler.robotsfetch`), follows each fetch from
    hand-out to release to page done (:mod:`irlscrapy.scheduler.ledger`), keeps the
    no-idle promise, and wakes the engine when the next host becomes due
    (:mod:`irlscrapy.internals`). This class wires them, opens and closes the state
    directory (:mod:`irlscrapy.scheduler.statedir`, which maps its files), and stops
    the crawl cleanly when the disk is full (:mod:`irlscrapy.scheduler.diskfull`).

    Differences from Scrapy's stock scheduler, by design:

    - ``enqueue_request`` cannot know yet whether a request is a duplicate (URLseen
      answers in batches), so it returns True and duplicates are counted in
      ``dupefilter/filtered`` without a ``request_dropped`` signal;
    - the order is BEAST's across domains and ``Request.priority`` only within a host.

    Stats: ``irl/scheduler/enqueued/{requests,links}``, ``irl/scheduler/dequeued``,
    ``irl/urlseen/unique``, ``irl/frontier/*``, ``irl/robots/*``, ``irl/dns/*``,
    ``irl/guard/*``, ``irl/hosts/*`` (host health), ``irl/traps/*``,
    ``irl/governor/{cap,cuts}``, and Scrapy's ``dupefilter/filtered``,
    ``offsite/filtered``, ``scheduler/unserializable``, ``scheduler/enqueued/memory``
    (requests kept in RAM), ``urllength/request_ignored_count``, ``request_depth_max``,
    ``robotstxt/{request_count,response_count,forbidden}`` and
    ``robotstxt/response_status_count/<status>`` (as RobotsTxtMiddleware counts them).
    """

    def __init__(
        self,
        crawler: Crawler,
        intake: Intake,
        hosts: HostServices,
        state: StateDirectory,
        frontier_settings: FrontierSettings,
        dispatch_settings: DispatchSettings,
        *,
        indegree: PLDInDegree | None = None,
        governor: LoadGovernor | None = None,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.intake = intake
        self.df = intake.df
        self.waker = intake.waker
        self.hosts = hosts
        self.state = state
        self.frontier_settings = frontier_settings
        self.dispatch_settings = dispatch_settings
        self.indegree = indegree  # STAR's budgets; None: every PLD has the default
        self.governor = governor  # the cap on fetches in flight; None: the engine's only
        self.frontier: Frontier | None = None
        self.dispatcher: Dispatcher | None = None
        self._lag_probe: LagProbe | None = None
        self.stopped = False  # the disk is full: take no more work

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
        use_private_suffixes(defaults.get(settings, "IRL_STAR_PRIVATE_SUFFIXES"))
        reactor = _installed_reactor()
        state = StateDirectory.of(crawler)
        intake = Intake(
            dupefilter,
            LinkRules.from_crawler(crawler),
            crawler.stats,
            EngineWaker(crawler, reactor),
            dedup=dedup,
            persistent=not state.temporary,
            log_unserializable=settings.getbool("SCHEDULER_DEBUG"),
        )
        indegree = None
        if defaults.get(settings, "IRL_STAR_ENABLED"):
            indegree = PLDInDegree.from_settings(settings, crawler.stats, reactor.seconds)
        scheduler = cls(
            crawler,
            intake,
            HostServices.from_crawler(crawler),
            state,
            FrontierSettings.from_settings(settings),
            DispatchSettings.from_settings(settings),
            indegree=indegree,
            governor=LoadGovernor.from_settings(settings),
        )
        crawler.signals.connect(scheduler._left_downloader, signals.request_left_downloader)
        provide(crawler, scheduler, IRLScheduler)
        return scheduler

    @classmethod
    def of(cls, crawler: Crawler) -> IRLScheduler | None:
        """The crawl's IRL scheduler, if it runs one (:mod:`irlscrapy.services`): how a
        middleware hands over a page's ``Links`` (``IRLScheduler.of(crawler)
        .enqueue_links(links)``), fetch ends and host health. None: Scrapy's stock
        scheduler (or another) runs, and Links must become Requests."""
        return provided(crawler, IRLScheduler)

    @property
    def state_dir(self) -> Path | None:
        """The state directory (None before open without IRL_STATE_DIR or JOBDIR)."""
        return self.state.path

    # -- open / close --------------------------------------------------------------------
    def open(self, spider: Spider) -> defer.Deferred[None] | None:
        try:
            self._open(spider)
        except Exception as exc:
            if disk_full(exc):
                raise IrlscrapyError(
                    f"the disk holding {self.state.path} is full ({exc}): free some space, "
                    "then start the crawl again"
                ) from exc
            raise
        return None

    def _open(self, spider: Spider) -> None:
        state, hosts = self.state, self.hosts
        state.open()
        self.df.batched = True
        self.df.open()
        hosts.open(state)
        budget = hosts.politeness.default_budget
        budget_of: Callable[[int], int] = lambda _: budget  # noqa: E731
        if self.indegree is not None:
            self.indegree.on_error = lambda failure: self._failed(failure, "refreshing STAR")
            self.indegree.open(state / "star")
            budget_of = self.indegree.budget_of
        frontier, found = open_frontier(
            state,
            self.frontier_settings,
            hosts.politeness,
            budget_of,
            hosts.robots,
            resolve=hosts.dns.resolve,
            stats=self.stats,
            clock=self.waker.clock.seconds,
            guard=hosts.guard,
        )
        dispatcher = Dispatcher(
            frontier,
            self.intake,
            self.waker,
            hosts.politeness,
            hosts.health,
            self.stats,
            self.crawler.signals,
            spider,
            self.dispatch_settings,
            self.governor,
        )
        frontier.on_ready, frontier.on_refused = dispatcher.ready, dispatcher.refused
        self.frontier, self.dispatcher = frontier, dispatcher
        resume(frontier, found)
        self.intake.open(
            spider,
            frontier,
            found.stored_before_restart,
            fetch_over=dispatcher.fetch_over,
            ready=dispatcher.ready,
            in_flight=lambda: len(dispatcher.ledger),
            progress=dispatcher.progress,
            failed=self._failed,
        )
        if self.governor is not None:
            self._lag_probe = LagProbe(self.waker.clock, dispatcher.lag_tick)
            self._lag_probe.start()

    def close(self, reason: str) -> defer.Deferred[None] | None:
        self.intake.close()
        self.waker.cancel()
        if self._lag_probe is not None:
            self._lag_probe.stop()
        # Fetches in flight, and pages whose links were not all handed over (a stop can
        # cut that short), stay admitted in the journal: fetched again on resume.
        done: defer.Deferred[None] = defer.Deferred()
        closing = self.df.close(reason) or defer.succeed(None)
        if self.indegree is not None:
            indegree = self.indegree
            closing.addBoth(lambda _: indegree.close())
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
                    self.state.path,
                    ""
                    if self.state.temporary
                    else "; run the crawl again with the same JOBDIR to try them again",
                )
            self.frontier.close()
        self.hosts.close()
        if self.state.path is not None:
            self.crawler.signals.send_catch_log(
                state_closed,
                state_dir=self.state.path,
                temporary=self.state.temporary,
                reason=reason,
            )
        self.state.close()

    def _failed(self, failure: Failure, what: str) -> None:
        if disk_full(failure.value):
            self.stop_disk_full(failure.value)
            return
        logger.error(
            "irlscrapy: %s failed; closing the spider", what, exc_info=failure_to_exc_info(failure)
        )
        close_spider(self.crawler, "irlscrapy_error")

    def stop_disk_full(self, exc: BaseException | None) -> None:
        """Out of disk space: stop taking work, close the spider, say how to go on."""
        if self.stopped:
            return
        self.stopped = True
        logger.error(
            "irlscrapy: the disk holding %s is full (%s); the crawl stops. Free some space, "
            "then run the crawl again with the same JOBDIR (or IRL_STATE_DIR) to resume.",
            self.state.path,
            exc,
        )
        close_spider(self.crawler, DISK_FULL_REASON)

    # -- Scrapy's scheduler interface ----------------------------------------------------
    def has_pending_requests(self) -> bool:
        frontier, dispatcher, intake = self._frontier(), self.dispatcher, self.intake
        waits = self.dispatch_settings.continuous and (
            frontier.parked.count or frontier.bench.in_force()
        )
        refusals = dispatcher is not None and dispatcher.refusals
        return bool(
            len(frontier) or refusals or intake.direct or intake.merging or intake.pending or waits
        )

    def __len__(self) -> int:
        return len(self._frontier()) + self.intake.pending + len(self.intake.direct)

    @stops_when_disk_is_full(default=False)
    def enqueue_request(self, request: Request) -> bool:
        self._frontier()
        token = request.meta.pop(FETCH_KEY, None)  # set: a retry or redirect of our own fetch
        return self.intake.enqueue_request(request, token)

    @stops_when_disk_is_full(default=None)
    def next_request(self) -> Request | None:
        self._frontier()
        assert self.dispatcher is not None
        return self.dispatcher.next_request()

    # -- what irlscrapy's middlewares tell it --------------------------------------------
    @stops_when_disk_is_full(default=None)
    def enqueue_links(self, links: Links, response: Response | None = None) -> None:
        """Queue a page's links (the fast path: see Intake.enqueue_links)."""
        self.intake.enqueue_links(links, response)

    @stops_when_disk_is_full(default=None)
    def record_page(self, source: str, targets: set[str]) -> None:
        """STAR: a crawled page of PLD ``source`` links to the PLDs ``targets``."""
        if self.indegree is not None:
            self.indegree.record_page(source, targets)

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        self.fetch_ended(request)

    @stops_when_disk_is_full(default=None)
    def fetch_ended(self, request: Request) -> None:
        """The request left the downloader, or ended before reaching it (see
        FetchEndMiddleware): release its host and IP (Dispatcher.fetch_ended)."""
        if self.dispatcher is not None:
            self.dispatcher.fetch_ended(request)

    def fetch_failed(self, request: Request) -> None:
        """The request failed for good (no retry follows): no page, nothing to hand over."""
        self.page_done(request)

    @stops_when_disk_is_full(default=None)
    def page_done(self, request: Request) -> None:
        """The spider has handled the response of ``request`` (see PageDoneMiddleware)."""
        if self.dispatcher is not None:
            self.dispatcher.page_done(request)

    def host_answered(self, request: Request) -> None:
        """The host of ``request`` answered (with anything but 429 or 503)."""
        if self.dispatcher is not None:
            self.dispatcher.host_answered(request)

    @stops_when_disk_is_full(default=None)
    def host_failed(self, request: Request, retry_after: float | None) -> None:
        """The host of ``request`` answered 429 or 503 (asking to wait ``retry_after``
        seconds, if it said): back it off, or retire it."""
        if self.dispatcher is not None:
            self.dispatcher.host_failed(request, retry_after)

    @stops_when_disk_is_full(default=None)
    def origin_failed(self, request: Request) -> None:
        """No connection to the origin of ``request`` (refused, reset, timed out):
        back the origin off, or retire it; the host's other origins go on. A robots.txt
        fetch counts too (its retry is the robots cache's): so the host's next robots.txt
        fetch goes to an origin that may answer (robotsfetch.scheme_of)."""
        if self.dispatcher is not None:
            self.dispatcher.origin_failed(request)

    # -- status --------------------------------------------------------------------------
    def status(self) -> dict[str, int]:
        """The frontier now, for the progress line and the status endpoint."""
        return self.dispatcher.status() if self.dispatcher is not None else {}

    def idle_status(self) -> dict[str, int] | None:
        """What the no-idle watch (irlscrapy.report.idlewatch) samples; None while
        stopped (disk full) or closing: the rest waits for a rerun."""
        if self.dispatcher is None or self.stopped or not self.waker.engine_asks():
            return None
        return self.dispatcher.idle_status()

    def _frontier(self) -> Frontier:
        assert self.frontier is not None, "open() first"
        return self.frontier


def _installed_reactor() -> Any:
    from twisted.internet import reactor  # the one Scrapy installed: import it late

    return reactor
