"""The dispatcher: what ``next_request`` hands out, the fetch lifecycle, and the
no-idle promise.

Theory of operation
-------------------
:meth:`Dispatcher.next_request` hands out, in this order: requests refused by robots.txt
or DNS (back to the engine, which fails them, see FetchEndMiddleware); requests of
schemes without hosts (``Intake.direct``); then the top due host's next URL from the
frontier, built into a Request only now (a robots.txt fetch first for a host whose
rules are unknown: :mod:`irlscrapy.scheduler.robotsfetch`). It admits from BEAST at most
every ``ADMIT_INTERVAL``, and hands out nothing while the load governor's cap on
fetches in flight is reached (:mod:`irlscrapy.scheduler.frontier.loadgovernor`) or
while URLseen has a whole batch waiting behind a running merge
(``irl/scheduler/held_for_urlseen``).

*The fetch lifecycle* (:class:`irlscrapy.scheduler.ledger.FetchLedger` keeps its
tokens, meta ``FETCH_KEY``): a fetch is handed out holding its host and IP; it *ends*
when the request leaves the downloader (``request_left_downloader``), or ends before
reaching it (FetchEndMiddleware), or comes back as a retry or redirect: then the host
and IP are released (:meth:`end`). Its page is *done* once the engine has finished with
the request, which it does after the spider's output for it has been passed on (the
requests the spider yielded are then in the frontier): then its URL leaves the admitted
journal. That is looked at on the engine's next call for the pages the spider has
handled (PageDoneMiddleware, and a final failure: :meth:`page_handled`), every
``PAGE_CHECK_INTERVAL`` for every page pending (a failure that goes to the request's
errback only), and at close (:meth:`finish_pages`). A retry, redirect or trap stored in
a fetch's place makes its page done at once (:meth:`fetch_over`).
A robots.txt fetch ends with its outcome (robotsfetch). A request in a downloader slot
of the project's own releases its host when it is handed out (:func:`own_download_slot`).

*No idle crawler while work exists.* Whenever nothing is in flight and no host is
due, the dispatcher is not sitting on fetchable work: it flushes URLseen (unless a
merge runs, whose drain wakes the engine), resumes admission paused for a full host,
and admits from BEAST (:meth:`_idle`); and whatever makes BEAST's records admissible
(a drain, a re-split's end, RAM freed) wakes the engine at once (:meth:`ready`), not
when the next host is due. What may then still wait is only work that
cannot be fetched yet: hosts within their politeness delay, and hosts or origins in
back-off, retirement or a robots.txt retry. A finite crawl waits for those at most
``IRL_CRAWL_GIVE_UP_AFTER`` beyond the longest politeness delay, then parks them and ends
(``IRL_CRAWL_CONTINUOUS`` waits). ``irlscrapy.report.idlewatch`` checks the promise from
outside in every crawl, through :meth:`idle_status`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.httpobj import urlparse_cached

from irlscrapy import defaults
from irlscrapy.domains import url_host, url_origin
from irlscrapy.runtime.internals import EngineWaker, engine_requests
from irlscrapy.runtime.troubles import tally
from irlscrapy.scheduler.diskfull import CrawlStop
from irlscrapy.scheduler.frontier.loadgovernor import LoadGovernor
from irlscrapy.scheduler.frontier.workbench import VisitState
from irlscrapy.scheduler.frontieritems import Item, MemoryItem, RobotsFetch
from irlscrapy.scheduler.hosts.services import HostServices
from irlscrapy.scheduler.intake import Intake
from irlscrapy.scheduler.ledger import FetchLedger
from irlscrapy.scheduler.metakeys import ADDRESS_KEY, FETCH_KEY, REFUSED_KEY, ROBOTS_KEY
from irlscrapy.scheduler.requestcodec import (
    LINK,
    decode_request,
    link_from_payload,
    payload_kind,
)
from irlscrapy.scheduler.robotsfetch import RobotsFetches
from irlscrapy.scheduler.stages import Frontier

logger = logging.getLogger(__name__)

#: status() counts the IPs due up to this many.
DUE_COUNT_LIMIT = 1_000
#: Seconds between admissions from BEAST (each at most admission.ADMIT_SECONDS of work).
ADMIT_INTERVAL = 0.02
#: Seconds between the refills of a crawler with room for more fetches and nothing due
#: (_idle): a URLseen flush and a resumed admission. With nothing in flight, at once.
IDLE_REFILL_INTERVAL = 1.0
#: Seconds between two looks at every page pending for requests the engine is done with,
PAGE_CHECK_INTERVAL = 0.1
#: ... and between two looks at the pages the spider has handled (a few, just handled).
HANDLED_CHECK_INTERVAL = 0.01


def own_download_slot(request: Request, ip: str) -> bool:
    """Does ``request`` name a downloader slot other than its host's (or its IP's, which
    Scrapy names with CONCURRENT_REQUESTS_PER_IP, and a retry keeps)? The project paces
    such a slot itself (``DOWNLOAD_SLOTS``: delay, concurrency), so its host is released
    when it is handed out instead of when it leaves the downloader: the host delay
    still spaces hand-outs, and requests of one host in slots of their own wait each in
    its slot side by side, as in stock Scrapy (they waited in turn, each holding the
    host through its slot's delay: Scrapy's test_downloaderslotssettings::test_delay)."""
    slot = request.meta.get("download_slot")
    return slot is not None and slot not in (urlparse_cached(request).hostname, ip)


@dataclass(frozen=True)
class DispatchSettings:
    ceiling: int  # CONCURRENT_REQUESTS: the most fetches in flight
    give_up_after: float  # IRL_CRAWL_GIVE_UP_AFTER (see Dispatcher._idle)
    continuous: bool  # IRL_CRAWL_CONTINUOUS

    @classmethod
    def from_settings(cls, settings: Any) -> DispatchSettings:
        return cls(
            ceiling=settings.getint("CONCURRENT_REQUESTS"),
            give_up_after=defaults.get(settings, "IRL_CRAWL_GIVE_UP_AFTER"),
            continuous=defaults.get(settings, "IRL_CRAWL_CONTINUOUS"),
        )


class Dispatcher:
    def __init__(
        self,
        frontier: Frontier,
        intake: Intake,
        waker: EngineWaker,
        hosts: HostServices,
        stats: Any,
        crawler_signals: Any,
        spider: Spider,
        settings: DispatchSettings,
        governor: LoadGovernor | None,
        *,
        stop: CrawlStop,
        may_give_up: Callable[[], bool] = lambda: True,
    ) -> None:
        self.frontier = frontier
        self.intake = intake
        self.waker = waker
        self.politeness = hosts.politeness
        self.health = hosts.health
        self.stats = stats
        self.spider = spider
        self.governor = governor  # the cap on fetches in flight; None: the engine's only
        self.ceiling = settings.ceiling
        self.give_up_after = settings.give_up_after
        self.continuous = settings.continuous
        self.ledger: FetchLedger[VisitState, Item | MemoryItem | RobotsFetch] = FetchLedger()
        self.robots = RobotsFetches(frontier, stats, crawler_signals, self.end, stop)
        self.refusals: deque[Request] = deque()  # refused requests, back to the engine
        #: the clock's time a host last answered (or the crawl opened, or new URLs were
        #: stored): a finite crawl that is blocked gives up give_up_after past it
        self.progress_at = waker.clock.seconds()
        #: may a blocked finite crawl give up now? A multi-agent crawl's agent may only
        #: once every other agent is idle: until then the crawl makes progress elsewhere
        #: (irlscrapy.scheduler.peers.Peers.may_give_up)
        self.may_give_up = may_give_up
        #: the crawl's stop (a full disk): once stopped, pages are not done (their links
        #: may have been dropped)
        self.stop = stop
        self._admission_due = 0.0  # the clock's time admission may run again
        self._refill_due = 0.0  # the clock's time _idle may flush URLseen and resume again
        self._hungry_due = 0.0  # the clock's time _idle may admit past the horizon again
        self._pages_due = 0.0  # the clock's time finish_pages may run again
        self._handled_due = 0.0  # ... and finish_pages(handled=True)

    # -- out -----------------------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        frontier, intake = self.frontier, self.intake
        queued = intake.direct or intake.merging or intake.pending or self.refusals
        return bool(len(frontier) or queued or self._waits_on_parked())

    def _waits_on_parked(self) -> bool:
        """Is work parked out of RAM that this crawl waits for? A continuous crawl
        waits for every parked URL and held origin. A finite one waits for the URLs
        parked by a retirement still in force, as it waits for a host in back-off: up
        to IRL_CRAWL_GIVE_UP_AFTER (:meth:`_idle`; a give-up ends the retirements)."""
        holds = self.frontier.holds
        if self.continuous:
            return bool(holds.parked.count or holds.bench.in_force())
        return bool(holds.parked.count) and holds.bench.retiring()

    def __len__(self) -> int:
        """Requests not handed out yet (refused ones and parked URLs aside)."""
        return len(self.frontier) + self.intake.pending + len(self.intake.direct)

    def next_request(self) -> Request | None:
        frontier, intake = self.frontier, self.intake
        if self.refusals:
            return self.refusals.popleft()
        if intake.direct:
            self.stats.inc_value("irl/scheduler/dequeued")
            return intake.direct.popleft()
        now = self.waker.clock.seconds()
        self._finish_due_pages(now)  # (before the holds below: a held crawl ends pages too)
        if self.governor is not None and not self.governor.admits(self.ledger.downloading):
            return None  # a fetch that ends wakes the engine (ready)
        if intake.urlseen.behind():
            # More fetches would only grow URLseen's backlog (measured: 34 million URLs
            # pending behind one starved merge). The drain after the merge wakes the engine.
            self.stats.inc_value("irl/scheduler/held_for_urlseen")
            return None
        if now >= self._admission_due:
            # At most every ADMIT_INTERVAL: the engine asks for a request per free
            # downloader slot, dozens in one reactor turn, and admitting on each call made
            # turns of 50-100 ms; once per turn took a fifth of the core when turns were
            # short (the load governor's), mostly deferring records of full hosts.
            self._admission_due = now + ADMIT_INTERVAL
            frontier.admission.admit()
        if frontier.admission.can_admit():
            self.waker.wake_at(self._admission_due)  # come back for the rest
        if not len(frontier.beast) and not intake.merging and intake.pending:
            intake.flush()  # the early flush: BEAST is dry, the workbench will be next
        got = frontier.take(now)
        if got is None:
            self._idle()
            return None
        state, item = got
        request = self._request(state, item)
        token = self.ledger.hand_out(state, item, isinstance(item, RobotsFetch), request)
        request.meta[FETCH_KEY] = token
        request.meta[ADDRESS_KEY] = state.ip
        self.stats.inc_value("irl/scheduler/dequeued")
        if own_download_slot(request, state.ip):
            self.end(token)
        return request

    def _finish_due_pages(self, now: float) -> None:
        """Pages whose requests the engine has let go of are done: those the spider has
        handled every HANDLED_CHECK_INTERVAL, all pending ones every PAGE_CHECK_INTERVAL
        (once stopped, none: their links may have been dropped)."""
        if self.stop.stopped or not self.ledger.pages_pending:
            return
        if now >= self._pages_due:
            self._pages_due = now + PAGE_CHECK_INTERVAL
            self.finish_pages()
        elif self.ledger.pages_handled and now >= self._handled_due:
            self._handled_due = now + HANDLED_CHECK_INTERVAL
            self.finish_pages(handled=True)

    def _request(self, state: VisitState, item: Item | MemoryItem | RobotsFetch) -> Request:
        if isinstance(item, RobotsFetch):
            return self.robots.request(state, item)
        if isinstance(item, MemoryItem):
            return item.request
        payload = item[0]
        if payload_kind(payload) != LINK:
            return decode_request(payload, self.spider)
        link = link_from_payload(payload)
        callback = getattr(self.spider, link.callback) if link.callback else None
        headers = {"Referer": link.referer} if link.referer else None
        return Request(link.url, callback=callback, headers=headers, meta={"depth": link.depth})

    def refused(self, item: Item | MemoryItem, why: str) -> None:
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
        self.refusals.append(request)
        self.ready()

    def lag_tick(self, lag: float) -> None:
        governor = self.governor
        assert governor is not None
        cap = governor.cap
        governor.tick(lag, self.ledger.downloading)
        if governor.cap != cap:
            self.stats.set_value("irl/governor/cap", governor.cap)
            self.stats.set_value("irl/governor/cuts", governor.cuts)
            if governor.cap > cap:
                self.waker.wake()  # room for one more fetch

    def fetch_cap(self) -> int:
        return self.governor.cap if self.governor is not None else self.ceiling

    # -- idle ----------------------------------------------------------------------------
    def _idle(self) -> None:
        """Nothing is due. Keep the no-idle promise (see the module docstring): with
        nothing in flight, no fetchable work may sit in URLseen or BEAST; with fetches
        in flight but room for more (below the cap), URLseen is flushed and admission
        resumed at most every IDLE_REFILL_INTERVAL, since new hosts may be due at once
        (a hung fetch can hold the only IP the workbench has for a whole timeout), and
        URLseen sooner when BEAST cannot feed the workbench, as often as its merges'
        own length allows (Intake.starving_flush_at: a young crawl's merges take
        milliseconds); and while a fetch could start, admission goes past the horizon's
        target (at once when nothing is in flight, else at most every ADMIT_INTERVAL).
        A finite crawl whose work is all blocked ends after a bounded wait; otherwise
        the engine is woken when something will be due."""
        frontier, intake = self.frontier, self.intake
        now = self.waker.clock.seconds()
        idle = not self.ledger and not self.refusals
        room = self.ledger.downloading < self.fetch_cap()
        refill = now >= self._refill_due and room
        # BEAST cannot feed the workbench (dry, or all it holds is of full hosts) while
        # URLs wait in URLseen: flush, as often as the merges' own length allows; not
        # while a page is in the spider (its output not all yielded), whose requests
        # would be split across batches (a host's URLs are ordered by priority within
        # one batch).
        starving = (
            room
            and self.ledger.pages_pending == self.ledger.pages_handled
            and (not len(frontier.beast) or frontier.admission.paused)
            and now >= intake.starving_flush_at
        )
        if (idle or refill or starving) and intake.pending and not intake.merging:
            intake.flush()
        if refill:
            # When every record left in BEAST is of a full host, each resume reads and
            # gives back up to admission.DEFERRAL_RUN of them: hence the interval.
            self._refill_due = now + IDLE_REFILL_INTERVAL
            frontier.admission.resume()
        # Nothing is due and a fetch could start: admit past the horizon's target (at
        # most every ADMIT_INTERVAL while fetches are in flight, whose ends wake us;
        # below the target, next_request's own admission runs at that pace already).
        hungry = idle or (frontier.admission.horizon_full and now >= self._hungry_due)
        if room and hungry and frontier.admission.can_admit(hungry=True):
            self._hungry_due = now + ADMIT_INTERVAL
            if frontier.admission.admit(hungry=True):
                self.waker.wake()
                if idle:
                    return
        if idle and self._blocked():
            due = frontier.next_due()
            deadline = self.progress_at + self._give_up_wait()
            may_give_up = self.may_give_up()
            if not may_give_up:  # look again in a second (the agent's ticks are twice that)
                deadline = max(deadline, now + 1.0)
            waits_on_failures = due is None or frontier.waits_on_failures(now)
            if (
                not self.continuous
                and waits_on_failures
                and (due is None or due > deadline or now >= deadline)
                and may_give_up
            ):
                self._give_up()
            elif due is not None:
                self.waker.wake_at(due if self.continuous else min(due, deadline))
            return
        due = frontier.next_due()
        if due is not None:
            self.waker.wake_at(due)

    def _blocked(self) -> bool:
        """Nothing in flight, nothing due, and nothing queued outside the workbench and
        the bench: what is left waits on politeness, or on back-off, retirement or a
        robots.txt retry (only those are ever given up: Frontier.waits_on_failures)."""
        intake, frontier = self.intake, self.frontier
        return not (intake.merging or intake.pending or len(frontier.beast) or frontier.waiting_dns)

    def _give_up_wait(self) -> float:
        """How long a blocked finite crawl waits after the last answer before it gives
        up: IRL_CRAWL_GIVE_UP_AFTER beyond the longest politeness delay in force (the delays,
        and the Crawl-delay of a host in the workbench), so no wait that politeness
        alone imposes is given up, only waits on back-off, retirement or robots.txt."""
        longest = self.politeness.longest
        for state in self.frontier.workbench.hosts.values():
            longest = max(longest, state.crawl_delay)
        return self.give_up_after + longest

    def _give_up(self) -> None:
        given = self.frontier.give_up()
        self.progress_at = self.waker.clock.seconds()
        if given:
            tally(
                logger,
                self.stats,
                "irl/frontier/given_up",
                "gave up on %d URLs: their hosts or origins are in back-off or retired and "
                "nothing else is left to crawl (IRL_CRAWL_GIVE_UP_AFTER; IRL_CRAWL_CONTINUOUS "
                "waits instead). They are parked in the state directory.",
                given,
                count=given,
            )
        self.waker.wake()  # the engine sees no pending request and closes the spider

    def ready(self) -> None:
        """Work may have become due or admissible: wake the engine when it is. At once
        when admission can take records from BEAST now: below the horizon's target, or
        past it with nothing in flight (:meth:`_idle` admits then; no fetch will end to
        wake the engine). Records become admissible when a URLseen drain stores them, a
        re-split ends, RAM is freed or a paused admission resumes: waiting for the next
        host due left them idle in BEAST for as long as that host's delay or IP lease
        (an agent's no-idle watch saw 1-s windows of it in CI, after a handover)."""
        admission = self.frontier.admission
        if admission.can_admit() or (not self.ledger and admission.can_admit(hungry=True)):
            self.waker.wake()
            return
        due = self.frontier.next_due()
        if due is not None:
            self.waker.wake_at(due)
        elif not self.intake.merging:
            self.waker.wake()

    def progress(self) -> None:
        self.progress_at = self.waker.clock.seconds()

    # -- the fetch lifecycle -------------------------------------------------------------
    def fetch_ended(self, request: Request) -> None:
        """The request left the downloader, or ended before reaching it: release its
        host and IP. A robots.txt fetch lets its IP go now and keeps its host until its
        outcome is known (the outcome is read in a callback, which waits behind the
        pages the spider has to parse: a site of thousands of new hosts on a few IPs,
        each host's first fetch its robots.txt, would otherwise get one fetch per IP
        per callback wait; BENCHMARKS.md, issue 19)."""
        token = request.meta.get(FETCH_KEY)
        fetch = self.ledger.in_flight(token)
        if token is None or fetch is None:
            return
        if not fetch.robots:
            self.end(token)
        elif fetch.ended is None:
            now = self.waker.clock.seconds()
            self.ledger.left(token, now)
            self.frontier.workbench.release_ip(fetch.state, now)
            self.ready()

    def end(self, token: int, answered: bool = True) -> None:
        """Release the host and IP of a fetch; its page is still to be processed. A
        robots.txt fetch answered holds its host to the IP delay only (the paper's
        rule); one a retry or a redirect replaces (``answered`` false: no answer, an
        error, a redirect) to the host delay too, so a host that refuses connections is
        not asked again and again at the IP delay's pace."""
        now = self.waker.clock.seconds()
        fetch = self.ledger.end(token)
        if fetch is None:
            return  # already released
        end = fetch.ended if fetch.ended is not None else now
        self.frontier.workbench.release(
            fetch.state,
            end,
            ip_only=fetch.robots and answered,
            ip_released=fetch.ended is not None,
        )
        self.ready()

    def page_handled(self, request: Request) -> None:
        """The spider has yielded all it makes of the response (or final failure) of
        ``request``. Its page is done once the engine lets go of the request (the
        engine's next call, :meth:`finish_pages`), not now: Scrapy's scraper may still
        hold up to 2 x CONCURRENT_ITEMS of that output (its asyncio path reads a
        callback's iterator ahead into a queue), and a kill -9 before those requests
        reach the frontier would lose them with the page marked done."""
        token = request.meta.get(FETCH_KEY)
        if token is None:
            return
        fetch = self.ledger.in_flight(token)
        if fetch is not None and fetch.robots:
            return  # a robots.txt fetch ends with its outcome (robotsfetch)
        self.end(token, answered=False)
        self.ledger.handled(token)

    def fetch_over(self, token: int) -> None:
        """The fetch ``token`` has ended and its page is done (a retry, a redirect or
        a trap, stored, took its place)."""
        self.end(token, answered=False)
        item = self.ledger.page_done(token)
        if item is not None:
            self.frontier.finished(item)

    def fetch_cut(self, request: Request) -> None:
        """The download of ``request`` was cut, the spider closing: its host and IP are
        released (it left the downloader) and its URL stays admitted, not done, so a
        resumed crawl fetches it."""
        token = request.meta.get(FETCH_KEY)
        if token is not None:
            self.ledger.cut(token)

    def finish_pages(self, *, handled: bool = False) -> None:
        """The pages pending (only those the spider has handled, if ``handled``) whose
        requests the engine has finished with are done."""
        running = engine_requests(self.waker.crawler)
        if running is not None and self.ledger.pages_pending:
            for item in self.ledger.finished(running, handled=handled):
                self.frontier.finished(item)

    # -- host health ---------------------------------------------------------------------
    def host_answered(self, request: Request) -> None:
        """The host of ``request`` answered (with anything but 429 or 503)."""
        self.progress()
        state = self._host_of(request)
        if state is not None:
            self.health.answered(state, url_origin(request.url), self.frontier)

    def host_failed(self, request: Request, retry_after: float | None) -> None:
        """The host of ``request`` answered 429 or 503 (asking to wait ``retry_after``
        seconds, if it said): back it off, or retire it."""
        state = self._host_of(request)
        if state is not None:
            now = self.waker.clock.seconds()
            self.health.failed(state, self.frontier, now, retry_after, self.stats)
            self.ready()

    def origin_failed(self, request: Request) -> None:
        """No connection to the origin of ``request`` (refused, reset, timed out):
        back the origin off, or retire it; the host's other origins go on. A robots.txt
        fetch counts too (its retry is the robots cache's): so the host's next robots.txt
        fetch goes to an origin that may answer (robotsfetch.scheme_of)."""
        state = self.frontier.workbench.hosts.get(url_host(request.url))
        if state is not None:
            now = self.waker.clock.seconds()
            origin = url_origin(request.url)
            self.health.origin_failed(state, origin, self.frontier, now, self.stats)
            self.ready()

    def _host_of(self, request: Request) -> VisitState | None:
        """The visit state of a page request's host (robots.txt fetches have their own
        retry schedule, see the robots cache)."""
        if ROBOTS_KEY in request.meta:
            return None
        return self.frontier.workbench.hosts.get(url_host(request.url))

    # -- status --------------------------------------------------------------------------
    def status(self) -> dict[str, int]:
        """The frontier now, for the progress line and the status endpoint: RAM reads
        only (``ips_due`` walks the due part of the IP heap, up to DUE_COUNT_LIMIT)."""
        frontier, workbench = self.frontier, self.frontier.workbench
        return {
            "urlseen_pending": self.intake.pending,
            "beast_urls": len(frontier.beast),
            "beast_queues": frontier.beast.j,
            "beast_overflow_urls": frontier.beast.qf_records,
            "dns_waiting_urls": frontier.waiting_dns,
            "workbench_urls": len(workbench),
            "horizon_urls": frontier.admission.horizon_urls(),
            "workbench_hosts": len(workbench.hosts),
            "workbench_ips": len(workbench.ips),
            "ips_due": workbench.due_ips(self.waker.clock.seconds(), DUE_COUNT_LIMIT),
            "fetches_in_flight": len(self.ledger),
            "urlseen_merging": int(self.intake.merging),
            "admission_paused": int(frontier.admission.paused),
            "workbench_full": int(frontier.admission.ram_full),
            "held_urls": len(frontier.holds),
            "parked_urls": frontier.holds.parked.count,
            "fetch_cap": self.fetch_cap(),
        }

    def idle_status(self) -> dict[str, int]:
        """What the no-idle watch samples ten times a second: status()'s figures it
        reads, the due IPs counted (up to one) only when nothing is in flight, so a busy
        crawl pays nothing for the walk."""
        frontier, merging = self.frontier, self.intake.merging
        in_flight = len(self.ledger)
        idle = not in_flight and not merging
        now = self.waker.clock.seconds()
        return {
            "fetches_in_flight": in_flight,
            "urlseen_merging": int(merging),
            "urlseen_pending": self.intake.pending,
            "beast_urls": len(frontier.beast),
            "beast_resplitting": int(frontier.beast.resplitting),
            "admission_paused": int(frontier.admission.paused),
            "workbench_full": int(frontier.admission.ram_full),
            "ips_due": frontier.workbench.due_ips(now, 1) if idle else 0,
        }
