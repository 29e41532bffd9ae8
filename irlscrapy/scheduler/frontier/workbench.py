"""The workbench: which URL may be fetched now, host and IP politeness kept (BUbiNG),
and among those that may, the one BEAST admitted first (IRLbot).

Theory of operation
-------------------
A *visit state* is one host: a FIFO of its admitted URLs and ``next_fetch``, the first
instant its next request may start. An *IP entry* gathers the visit states of the hosts
that resolve to one address, in a heap ordered by their ``next_fetch``, and has a
``next_fetch`` of its own. An IP entry is *due* at

    due(entry) = max(entry.next_fetch, next_fetch of the entry's top visit state)

so *a host can be fetched without breaking host or IP politeness if and only if it is
the top visit state of a due entry*. An entry may also be *gated* (``not_before``, set by
:meth:`Workbench.hold_ip`): the multi-agent mode holds an IP until this agent has the
IP's lease in Redis, since hosts owned by other agents may share it
(:mod:`irlscrapy.distributed.ipleases`); ``due`` then takes ``not_before`` as a third
term. A :class:`IPGate` set on the workbench hears of every entry made and dropped, so a
new entry is gated before anything can be taken from it.

Entries wait in a heap ordered by ``due``; once due (:meth:`Workbench.take` moves them,
O(log n) each) they wait in a second heap ordered by the *stamp* of their top host's
first URL: stamps count up as URLs are added, so among the entries that are due the URL
admitted first goes first.

Why not the earliest due, as BUbiNG: when more hosts are due than the crawler can fetch
(a broad crawl, always), an IP fetched 0.05 s ago is due 0.05 s from now, behind
every IP that has been due for seconds, so every IP gets the same share of the fetches
whatever its delay. A huge domain on four IPs, whose budget STAR raised a thousand-fold,
got what four spam IPs got (measured: 64 pages of 100,000). With the stamp order the
crawl follows BEAST's order, where the budgets act, and politeness only holds a URL back.
A ``front`` URL (a retry, a redirect, a URL back from its host's robots.txt fetch) has
stamp 0: it was admitted before anything waiting.

Acquire/release: :meth:`take` hands out the first URL of the top host of the first due
entry and takes the
host and its IP off the heaps (one request in flight per host and per IP; a robots.txt
fetch lets its IP go when its download ends, :meth:`release_ip`, and its host when its
outcome is known);
:meth:`release` puts them back with ``next_fetch = end + delay``, where the delays come
from the injected functions, with the host's budget looked up again first (STAR's
ranking moves while hosts wait); :mod:`irlscrapy.scheduler.hosts.delays` is the one
place that combines budget, Crawl-delay and back-off, and a host's wait may be its delay
with a random part drawn (``host_wait``, as Scrapy draws a project's download delays).
``release(..., ip_only=True)`` is for
a fetch limited by the IP delay only (robots.txt: the paper's rule): the host is due
again at once. :meth:`postpone` moves a host's ``next_fetch`` later (back-off learned
after the release, retirement, a robots.txt retry); ``release`` never moves it earlier.
A visit state with no URLs waits off the heaps until a URL arrives.

Forgetting: a visit state with no URLs and nothing in flight is kept until its
``next_fetch`` has passed (forgetting it earlier would forget a delay in force), then
dropped by :meth:`forget_idle`; so is an IP entry with no hosts left. RAM therefore
holds the admitted URLs plus the hosts and IPs fetched within one delay.

Heaps use lazy deletion: every (re)insertion draws a new number from one counter and
stores it in the object (``version``) and in the heap item, and an item whose number is
not its object's current one is skipped when it reaches the top. Heap items name their
object by its key (host or address), never hold it: a tuple of floats, ints and strings
is one the cyclic GC stops tracking, and the GC's full collections (which stall the
reactor) take time in proportion to the objects it tracks; there are as many heap items
as hosts and IPs in RAM.

Invariants:
*Nothing is handed out before its host and its IP are due, nor while its IP is gated.*
*While anything is due and not in flight, take() hands something out.*
*Of the due entries, take() serves the one whose top host's first URL has the lowest
stamp.*
*A host's URLs are handed out by priority, in the order they were added among equals
(``front`` ones first).*
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys
from collections.abc import Callable
from typing import Any, Protocol

#: The priority a ``front`` URL is held at: above any Request.priority.
FRONT = sys.maxsize


class VisitState:
    """One host. ``urls``: (priority, stamp, URL) in the order they leave, a list (not a
    deque: a host holds at most a few dozen URLs, and an empty deque costs 600 bytes;
    there are as many visit states as hosts in RAM)."""

    __slots__ = (
        "backoff",
        "budget",
        "crawl_delay",
        "failures",
        "host",
        "in_flight",
        "ip",
        "next_fetch",
        "urls",
        "version",
    )

    def __init__(self, host: str, ip: str, budget: float = 1.0) -> None:
        self.host = host
        self.ip = ip
        self.urls: list[tuple[int, int, Any]] = []
        self.next_fetch = 0.0
        self.in_flight = False
        self.version = 0
        self.budget = budget  # the budget of the host's PLD (scales tau_h)
        self.crawl_delay = -1.0  # what the host's robots.txt asks for; < 0: not known yet
        self.backoff = 0.0  # delay earned by errors, 429 and 503; 0: none
        self.failures = 0  # failed fetches in a row (irlscrapy.scheduler.hosts.hosthealth)


class IPEntry:
    __slots__ = (
        "backoff",
        "budget_sum",
        "host_count",
        "hosts",
        "in_flight",
        "ip",
        "next_fetch",
        "not_before",
        "urls",
        "version",
    )

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.next_fetch = 0.0
        self.not_before = 0.0  # the gate: nothing is taken before (inf: closed)
        self.in_flight = False
        self.version = 0
        self.hosts: list[tuple[float, int, str]] = []  # heap of (next_fetch, version, host)
        self.host_count = 0  # visit states of this IP that the workbench holds
        self.budget_sum = 0.0  # of those visit states (for the mean budget that scales tau_s)
        self.urls = 0  # admitted URLs of this IP's hosts, not handed out
        self.backoff = 0.0

    @property
    def mean_budget(self) -> float:
        return self.budget_sum / self.host_count if self.host_count else 1.0


class IPGate(Protocol):
    """Hears of the workbench's IP entries as they come and go (the multi-agent mode's
    IP leases): ``entry_added`` may gate a new entry (``not_before``) before anything is
    taken from it."""

    def entry_added(self, entry: IPEntry) -> None: ...

    def entry_dropped(self, entry: IPEntry) -> None: ...


class Workbench:
    def __init__(
        self,
        host_delay: Callable[[VisitState], float],
        ip_delay: Callable[[IPEntry], float],
        budget_of: Callable[[str], float] | None = None,
        host_wait: Callable[[VisitState], float] | None = None,
    ) -> None:
        self.host_delay = host_delay
        self.ip_delay = ip_delay
        #: one wait of a host at its release: its delay with a random part drawn (the
        #: project's DOWNLOAD_DELAY jitter); None: the delay itself
        self.host_wait = host_wait or host_delay
        #: a host's current budget; looked up at each release, since STAR's ranking
        #: changes while a host stays in the workbench (None: budgets never change)
        self.budget_of = budget_of
        self.hosts: dict[str, VisitState] = {}
        self.ips: dict[str, IPEntry] = {}
        self._heap: list[tuple[float, int, str]] = []  # (due, version, address)
        self._ready: list[tuple[int, int, str]] = []  # (stamp, version, address): due ones
        self._stamps = itertools.count(1)  # of URLs as they are added (0: front)
        #: (next_fetch, version, host or address) of idle visit states and IP entries
        self._idle: list[tuple[float, int, str]] = []
        self._seq = itertools.count(1)  # versions; 0: in no heap
        self.urls = 0  # admitted and not handed out
        self.in_flight = 0
        self.gate: IPGate | None = None

    def __len__(self) -> int:
        return self.urls

    def add(
        self,
        host: str,
        ip: str,
        url: Any,
        *,
        priority: int = 0,
        budget: float = 1.0,
        front: bool = False,
        since: float = 0.0,
    ) -> VisitState:
        """Admit a URL of ``host`` (whose address is ``ip``). A host's URLs leave in order
        of ``priority`` (higher first), FIFO among equals; ``front`` puts the URL before
        all others (a retry or redirect of the host's own request), with stamp 0. A host
        new to the workbench is due from ``since`` (its arrival): an IP's hosts are then
        served in the order they became due, and a stream of new hosts cannot keep
        pushing back the IP's hosts already waiting (every new host's first fetch is its
        robots.txt)."""
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = VisitState(host, ip, budget=budget)
            state.next_fetch = since
            entry = self.ips.get(ip) or self._new_entry(ip)
            entry.host_count += 1
            entry.budget_sum += budget
        assert state.ip == ip, f"{host} moved from {state.ip} to {ip}"
        urls = state.urls
        if front:
            urls.insert(0, (FRONT, 0, url))
        elif not urls or urls[-1][0] >= priority:
            urls.append((priority, next(self._stamps), url))
        else:
            at = next(i for i, (p, _, _) in enumerate(urls) if p < priority)
            urls.insert(at, (priority, next(self._stamps), url))
        self.urls += 1
        self.ips[ip].urls += 1
        if not state.in_flight and (len(urls) == 1 or front):
            self._schedule_host(state)  # (a front URL's stamp moves its IP up)
        return state

    def remove_urls(self, state: VisitState, drop: Callable[[Any], bool]) -> list[tuple[int, Any]]:
        """Take out of ``state`` the URLs for which ``drop`` is true; return them with
        their priorities, in the order they would have left."""
        kept: list[tuple[int, int, Any]] = []
        dropped: list[tuple[int, Any]] = []
        for item in state.urls:
            if drop(item[2]):
                dropped.append((item[0], item[2]))
            else:
                kept.append(item)
        if dropped:
            state.urls = kept
            self.urls -= len(dropped)
            self.ips[state.ip].urls -= len(dropped)
            if not state.in_flight and kept:
                self._schedule_host(state)
            elif not state.in_flight:
                self._retire(state)
                entry = self.ips[state.ip]
                if not entry.in_flight:
                    self._push_entry(entry)  # its next host's stamp may be lower
        return dropped

    def next_due(self) -> float | None:
        """The earliest instant take() can hand something out; None if nothing waits,
        or only behind closed gates (whose opening says so: :meth:`hold_ip`)."""
        entry = self._top_ready() or self._top_entry()
        due = None if entry is None else self._priority(entry)
        return None if due == math.inf else due

    def hold_ip(self, ip: str, until: float) -> bool:
        """Gate ``ip``: nothing is taken from it before ``until`` (math.inf: until
        further notice; 0: open). False if the workbench holds no such IP."""
        entry = self.ips.get(ip)
        if entry is None:
            return False
        entry.not_before = until
        if not entry.in_flight:
            self._push_entry(entry)  # (out of the stamp order too, if it is there)
        return True

    def due_ips(self, now: float, limit: int) -> int:
        """IP entries whose top host and the IP itself are due at ``now``, counted up to
        ``limit`` (the due ones are moved to the stamp order first; counting walks it
        only until ``limit``)."""
        self._promote(now)
        count = 0
        for _, version, ip in self._ready:
            entry = self.ips.get(ip)
            if (
                entry is not None
                and entry.version == version
                and self._top_host(entry)
                and entry.not_before <= now
            ):
                count += 1
                if count >= limit:
                    break
        return count

    def take(self, now: float) -> tuple[VisitState, Any] | None:
        """The first URL of the top host of the due entry with the lowest stamp; the host
        and its IP go in flight. None if no entry is due."""
        self._promote(now)
        entry = self._top_ready(now)
        if entry is None:
            return None
        heapq.heappop(self._ready)
        state = self._top_host(entry)
        assert state is not None and state.next_fetch <= now
        assert entry.next_fetch <= now and entry.not_before <= now
        heapq.heappop(entry.hosts)
        _, _, url = state.urls.pop(0)
        self.urls -= 1
        entry.urls -= 1
        state.in_flight = entry.in_flight = True
        state.version = entry.version = 0
        self.in_flight += 1
        return state, url

    def release(
        self, state: VisitState, end: float, *, ip_only: bool = False, ip_released: bool = False
    ) -> None:
        """The request of ``state`` ended at ``end``: set both delays (the IP's only, for
        ``ip_only``), requeue both; with ``ip_released`` the IP was let go already
        (:meth:`release_ip`) and only the host is released."""
        assert state.in_flight, f"{state.host} has no request in flight"
        entry = self.ips[state.ip]
        state.in_flight = False
        self.in_flight -= 1
        if self.budget_of is not None:
            budget = self.budget_of(state.host)
            if budget != state.budget:
                entry.budget_sum += budget - state.budget
                state.budget = budget
        delay = end if ip_only else end + self.host_wait(state)
        state.next_fetch = max(state.next_fetch, delay)  # a postponement outlives the fetch
        if not ip_released:
            entry.in_flight = False
            entry.next_fetch = end + self.ip_delay(entry)
        if state.urls:
            self._push_host(entry, state)
        else:
            self._retire(state)
        if not entry.in_flight:
            self._push_entry(entry)

    def release_ip(self, state: VisitState, end: float) -> None:
        """The request of ``state`` no longer uses its IP, though it holds its host (a
        robots.txt download ended at ``end``; its outcome, read later, decides what the
        host may fetch): the IP's delay runs from ``end`` and its other hosts may be
        served. :meth:`release` with ``ip_released`` then releases the host."""
        entry = self.ips[state.ip]
        assert state.in_flight and entry.in_flight, f"{state.host} holds no IP"
        entry.in_flight = False
        entry.next_fetch = end + self.ip_delay(entry)
        self._push_entry(entry)

    def postpone(self, state: VisitState, until: float) -> None:
        """``state`` is not fetched before ``until`` (a back-off, a retirement, a
        robots.txt retry); an earlier ``next_fetch`` moves, a later one stays. A host in
        flight keeps it past its release."""
        if until <= state.next_fetch:
            return
        state.next_fetch = until
        if state.in_flight:
            return
        if state.urls:
            entry = self.ips[state.ip]
            self._push_host(entry, state)
            if not entry.in_flight:
                self._push_entry(entry)
        else:
            self._retire(state)

    def forget_idle(self, now: float) -> int:
        """Drop visit states and IP entries idle since before ``now`` (see the module
        docstring); return how many were dropped."""
        dropped = 0
        while self._idle and self._idle[0][0] <= now:
            _, version, key = heapq.heappop(self._idle)
            state = self.hosts.get(key)
            if state is not None and state.version == version:
                if state.in_flight or state.urls:
                    continue
                del self.hosts[key]
                entry = self.ips[state.ip]
                entry.host_count -= 1
                entry.budget_sum -= state.budget
                if not entry.host_count:
                    entry.version = next(self._seq)
                    heapq.heappush(self._idle, (entry.next_fetch, entry.version, entry.ip))
            else:
                idle = self.ips.get(key)
                if idle is None or idle.version != version or idle.in_flight or idle.host_count:
                    continue
                del self.ips[key]
                if self.gate is not None:
                    self.gate.entry_dropped(idle)
            dropped += 1
        return dropped

    def _retire(self, state: VisitState) -> None:
        state.version = next(self._seq)
        heapq.heappush(self._idle, (state.next_fetch, state.version, state.host))

    # -- heaps -----------------------------------------------------------------------
    def _new_entry(self, ip: str) -> IPEntry:
        entry = self.ips[ip] = IPEntry(ip)
        if self.gate is not None:
            self.gate.entry_added(entry)
        return entry

    def _schedule_host(self, state: VisitState) -> None:
        entry = self.ips.get(state.ip) or self._new_entry(state.ip)
        self._push_host(entry, state)
        if not entry.in_flight:
            self._push_entry(entry)

    def _push_host(self, entry: IPEntry, state: VisitState) -> None:
        state.version = next(self._seq)
        heapq.heappush(entry.hosts, (state.next_fetch, state.version, state.host))

    def _push_entry(self, entry: IPEntry) -> None:
        if self._top_host(entry) is None:
            return
        entry.version = next(self._seq)
        heapq.heappush(self._heap, (self._priority(entry), entry.version, entry.ip))

    def _top_host(self, entry: IPEntry) -> VisitState | None:
        """The visit state of ``entry`` due first, after dropping stale heap items."""
        heap = entry.hosts
        while heap:
            _, version, host = heap[0]
            state = self.hosts.get(host)
            if state is not None and state.version == version:
                return state  # (a host in the heap is not in flight and has URLs)
            heapq.heappop(heap)
        return None

    def _priority(self, entry: IPEntry) -> float:
        top = self._top_host(entry)
        assert top is not None
        return max(entry.next_fetch, entry.not_before, top.next_fetch)

    def _current_top(
        self, heap: list[tuple[Any, int, str]], key: Callable[[IPEntry], Any]
    ) -> IPEntry | None:
        """The entry at the top of ``heap`` once its item is current: items of a retired
        entry or an old version are dropped, an item whose ``key`` changed is pushed
        again with the new key (keys change lazily: a host's delay, a URL put in front)."""
        while heap:
            old, version, ip = heap[0]
            entry = self.ips.get(ip)
            if entry is None or entry.version != version or not self._top_host(entry):
                heapq.heappop(heap)
                continue
            current = key(entry)
            if old == current:
                return entry
            entry.version = next(self._seq)
            heapq.heapreplace(heap, (current, entry.version, ip))
        return None

    def _top_entry(self) -> IPEntry | None:
        """The entry due first among those not moved to the stamp order yet."""
        return self._current_top(self._heap, self._priority)

    def _promote(self, now: float) -> None:
        """Move the entries due at ``now`` to the stamp order."""
        while (entry := self._top_entry()) is not None and self._priority(entry) <= now:
            heapq.heappop(self._heap)
            entry.version = next(self._seq)
            heapq.heappush(self._ready, (self._stamp(entry), entry.version, entry.ip))

    def _top_ready(self, now: float | None = None) -> IPEntry | None:
        """The due entry whose top host's first URL has the lowest stamp. With ``now``,
        an entry not due at ``now`` goes back to the due order (the clock stepped back
        since it was moved)."""
        while (entry := self._current_top(self._ready, self._stamp)) is not None:
            if now is None or self._priority(entry) <= now:
                return entry
            heapq.heappop(self._ready)
            self._push_entry(entry)
        return None

    def _stamp(self, entry: IPEntry) -> int:
        top = self._top_host(entry)
        assert top is not None
        return top.urls[0][1]
