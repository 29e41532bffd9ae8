"""``HealthHolds``: the URLs the frontier holds back for host health.

Host health (:mod:`irlscrapy.scheduler.hosts.hosthealth`) backs off and retires failing
hosts and origins; this is where their URLs wait (:mod:`irlscrapy.scheduler.frontier.parking`
keeps them):

- an origin in back-off has its URLs held on the bench, in RAM (:meth:`HealthHolds.hold_origin`),
  and so has every URL of it that reaches its host meanwhile; they go back to their host
  when the back-off ends (:meth:`HealthHolds.release_due`);
- a retired host or origin has its stored URLs parked on disk (:meth:`HealthHolds.retire`),
  and every stored URL of it that reaches its host while it rests; they go back to
  BEAST when a retirement ends, or when a finished crawl is run again.

A Request kept in RAM (it cannot be stored) and a robots.txt fetch are never parked:
they stay with their host.

Invariant: *a URL held or parked here is, exactly once, released to its host or
BEAST, or handed over (a crawl's end, another agent's taking its host).*
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from irlscrapy.domains import url_host, url_origin
from irlscrapy.scheduler.admission import Admission
from irlscrapy.scheduler.frontier.admitted import AdmittedJournal
from irlscrapy.scheduler.frontier.parking import Bench, ParkedStore
from irlscrapy.scheduler.frontier.workbench import FRONT, VisitState, Workbench
from irlscrapy.scheduler.frontieritems import HEAD, Item, MemoryItem, RobotsFetch, item_url

#: Where a URL leaving the holds goes: its host (host, priority, item, front).
ToHost = Callable[[str, int, Item | MemoryItem | RobotsFetch, bool], None]


class HealthHolds:
    def __init__(
        self,
        parked: ParkedStore,
        workbench: Workbench,
        journal: AdmittedJournal,
        admission: Admission,
        *,
        clock: Callable[[], float],
        to_host: ToHost,
        push_stored: Callable[[bytes], None],
    ) -> None:
        self.parked = parked  # retired hosts' and origins' URLs, on disk
        self.bench = Bench()  # origins in back-off and their URLs, retirements in force
        self.workbench = workbench
        self.journal = journal
        self.admission = admission
        self.clock = clock
        self.to_host = to_host  # a URL released from the bench goes to its host
        self.push_stored = push_stored  # a parked record goes back to BEAST

    def __len__(self) -> int:
        """URLs held on the bench (parked ones are on disk: ``parked.count``)."""
        return len(self.bench)

    def holds(
        self, host: str, priority: int, item: Item | MemoryItem | RobotsFetch, front: bool
    ) -> bool:
        """Does ``item``, reaching ``host``, stay here (parked: its host or origin is
        retired; held: its origin is in back-off)?"""
        if not self.bench.in_force() or isinstance(item, RobotsFetch):
            return False
        origin = url_origin(item_url(item))
        now = self.clock()
        if isinstance(item, tuple) and (
            self.bench.retired(host, now) or self.bench.retired(origin, now)
        ):
            self.park(item, priority)
            return True
        return self.bench.add_held(origin, FRONT if front else priority, item)

    def hold_origin(self, state: VisitState, origin: str, until: float) -> None:
        """``origin`` (of host ``state``) is backed off until ``until``: its URLs leave
        the host, whose other origins go on being fetched."""
        held = self.workbench.remove_urls(
            state,
            lambda item: not isinstance(item, RobotsFetch) and url_origin(item_url(item)) == origin,
        )
        self.bench.hold(origin, until, held)
        self.admission.host_emptied(state.host)

    def retire(self, key: str, state: VisitState, until: float) -> int:
        """Retire ``key`` (``state``'s host, or one of its origins) until ``until``: its
        stored URLs, held or queued, are parked; a Request kept in RAM and a robots.txt
        fetch stay with the host. Return how many were parked."""
        self.bench.retire(key, until)
        is_host = key == state.host
        parked = self.workbench.remove_urls(
            state,
            lambda item: isinstance(item, tuple) and (is_host or url_origin(item_url(item)) == key),
        )
        held = [] if is_host else self.bench.take_held(key)
        for priority, item in [*parked, *held]:
            if isinstance(item, tuple):
                self.park(item, priority)
            else:
                self.to_host(state.host, priority, item, False)
        if is_host:
            self.workbench.postpone(state, until)
        self.admission.host_emptied(state.host)
        return len(parked) + len(held)

    def release_due(self, now: float) -> None:
        """Back-offs that have ended: their URLs back to their hosts; a retirement that
        has ended: every parked URL back to BEAST."""
        released, retirement_ended = self.bench.release_due(now)
        for origin, items in released:
            host = url_host(origin)
            for priority, item in items:
                self.to_host(host, priority, item, False)
        if retirement_ended:
            self.replay_parked()

    def park(self, item: Item, priority: int) -> None:
        """``item`` to disk, done in RAM (the admitted journal forgets it)."""
        self.parked.park(HEAD.pack(stored_priority(priority), 0) + item[0])
        self.journal.done(item[1])

    def hold_parked(self, hold: bool) -> None:
        """Start or end a hold on replays of parked URLs (ParkedStore.hold)."""
        if self.parked.hold(hold):
            self.replay_parked()

    def replay_parked(self, older: list[Any] | None = None) -> int:
        """Parked URLs (of ``older`` generations, else the current one) back to BEAST."""
        pushed = self.parked.replay(self.push_stored, older)
        if pushed:
            self.admission.resume()
        return pushed


def stored_priority(priority: int) -> int:
    """The priority a URL of the workbench is stored with (a retry's FRONT: 0)."""
    return priority if priority != FRONT else 0
