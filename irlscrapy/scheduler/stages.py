"""The frontier behind the IRL scheduler: BEAST -> DNS -> robots.txt -> workbench.

Theory of operation
-------------------
A unique URL arrives as a *payload* (an encoded Request or Links record, see
:mod:`irlscrapy.scheduler.requestcodec`) and goes to BEAST, under the key of its host's
PLD. :attr:`Frontier.admission` (:mod:`irlscrapy.scheduler.admission`) moves records
from BEAST's current queue into RAM while there is room, a host at most ``host_cap``
URLs at a time and within the horizon; each then goes to its host:

- a URL of a host not seen yet waits while the host is resolved, once, asynchronously;
  when the address comes, the host's visit state joins the workbench under it. A host
  whose DNS fails is dropped with its waiting URLs (stats ``irl/dns/dropped_lookups``, a
  host looked up again counted again, and ``irl/dns/dropped_urls``); so is a host the address
  guard refuses (:mod:`irlscrapy.scheduler.hosts.addressguard`; ``irl/guard/refused_*``);
- robots.txt (:attr:`Frontier.robots`, :mod:`irlscrapy.scheduler.robotsgate`) drops
  the URLs a host's rules disallow, and hands out a host's robots.txt before any URL of
  it while its rules are unknown or expired.

A resumed run holds each host and IP for its delay first (:attr:`restart_hold`).

Host health (:mod:`irlscrapy.scheduler.hosts.hosthealth`) backs off and retires failing
hosts and origins: a host in back-off is postponed; an origin in back-off has its URLs
held, and a retired host or origin has its stored URLs parked
(:attr:`Frontier.holds`, :mod:`irlscrapy.scheduler.healthholds`). :meth:`give_up` parks
what a finished crawl leaves. Retries and redirects of a host's own request skip BEAST
(:meth:`push_direct`): they go to the front of its visit state.

Invariants:
*Every URL pushed is, exactly once, handed out by take(), dropped with a stat, or parked.*
*RAM holds at most ``capacity`` admitted URLs, plus retries and redirects.*
*No URL of a host is handed out before its robots.txt has been answered, nor after its
rules have expired.*

Every URL that leaves BEAST for RAM, or reaches a host directly, is first journaled
(:mod:`irlscrapy.scheduler.frontier.admitted`) and marked done by :meth:`Frontier.finished` or
when it is dropped; :meth:`Frontier.readmit` puts the live ones back after a restart.

The frontier's record is described in :mod:`irlscrapy.scheduler.frontieritems`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure

from irlscrapy.domains import domain_key, host_name, pld, url_host
from irlscrapy.scheduler.admission import Admission
from irlscrapy.scheduler.frontier.admitted import Admitted, AdmittedJournal
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.frontier.horizon import Horizon
from irlscrapy.scheduler.frontier.parking import ParkedStore
from irlscrapy.scheduler.frontier.restarthold import RestartHold
from irlscrapy.scheduler.frontier.workbench import VisitState, Workbench
from irlscrapy.scheduler.frontieritems import (
    HEAD,
    Item,
    MemoryItem,
    RobotsFetch,
    unpack_record,
)
from irlscrapy.scheduler.healthholds import HealthHolds, stored_priority
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.robotscache import RobotsCache
from irlscrapy.scheduler.requestcodec import payload_url
from irlscrapy.scheduler.robotsgate import RobotsGate

logger = logging.getLogger(__name__)

#: The reason of a Request in RAM that a finished crawl gave up on.
GIVEN_UP = "given up: its host or origin kept failing and the crawl finished"


class Frontier:
    def __init__(
        self,
        beast: Beast,
        workbench: Workbench,
        journal: AdmittedJournal,
        parked: ParkedStore,
        resolve: Callable[[str], defer.Deferred[str]],
        host_budget: Callable[[str], float],
        stats: Any,
        *,
        capacity: int,
        host_cap: int,
        user_agent: str,
        clock: Callable[[], float],
        robots: RobotsCache | None = None,
        max_crawl_delay: float = float("inf"),
        guard: AddressGuard | None = None,
        on_ready: Callable[[], None] = lambda: None,
        on_refused: Callable[[Item | MemoryItem, str], None] = lambda item, why: None,
        plds: Callable[[str], str] = pld,
        horizon: Horizon | None = None,
    ) -> None:
        self.beast = beast
        self.workbench = workbench
        self.journal = journal
        self.resolve = resolve
        self.host_budget = host_budget  # the budget of a host's PLD (STAR's, or B0)
        self.stats = stats
        self.clock = clock
        self.guard = guard if guard is not None else AddressGuard()
        self.on_ready = on_ready  # called when a host's URLs may have become due
        self.on_refused = on_refused  # called for a URL dropped by robots.txt or DNS
        self.plds = plds  # a host's PLD: BEAST's key (the crawl's PayLevelDomains)
        self._resolving: dict[str, list[tuple[int, Item | MemoryItem | RobotsFetch, bool]]] = {}
        self.waiting_dns = 0  # URLs held while their host is resolved
        self.restart_hold: RestartHold | None = None  # None: a new crawl
        #: a handoff (irlscrapy.distributed.join): hosts another agent now owns, whose
        #: stored URLs go to ``forward`` instead of a host (None: none)
        self.foreign: Callable[[str], bool] | None = None
        self.forward: Callable[[int, Item], None] = lambda priority, item: None
        self.closed = False
        #: robots.txt between the hosts' URLs and their fetches (``robots`` None: not
        #: obeyed; irlscrapy.scheduler.robotsgate)
        self.robots = RobotsGate(
            robots,
            workbench,
            stats,
            user_agent=user_agent,
            max_crawl_delay=max_crawl_delay,
            clock=clock,
            refuse=self._refuse,
        )
        #: which of BEAST's records move into RAM now (irlscrapy.scheduler.admission)
        self.admission = Admission(
            beast,
            workbench,
            journal,
            stats,
            capacity=capacity,
            host_cap=host_cap,
            horizon=horizon,
            host_budget=host_budget,
            to_host=lambda host, priority, item: self._to_host(host, priority, item, False),
            waiting_dns=lambda: self.waiting_dns,
            host_waiting_dns=self._host_waiting_dns,
        )
        #: the URLs host health holds back (irlscrapy.scheduler.healthholds)
        self.holds = HealthHolds(
            parked,
            workbench,
            journal,
            self.admission,
            clock=clock,
            to_host=self._to_host,
            push_stored=self._push_stored,
        )

    def close(self) -> None:
        """Close BEAST and the journal. What ends later (a DNS answer, a fetch) changes
        nothing: its URLs stay admitted in the journal, and are admitted again on resume."""
        self.closed = True
        self.beast.close()
        self.journal.close()
        self.holds.parked.close()

    def __len__(self) -> int:
        """URLs not handed out yet (in BEAST, waiting for DNS, in RAM; not parked)."""
        return len(self.beast) + self.waiting_dns + len(self.workbench) + len(self.holds)

    # -- in ----------------------------------------------------------------------------
    def push(self, payload: bytes, priority: int = 0, batch: int = 0) -> None:
        """A unique URL: into BEAST, under its PLD."""
        self.push_many([(payload, priority)], batch)

    def push_many(self, urls: list[tuple[bytes, int]], batch: int) -> None:
        """Unique URLs ``(payload, priority)`` of URLseen batch ``batch`` into BEAST, in
        one write per queue file (a stop may store any of them: the restart skip of
        irlscrapy.scheduler.intake)."""
        self.beast.push_many(
            (self._beast_key(payload), HEAD.pack(priority, batch) + payload)
            for payload, priority in urls
        )
        if urls:
            self.admission.resume()  # new records may be of other hosts: try again

    def _beast_key(self, payload: bytes) -> int:
        """BEAST's key of a stored URL: its PLD's."""
        return domain_key(self.plds(url_host(payload_url(payload))))

    def push_direct(self, payload: bytes, priority: int = 0, batch: int = 0) -> None:
        """A retry or redirect of a host's own request: to the front of its host."""
        url = payload_url(payload)
        id_ = self.journal.admit(-1, -1, 0, HEAD.pack(priority, batch) + payload)
        self._to_host(url_host(url), priority, (payload, id_), front=True)

    def push_memory(self, request: Any, front: bool = False) -> None:
        """A Request that cannot be stored (see :class:`MemoryItem`)."""
        item = MemoryItem(request, request.url)
        self._to_host(url_host(request.url), request.priority, item, front=front)

    def push_robots(self, url: str, fetch: RobotsFetch) -> None:
        """A retry or redirect of a robots.txt fetch (not journaled: after a restart,
        robots.txt is fetched anew)."""
        self._to_host(url_host(url), 0, fetch, front=True)

    def readmit(self, admitted: list[Admitted]) -> None:
        """After a restart: the URLs journaled as admitted and not done, back into RAM."""
        for a in admitted:
            priority, _, payload = unpack_record(a.item)
            self._to_host(
                url_host(payload_url(payload)), priority, (payload, a.id), front=a.slot < 0
            )

    def _refuse(self, item: Item | MemoryItem | RobotsFetch, why: str) -> None:
        if isinstance(item, RobotsFetch):  # its redirect went where it cannot be fetched
            self.robots.known(item.host, None, b"")
            return
        self.finished(item)
        self.on_refused(item, why)

    def finished(self, item: Item | MemoryItem | RobotsFetch) -> None:
        """The fetch of ``item`` is over (and its page, if any, processed)."""
        if isinstance(item, tuple) and not self.closed:
            self.journal.done(item[1])

    # -- to a host --------------------------------------------------------------------
    def _host_waiting_dns(self, host: str) -> int:
        """URLs of ``host`` held while it is resolved."""
        held = self._resolving.get(host)
        return len(held) if held else 0

    def _to_host(
        self, host: str, priority: int, item: Item | MemoryItem | RobotsFetch, front: bool
    ) -> None:
        if self.foreign is not None and isinstance(item, tuple) and self.foreign(host):
            self.forward(stored_priority(priority), item)
            return
        state = self.workbench.hosts.get(host)
        if state is not None:
            self._add(state.host, state.ip, priority, item, front)
            return
        held = self._resolving.get(host)
        self.waiting_dns += 1
        if held is not None:
            held.append((priority, item, front))
            return
        self._resolving[host] = [(priority, item, front)]
        d = self.resolve(host_name(host))
        d.addCallbacks(self._resolved, self._unresolved, callbackArgs=(host,), errbackArgs=(host,))

    def _resolved(self, ip: str, host: str) -> None:
        if self.closed:
            return
        held = self._resolving.pop(host, [])
        self.waiting_dns -= len(held)
        why = self.guard.refusal(host_name(host), ip, self.stats)
        if why is not None:
            for _, item, _ in held:
                self._refuse(item, why)
            self.stats.inc_value("irl/guard/refused_urls", len(held))
        else:
            for priority, item, front in held:
                self._add(host, ip, priority, item, front)
        self.on_ready()

    def _unresolved(self, failure: Failure, host: str) -> None:
        if self.closed:
            return
        held = self._resolving.pop(host, [])
        self.waiting_dns -= len(held)
        for _, item, _ in held:
            self._refuse(item, f"DNS lookup of {host} failed: {failure.getErrorMessage()}")
        self.stats.inc_value("irl/dns/dropped_lookups")
        self.stats.inc_value("irl/dns/dropped_urls", len(held))
        logger.debug("dropped %s and %d URLs: %s", host, len(held), failure.getErrorMessage())
        self.on_ready()

    def _add(
        self, host: str, ip: str, priority: int, item: Item | MemoryItem | RobotsFetch, front: bool
    ) -> None:
        if self.holds.holds(host, priority, item, front):
            return
        if not self.robots.allows(host, item):
            self._refuse(item, "robots.txt")
            return
        budget = self.host_budget(host)
        self.workbench.add(
            host, ip, item, priority=priority, budget=budget, front=front, since=self.clock()
        )

    # -- out ---------------------------------------------------------------------------
    def take(self, now: float) -> tuple[VisitState, Item | MemoryItem | RobotsFetch] | None:
        """The next fetch whose host and IP are due, both put in flight: a URL, or its
        host's robots.txt when the host's rules are unknown or expired."""
        self.workbench.forget_idle(now)
        self.holds.release_due(now)
        while True:
            got = self.workbench.take(now)
            if got is None:
                return None
            state, item = got
            clear = isinstance(item, RobotsFetch) or self.robots.clear(state, now)
            hold = self.restart_hold  # (after robots.clear: it sets the Crawl-delay)
            if hold is not None and hold.held(self.workbench, state, item, now):
                continue
            self.admission.host_took_url(state.host)
            if clear:
                return got
            assert not isinstance(item, RobotsFetch)
            fetch = self.robots.fetch_or_wait(state, item, now)
            if fetch is not None:
                return state, fetch

    # -- host health ------------------------------------------------------------------
    def next_due(self) -> float | None:
        """When something may be handed out or leave the bench first (None: nothing)."""
        due = (self.workbench.next_due(), self.holds.bench.next_time())
        times = [t for t in due if t is not None]
        return min(times) if times else None

    def waits_on_failures(self, now: float) -> bool:
        """Does every URL in RAM wait on a failure (its origin held, its host backed
        off or retired, or its host's robots.txt unknown or due for a retry), none on politeness
        alone? A crawl gives up only on such URLs: a host whose Crawl-delay is 30 s is
        waited for, however long its queue."""
        for state in self.workbench.hosts.values():
            if not state.urls or state.backoff > 0 or self.holds.bench.retired(state.host, now):
                continue
            if self.robots.waits(state, now):
                continue
            return False
        return True

    def give_up(self) -> int:
        """The crawl ends: park every stored URL still in RAM (of hosts and origins in
        back-off, retired, or waiting for a robots.txt retry); refuse the Requests kept
        in RAM (their errbacks run); drop robots.txt retries; end the retirements in
        force (what they parked waits for a rerun). Return the URLs parked."""
        bench = self.holds.bench
        bench.end_retirements()
        items = [i for origin in bench.held_origins() for i in bench.take_held(origin)]
        for state in list(self.workbench.hosts.values()):
            items += self.workbench.remove_urls(state, lambda item: True)
        given = 0
        for priority, item in items:
            if isinstance(item, tuple):
                self.holds.park(item, priority)
                given += 1
            elif isinstance(item, MemoryItem):
                self._refuse(item, GIVEN_UP)
            else:
                self.robots.forget(item.host)
        return given

    def take_foreign(self, foreign: Callable[[str], bool]) -> tuple[list[str], int]:
        """A handoff begins: set :attr:`foreign`, forward every stored URL in RAM of the
        hosts it picks, drop their robots.txt retries; the hosts, and URLs forwarded."""
        self.foreign = foreign
        items: list[tuple[int, Any]] = []
        for origin in self.holds.bench.held_origins():
            if foreign(url_host(origin)):
                items += self.holds.bench.take_held(origin)
        hosts = [state for state in self.workbench.hosts.values() if foreign(state.host)]
        for state in hosts:
            items += self.workbench.remove_urls(state, lambda i: not isinstance(i, MemoryItem))
        for host in [host for host in self._resolving if foreign(host)]:
            waiting = self._resolving[host]
            items += [(p, item) for p, item, _ in waiting if not isinstance(item, MemoryItem)]
            self._resolving[host] = [w for w in waiting if isinstance(w[1], MemoryItem)]
            self.waiting_dns -= len(waiting) - len(self._resolving[host])
        forwarded = 0
        for priority, item in items:
            if isinstance(item, tuple):
                self.forward(stored_priority(priority), item)
                forwarded += 1
            elif isinstance(item, RobotsFetch):
                self.robots.forget(item.host)
            else:  # (a Request kept in RAM, from the bench: it stays here)
                self._to_host(url_host(item.url), priority, item, front=False)
        self.admission.resume()  # (a lost host may have paused it)
        self.on_ready()  # (RAM freed, admission resumed: BEAST's records may be admitted)
        return [state.host for state in hosts], forwarded

    def _push_stored(self, record: bytes) -> None:
        """A stored record (a parked URL's) into BEAST, under its PLD."""
        self.beast.push(self._beast_key(record[HEAD.size :]), record)
