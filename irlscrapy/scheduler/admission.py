"""Admission: which of BEAST's records move into RAM now, and when admission waits.

Theory of operation
-------------------
:meth:`Admission.admit` reads records from BEAST's current queue and hands each to the
frontier's next stage (``to_host``: DNS, then the workbench) while RAM has room:
``capacity`` URLs in all, counting those waiting for DNS (:attr:`Admission.ram_full`).

- With a horizon (:mod:`irlscrapy.scheduler.frontier.horizon`), RAM holds about what
  the crawler fetches within it, overall and per host, so BEAST's order (the budgets)
  decides what is crawled; admission goes past the overall target only when the caller
  says the crawler is *hungry* (room for a fetch, no host due).
- A host already holding ``host_cap`` URLs (or its horizon share, or whose IP holds its
  share) gets no more: the record goes back to BEAST, which places it in a later queue
  (``irl/frontier/deferred``), and the admitted journal's cursor moves past it. So a
  huge site cannot fill RAM with URLs that all wait on its one host (the paper's
  stall). After a run of deferrals admission *pauses* until such a host has taken a URL
  (:meth:`Admission.host_took_url`), new records come, or the caller resumes it, so
  deferring never spins through the disk queues. The run is counted across admit()
  calls (each reads at most ``ADMIT_SLICE`` records) and is ``DEFERRAL_RUN`` records
  long, or as long as BEAST when it holds fewer: then every record it holds is a full
  host's.

Invariant: *admission stops at the horizon's target only while a host is due or the
crawler is busy: it never leaves the crawler idle with work in BEAST* (the dispatcher
asks with ``hungry`` then).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from irlscrapy.domains import url_host
from irlscrapy.scheduler.frontier.admitted import AdmittedJournal
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.frontier.horizon import Horizon
from irlscrapy.scheduler.frontier.workbench import VisitState, Workbench
from irlscrapy.scheduler.frontieritems import HEAD, Item
from irlscrapy.scheduler.requestcodec import payload_url

#: Records admit() reads from BEAST per call, at most ...
ADMIT_SLICE = 64
#: ... and for about this long (seconds; the clock is read every ADMIT_CLOCK_EVERY
#: records): a record costs up to ~0.3 ms, and the reactor must not wait long.
ADMIT_SECONDS, ADMIT_CLOCK_EVERY = 0.002, 8
#: Consecutive deferrals (across admit() calls) after which admission waits for a full
#: host to take a URL; fewer when BEAST holds fewer records.
DEFERRAL_RUN = 256


class Admission:
    def __init__(
        self,
        beast: Beast,
        workbench: Workbench,
        journal: AdmittedJournal,
        stats: Any,
        *,
        capacity: int,
        host_cap: int,
        horizon: Horizon | None,
        host_budget: Callable[[str], float],
        to_host: Callable[[str, int, Item], None],
        waiting_dns: Callable[[], int],
        host_waiting_dns: Callable[[str], int],
    ) -> None:
        """``to_host(host, priority, item)``: the next stage of an admitted URL;
        ``waiting_dns()``: URLs waiting for DNS; ``host_waiting_dns(host)``: those of
        ``host``."""
        self.beast = beast
        self.workbench = workbench
        self.journal = journal
        self.stats = stats
        self.capacity = capacity
        self.host_cap = host_cap
        self.horizon = horizon  # None: admit up to the RAM caps
        self.host_budget = host_budget  # the budget of a host's PLD (STAR's, or B0)
        self.to_host = to_host
        self.waiting_dns = waiting_dns
        self.host_waiting_dns = host_waiting_dns
        self._full_hosts: set[str] = set()  # hosts that made admission pause
        self._deferred_run = 0  # records deferred in a row since one was admitted

    def admit(self, limit: int = ADMIT_SLICE, *, hungry: bool = False) -> int:
        """Move up to ``limit`` records from BEAST into RAM while there is room (past
        the horizon's target if ``hungry``); return how many were read. Called often
        (the scheduler: once per reactor turn), so it does little each time (at most
        ADMIT_SECONDS): the reactor must not wait for a whole queue's admission."""
        read = 0
        deadline = time.perf_counter() + ADMIT_SECONDS
        while (
            read < limit
            and (read % ADMIT_CLOCK_EVERY or time.perf_counter() < deadline)
            and self.can_admit(hungry=hungry)
        ):
            popped = self.beast.pop()
            if popped is None:
                break  # a cycle ended: the next queue waits for QF's re-split
            read += 1
            domain, record = popped
            priority = HEAD.unpack_from(record)[0]
            payload = record[HEAD.size :]
            host = url_host(payload_url(payload))
            if not self._room_for(host):
                self.beast.push(domain, record, returned=True)
                self.journal.returned(*self.beast.position)  # (its copy is written)
                self.stats.inc_value("irl/frontier/deferred")
                self._deferred_run += 1
                if self._deferred_run >= min(DEFERRAL_RUN, len(self.beast)):
                    self._full_hosts.add(host)
                continue
            self._deferred_run = 0
            if hungry and self.horizon_full:
                self.stats.inc_value("irl/frontier/past_horizon")
            id_ = self.journal.admit(*self.beast.position, domain, record)
            self.to_host(host, priority, (payload, id_))
        return read

    def can_admit(self, *, hungry: bool = False) -> bool:
        """BEAST has records to pop now (none while its next queue waits for a
        re-split), RAM has room, admission is not paused by a full host, and the
        workbench is below the horizon's target (or the crawler is ``hungry``)."""
        return (
            not self._full_hosts
            and not self.ram_full
            and self.beast.available()
            and (hungry or not self.horizon_full)
        )

    @property
    def horizon_full(self) -> bool:
        """Does RAM hold what the crawler fetches within the horizon?"""
        return self.horizon is not None and self._ram_urls() >= self.horizon.urls()

    def horizon_urls(self) -> int:
        """The horizon's overall target now (0: no horizon)."""
        return self.horizon.urls() if self.horizon is not None else 0

    @property
    def ram_full(self) -> bool:
        """Does RAM hold ``capacity`` admitted URLs (the workbench's and those waiting
        for DNS)? Then admission waits for a URL to leave."""
        return self._ram_urls() >= self.capacity

    @property
    def paused(self) -> bool:
        """Is admission waiting for a full host to take a URL (see the docstring)?"""
        return bool(self._full_hosts)

    def resume(self) -> None:
        """Read on from BEAST after a pause for a full host: new records came, the full
        host took a URL, or the crawl has nothing in flight and nothing due (so that
        will not happen soon); a new run of deferrals pauses again."""
        self._full_hosts.clear()
        self._deferred_run = 0

    def host_took_url(self, host: str) -> None:
        """A URL of ``host`` was handed out (the horizon counts the fetch); if admission
        paused for it, it may go on."""
        if self.horizon is not None:
            self.horizon.fetched()
        if host in self._full_hosts:
            self.resume()

    def host_emptied(self, host: str) -> None:
        """``host``'s URLs left it (held or parked by host health): it is full no more."""
        self._full_hosts.discard(host)

    def _ram_urls(self) -> int:
        return self.waiting_dns() + len(self.workbench)

    def _room_for(self, host: str) -> bool:
        """May ``host`` take another URL: is it below ``host_cap`` and, with a horizon,
        below its share, and its IP (once known) below the IP's?"""
        state = self.workbench.hosts.get(host)
        urls = (len(state.urls) if state else 0) + self.host_waiting_dns(host)
        if urls >= self.host_cap:
            return False
        horizon, workbench = self.horizon, self.workbench
        if horizon is None:
            return True
        if state is None:  # not resolved yet: the delay its budget gives
            return urls < horizon.share(
                workbench.host_delay(VisitState(host, "", self.host_budget(host)))
            )
        if urls >= horizon.share(workbench.host_delay(state)):
            return False
        entry = workbench.ips.get(state.ip)
        return entry is None or entry.urls < horizon.share(workbench.ip_delay(entry))
