"""``IRLScheduler``: Scrapy's SCHEDULER on the IRL frontier (docs/architecture.md, section 2).

Use it with its dupefilter (the add-on ``irlscrapy.Addon`` sets both)::

    SCHEDULER = "irlscrapy.scheduler.irl.IRLScheduler"
    DUPEFILTER_CLASS = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.internet import defer

from irlscrapy import defaults
from irlscrapy.exceptions import IrlscrapyError, disk_full
from irlscrapy.links import Links
from irlscrapy.runtime.crawlservices import crawl_plds, provide, provided
from irlscrapy.runtime.internals import EngineWaker, switch_off_downloader_delay
from irlscrapy.runtime.lagprobe import LagProbe
from irlscrapy.runtime.openfailure import UNWRITABLE, report_open_failure
from irlscrapy.runtime.workers import installed_reactor
from irlscrapy.scheduler.diskfull import CrawlStop, stops_when_disk_is_full
from irlscrapy.scheduler.dispatch import Dispatcher, DispatchSettings
from irlscrapy.scheduler.emptycrawl import EmptyCrawlCheck
from irlscrapy.scheduler.frontier.loadgovernor import LoadGovernor
from irlscrapy.scheduler.hosts.services import HostServices
from irlscrapy.scheduler.intake import Intake
from irlscrapy.scheduler.metakeys import ADDRESS_KEY, FETCH_KEY, state_closed
from irlscrapy.scheduler.peers import LEFT_REASON, LocalCrawl, NoPeers, Peers, peers_from_crawler
from irlscrapy.scheduler.resplitter import Resplitter
from irlscrapy.scheduler.resume import FrontierSettings, leave, open_frontier, resume
from irlscrapy.scheduler.stages import Frontier
from irlscrapy.star.budgets import budget_mode, budget_sources
from irlscrapy.star.indegree import PLDInDegree
from irlscrapy.startcheck import check_settings
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage import faulthooks
from irlscrapy.storage.recovery import Recoveries


class IRLScheduler(BaseScheduler):
    """Scrapy's SCHEDULER on the IRL frontier.

    Theory of operation
    -------------------
    A Request (``enqueue_request``) or a page's ``Links`` (:meth:`enqueue_links`;
    a middleware finds the crawl's scheduler with :meth:`of`) goes through the *intake*
    (:mod:`irlscrapy.scheduler.intake`): encoded to bytes, checked by URLseen in
    batches, and its unique URLs stored in BEAST before URLseen's batch is acknowledged
    (nothing discovered is lost). From BEAST a URL goes through DNS and robots.txt into
    the workbench (the *frontier*, :mod:`irlscrapy.scheduler.stages`, on the
    structures of :mod:`irlscrapy.scheduler.frontier` and the host services of
    :mod:`irlscrapy.scheduler.hosts`). ``next_request`` is the *dispatcher*'s
    (:mod:`irlscrapy.scheduler.dispatch`): it hands out the top due host's next URL,
    built into a Request only then (a robots.txt fetch first, for a host whose rules
    are unknown: :mod:`irlscrapy.scheduler.robotsfetch`), follows each fetch from
    hand-out to release to page done (:mod:`irlscrapy.scheduler.ledger`), keeps the
    no-idle promise, and wakes the engine when the next host becomes due
    (:mod:`irlscrapy.runtime.internals`). This class wires them, opens and closes the state
    directory (:mod:`irlscrapy.state.directory`, which maps its files), and stops
    the crawl cleanly when the disk is full (:mod:`irlscrapy.scheduler.diskfull`).

    Differences from Scrapy's stock scheduler, by design:

    - ``enqueue_request`` cannot know yet whether a request is a duplicate (URLseen
      answers in batches), so it returns True and duplicates are counted in
      ``dupefilter/filtered`` without a ``request_dropped`` signal;
    - the order is BEAST's across domains and ``Request.priority`` only within a host;
    - an http(s) URL's host has one spelling (:func:`irlscrapy.domains.canonical_authority`:
      lower case, no trailing dot, no default port): ``enqueue_request`` replaces a
      Request spelt otherwise by ``request.replace(url=...)`` before anything else sees
      it, so the request fingerprinter (whichever REQUEST_FINGERPRINTER_CLASS names)
      keys it, and the downloader fetches it, under that spelling; ``response.url`` and
      the links resolved against it have it too. A page's ``Links`` are respelt the
      same way before their keys. Stat ``irl/scheduler/respelt_urls``.

    Stats: ``irl/scheduler/enqueued/{requests,links}``, ``irl/scheduler/dequeued``,
    ``irl/urlseen/unique``, ``irl/frontier/*``, ``irl/robots/*``, ``irl/dns/*``,
    ``irl/guard/*``, ``irl/hosts/*`` (host health), ``irl/traps/*``,
    ``irl/governor/{cap,cuts}``, ``irl/recovered/*`` (what the open mended:
    :mod:`irlscrapy.storage.recovery`), ``irl/refused/*`` (an open refused:
    :mod:`irlscrapy.runtime.openfailure`), ``irl/given_up/*`` (a stop:
    :mod:`irlscrapy.scheduler.diskfull`; a crawl whose every URL was refused:
    :mod:`irlscrapy.scheduler.emptycrawl`), and Scrapy's ``dupefilter/filtered``,
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
        budgets: str = "star",
        indegree: PLDInDegree | None = None,
        governor: LoadGovernor | None = None,
        peers: Peers | None = None,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.intake = intake
        self.urlseen = intake.urlseen
        self.waker = intake.waker
        self.hosts = hosts
        self.state = state
        self.frontier_settings = frontier_settings
        self.dispatch_settings = dispatch_settings
        self.budgets = budgets  # IRL_BUDGET_MODE: star, constant or off
        self.indegree = indegree  # STAR's in-degrees and budgets; None: STAR does not run
        self.governor = governor  # the cap on fetches in flight; None: the engine's only
        #: the other agents of a multi-agent crawl (irlscrapy.scheduler.peers)
        self.peers: Peers = peers if peers is not None else NoPeers()
        self.stop = CrawlStop(crawler, lambda: state.path)
        self.frontier: Frontier | None = None
        self.dispatcher: Dispatcher | None = None
        self._lag_probe: LagProbe | None = None
        self._resplitter: Resplitter | None = None  # BEAST's re-splits, between turns
        #: ends a crawl whose every URL was refused saying why (held here: signals
        #: hold their receivers weakly)
        self.empty_crawl: EmptyCrawlCheck | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IRLScheduler:
        """The scheduler, its settings checked (:mod:`irlscrapy.startcheck`: a setting
        its parts refuse is said in one line too)."""
        settings = crawler.settings
        check_settings(settings, crawler.stats)
        reactor = installed_reactor()
        peers = peers_from_crawler(crawler, reactor)
        scheduler = cls(
            crawler,
            Intake.from_crawler(crawler, EngineWaker(crawler, reactor), peers),
            HostServices.from_crawler(crawler),
            StateDirectory.of(crawler),
            FrontierSettings.from_settings(settings),
            DispatchSettings.from_settings(settings),
            budgets=budget_mode(defaults.get(settings, "IRL_BUDGET_MODE")),
            indegree=PLDInDegree.from_settings(settings, crawler.stats, reactor.seconds),
            governor=load_governor(settings),
            peers=peers,
        )
        crawler.signals.connect(scheduler._left_downloader, signals.request_left_downloader)
        if not peers.shared:  # (another agent may fetch what this one cannot)
            scheduler.empty_crawl = EmptyCrawlCheck.connect(crawler, scheduler.hosts.guard)
        provide(crawler, scheduler, IRLScheduler)
        return scheduler

    @classmethod
    def of(cls, crawler: Crawler) -> IRLScheduler | None:
        """The crawl's IRL scheduler, if it runs one (:mod:`irlscrapy.runtime.crawlservices`): how a
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
        """Open the state and join the crawl; what the open mended is published to the
        stats then (irlscrapy.storage.recovery), and a refusal is said in one line."""
        recoveries = Recoveries()
        try:
            try:
                with recoveries.collect():
                    self._open_state(spider)
            finally:
                recoveries.publish(self.stats, self.state.path)
        except IrlscrapyError as exc:
            report_open_failure(exc, self.state.path, self.stats)
            raise
        return None

    def _open_state(self, spider: Spider) -> None:
        """Open the state (a full disk, or a state directory it may not write to, as a
        message that says what to do), then join the crawl in the multi-agent mode."""
        try:
            self._open(spider)
        except Exception as exc:
            if disk_full(exc):
                raise IrlscrapyError(
                    f"the disk holding {self.state.path} is full ({exc}): free some "
                    "space, then start the crawl again"
                ) from exc
            if isinstance(exc, OSError) and exc.errno in UNWRITABLE:
                raise IrlscrapyError(
                    f"cannot write to the state directory {self.state.path} "
                    f"({exc.strerror}: {exc.filename}): a crawl needs to write there"
                ) from exc
            raise
        assert self.frontier is not None and self.dispatcher is not None
        assert self.state.path is not None
        self.peers.join(
            LocalCrawl(
                self.crawler,
                self.intake,
                self.frontier,
                self.dispatcher,
                self.indegree,
                self.waker.clock,
                self.waker.wake,
                self.state.path / "agent",
                self.stop.give_up,
            )
        )

    def _open(self, spider: Spider) -> None:
        state, hosts, indegree = self.state, self.hosts, self.indegree
        if hosts.pace.paces_download_delay:  # the workbench waits it; the downloader not
            switch_off_downloader_delay(self.crawler)
        state.open()
        faulthooks.reach("state-open")
        self.urlseen.batched = True
        self.urlseen.open()
        hosts.open(state)
        beast_budget, delay_budget = budget_sources(
            self.budgets,
            indegree.budget_of if indegree is not None else None,
            hosts.politeness.default_budget,
        )
        if indegree is not None:
            indegree.open(
                state / "star", lambda failure: self.stop.failed(failure, "refreshing STAR")
            )
        frontier, found = open_frontier(
            state,
            self.frontier_settings,
            hosts.politeness,
            beast_budget,
            delay_budget,
            hosts.robots,
            crawl_plds(self.crawler),
            resolve=hosts.dns.resolve,
            stats=self.stats,
            clock=self.waker.clock.seconds,
            guard=hosts.guard,
        )
        dispatcher = Dispatcher(
            frontier,
            self.intake,
            self.waker,
            hosts,
            self.stats,
            self.crawler.signals,
            spider,
            self.dispatch_settings,
            self.governor,
            stop=self.stop,
            may_give_up=self.peers.may_give_up,
        )
        # (the one binding after construction: the dispatcher is built on the frontier,
        # and the frontier tells it when hosts become due or URLs are refused)
        frontier.on_ready, frontier.on_refused = dispatcher.ready, dispatcher.refused
        self.frontier, self.dispatcher = frontier, dispatcher
        self._resplitter = Resplitter(
            frontier.beast,
            self.stats,
            self.waker.clock.seconds,
            failed=self.stop.failed,
            done=dispatcher.ready,
        )
        resume(frontier, found)
        self.intake.open(
            spider,
            frontier,
            found.stored_before_restart,
            fetch_over=dispatcher.fetch_over,
            ready=dispatcher.ready,
            in_flight=lambda: len(dispatcher.ledger),
            progress=dispatcher.progress,
            failed=self.stop.failed,
        )
        if self.governor is not None:
            self._lag_probe = LagProbe(self.waker.clock, dispatcher.lag_tick)
            self._lag_probe.start()

    def close(self, reason: str) -> defer.Deferred[None] | None:
        # Fetches in flight, and pages whose links were not all handed over (a stop can
        # cut that short), stay admitted in the journal: fetched again on resume. The
        # pages the engine has finished with are done, unless the crawl stopped (a full
        # disk, a give-up): then their links may have been dropped.
        if self.dispatcher is not None and not self.stop.stopped:
            self.dispatcher.finish_pages()
        self.intake.close()
        self.waker.cancel()
        if self.peers.shared:
            stopping = self.peers.stop()
            stopping.addBoth(lambda _: self._close(reason))
            return stopping
        return self._close(reason)

    def _close(self, reason: str) -> defer.Deferred[None]:
        if self._lag_probe is not None:
            self._lag_probe.stop()
        if self._resplitter is not None:
            self._resplitter.stop()
        done: defer.Deferred[None] = defer.Deferred()
        closing = self.urlseen.close(reason) or defer.succeed(None)
        if self.indegree is not None:
            indegree = self.indegree
            closing.addBoth(lambda _: indegree.close())
        closing.addBoth(lambda _: self._close_files(reason))
        closing.addBoth(lambda _: done.callback(None))
        return done

    def _close_files(self, reason: str) -> None:
        if self.frontier is not None:
            if reason == LEFT_REASON:  # its stored URLs went to the agents that stay
                self.frontier.close()
            else:
                leave(self.frontier, self.state, self.stats)
        self.hosts.close()
        if self.state.path is not None:
            self.crawler.signals.send_catch_log(
                state_closed,
                state_dir=self.state.path,
                temporary=self.state.temporary,
                reason=reason,
            )
        self.state.close()

    # -- Scrapy's scheduler interface ----------------------------------------------------
    def has_pending_requests(self) -> bool:
        if self._dispatcher().has_pending_requests():
            return True
        # the crawl goes on until every agent is idle
        return self.peers.shared and not self.stop.stopped and not self.peers.crawl_done

    def __len__(self) -> int:
        return len(self._dispatcher())

    @stops_when_disk_is_full(default=False)
    def enqueue_request(self, request: Request) -> bool:
        dispatcher = self._dispatcher()
        token = request.meta.pop(FETCH_KEY, None)  # set: a retry or redirect of our own fetch
        request.meta.pop(ADDRESS_KEY, None)  # (a redirect may go to another host)
        if token is not None and not dispatcher.ledger.replaceable(token):
            token = None  # an errback's request with its failed request's meta: a new one
        return self.intake.enqueue_request(request, token)

    @stops_when_disk_is_full(default=None)
    def next_request(self) -> Request | None:
        if self.peers.leaving:
            return None  # the agent leaves the crawl: it hands out nothing more
        return self._dispatcher().next_request()

    # -- what irlscrapy's middlewares tell it (see irlscrapy.middlewares) ----------------
    @stops_when_disk_is_full(default=None)
    def enqueue_links(self, links: Links, response: Response | None = None) -> None:
        """A page's links (the fast path: Intake.enqueue_links)."""
        self.intake.enqueue_links(links, response)

    @stops_when_disk_is_full(default=None)
    def record_page(self, source: str, targets: set[str]) -> None:
        """STAR: a crawled page of PLD ``source`` links to the PLDs ``targets``."""
        if self.indegree is not None:
            if self.peers.shared:
                targets = set(self.peers.route_edges(source, targets))
            self.indegree.record_page(source, targets)

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        self.fetch_ended(request)

    @stops_when_disk_is_full(default=None)
    def fetch_ended(self, request: Request) -> None:
        """The request left the downloader, or ended before reaching it."""
        if self.dispatcher is not None:
            self.dispatcher.fetch_ended(request)

    def fetch_failed(self, request: Request) -> None:
        """The request failed for good (no retry follows): no page; its errback's
        output is all that may follow."""
        self.page_handled(request)

    def fetch_cut(self, request: Request) -> None:
        """The download was cut as the spider closed: not fetched, so not done."""
        if self.dispatcher is not None:
            self.dispatcher.fetch_cut(request)

    @stops_when_disk_is_full(default=None)
    def page_handled(self, request: Request) -> None:
        """The spider has yielded all it makes of the response of ``request`` (or it
        failed for good: its errback's output is all that may follow)."""
        if self.dispatcher is not None:
            self.dispatcher.page_handled(request)

    def host_answered(self, request: Request) -> None:
        """The host of ``request`` answered (with anything but 429 or 503)."""
        if self.dispatcher is not None:
            self.dispatcher.host_answered(request)

    @stops_when_disk_is_full(default=None)
    def host_failed(self, request: Request, retry_after: float | None) -> None:
        """The host of ``request`` answered 429 or 503 (and asked to wait ``retry_after``)."""
        if self.dispatcher is not None:
            self.dispatcher.host_failed(request, retry_after)

    @stops_when_disk_is_full(default=None)
    def origin_failed(self, request: Request) -> None:
        """No connection to the origin of ``request`` (refused, reset, timed out)."""
        if self.dispatcher is not None:
            self.dispatcher.origin_failed(request)

    def resumed(self) -> None:
        """The engine was paused (irlscrapy.report.controls) and asks again: the wait of
        a blocked finite crawl before it gives up starts now (time paused is no host's
        silence), and the engine asks for requests at its next turn."""
        if self.dispatcher is not None:
            self.dispatcher.progress()
        self.waker.wake()

    # -- status --------------------------------------------------------------------------
    def status(self) -> dict[str, int]:
        """The frontier now, for the progress line and the status endpoint."""
        if self.dispatcher is None:
            return {}
        return {**self.dispatcher.status(), **self.peers.figures()}

    def idle_status(self) -> dict[str, int] | None:
        """What the no-idle watch (irlscrapy.report.idlewatch) samples; None while
        stopped (disk full), closing (the rest waits for a rerun) or leaving a
        multi-agent crawl (the rest goes to other agents)."""
        if self.dispatcher is None or self.stop.stopped or self.peers.leaving:
            return None
        if not self.waker.engine_asks():
            return None
        return self.dispatcher.idle_status()

    def _dispatcher(self) -> Dispatcher:
        assert self.dispatcher is not None, "open() first"
        return self.dispatcher


def load_governor(settings: Any) -> LoadGovernor | None:
    """The governor of ``IRL_REACTOR_LAG_TARGET`` under ``CONCURRENT_REQUESTS``; None
    when the target is 0 (off: the engine's own cap only)."""
    target = defaults.get(settings, "IRL_REACTOR_LAG_TARGET")
    return LoadGovernor(target, settings.getint("CONCURRENT_REQUESTS")) if target > 0 else None
