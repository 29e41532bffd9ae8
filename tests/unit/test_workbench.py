"""The workbench against a brute-force model of host and IP politeness and of the
stamp order among due IPs."""

from __future__ import annotations

import math

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from irlscrapy.scheduler.frontier.workbench import FRONT, IPEntry, VisitState, Workbench

HOSTS = [f"h{i}" for i in range(7)]


def ip_of(host: str) -> str:
    return f"10.0.0.{int(host[1:]) % 3}"  # several hosts per IP


def host_delay(state: VisitState) -> float:
    return 1.0 + int(state.host[1:]) % 3  # 1, 2 or 3 seconds


def ip_delay(entry: IPEntry) -> float:
    return 0.5


class ModelGate:
    """The gates of IPs as the multi-agent mode's leases would set them: an entry made
    anew takes its IP's gate, and one dropped lets the IP's gate stand."""

    def __init__(self) -> None:
        self.gates: dict[str, float] = {}
        self.dropped: list[str] = []

    def entry_added(self, entry: IPEntry) -> None:
        entry.not_before = self.gates.get(entry.ip, 0.0)

    def entry_dropped(self, entry: IPEntry) -> None:
        self.dropped.append(entry.ip)


class WorkbenchMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.bench = Workbench(host_delay, ip_delay)
        self.gate = self.bench.gate = ModelGate()
        self.now = 0.0
        self.fifo: dict[str, list[str]] = {h: [] for h in HOSTS}
        self.host_next = dict.fromkeys(HOSTS, 0.0)
        self.ip_next: dict[str, float] = {}
        self.flying: dict[str, VisitState] = {}  # host -> state handed out
        self.holding: set[str] = set()  # hosts in flight that still hold their IP
        self.counter = 0
        self.priority: dict[str, int] = {}
        self.stamp: dict[str, int] = {}  # URL -> its order of admission (0: front)

    def due(self) -> set[str]:
        busy_ips = {ip_of(h) for h in self.holding}
        return {
            h
            for h in HOSTS
            if self.fifo[h]
            and h not in self.flying
            and ip_of(h) not in busy_ips
            and self.host_next[h] <= self.now
            and self.ip_next.get(ip_of(h), 0.0) <= self.now
            and self.gate.gates.get(ip_of(h), 0.0) <= self.now
        }

    @rule(host=st.sampled_from(HOSTS), front=st.booleans(), priority=st.sampled_from([0, 0, 1, -1]))
    def add(self, host: str, front: bool, priority: int) -> None:
        self.counter += 1
        url = f"http://{host}/{self.counter}"
        self.bench.add(host, ip_of(host), url, front=front, priority=priority)
        self.priority[url] = FRONT if front else priority
        self.stamp[url] = 0 if front else self.counter
        fifo = self.fifo[host]
        if front:
            fifo.insert(0, url)
        else:
            at = [i for i, u in enumerate(fifo) if self.priority[u] < priority]
            fifo.insert(at[0] if at else len(fifo), url)

    @rule(host=st.sampled_from(HOSTS))
    def remove_odd_urls(self, host: str) -> None:
        state = self.bench.hosts.get(host)
        if state is None:
            assert not self.fifo[host]
            return
        dropped = self.bench.remove_urls(state, lambda url: int(url.rsplit("/", 1)[1]) % 2)
        assert [u for _, u in dropped] == [
            u for u in self.fifo[host] if int(u.rsplit("/", 1)[1]) % 2
        ]
        self.fifo[host] = [u for u in self.fifo[host] if not int(u.rsplit("/", 1)[1]) % 2]

    @rule()
    def forget_idle(self) -> None:
        self.bench.forget_idle(self.now)
        for host in HOSTS:
            if host not in self.bench.hosts:
                assert not self.fifo[host] and host not in self.flying
                assert self.host_next[host] <= self.now, f"{host} forgotten with a delay in force"
                self.host_next[host] = 0.0  # a past due time: the same as none
        for ip in list(self.ip_next):
            if ip not in self.bench.ips:
                assert self.ip_next[ip] <= self.now, f"{ip} forgotten with a delay in force"
                del self.ip_next[ip]
        assert not set(self.gate.dropped) & set(self.bench.ips), "the gate heard of a live IP"
        self.gate.dropped.clear()

    @rule(host=st.sampled_from(HOSTS), dt=st.sampled_from([0.0, 0.5, 3.0, 10.0]))
    def postpone(self, host: str, dt: float) -> None:
        state = self.bench.hosts.get(host)
        if state is None:
            return
        self.bench.postpone(state, self.now + dt)
        self.host_next[host] = max(self.host_next[host], self.now + dt)

    @rule(
        ip=st.sampled_from(sorted({ip_of(h) for h in HOSTS})),
        until=st.sampled_from([math.inf, 0.0, 0.5, 3.0]),
    )
    def hold_ip(self, ip: str, until: float) -> None:
        """The lease of ``ip`` is lost (inf), or granted from now + ``until``."""
        gate = until if until == math.inf else self.now + until
        self.gate.gates[ip] = gate
        assert self.bench.hold_ip(ip, gate) == (ip in self.bench.ips)

    @rule(dt=st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5]))
    def wait(self, dt: float) -> None:
        self.now += dt

    @rule()
    def take(self) -> None:
        due = self.due()
        got = self.bench.take(self.now)
        if got is None:
            assert not due, f"{due} are due at {self.now} but nothing was handed out"
            return
        state, url = got
        assert state.host in due, f"{state.host} handed out before it was due"
        assert state.host in self.tops(ip_of(state.host)), "not its IP's top host"
        for ip in {ip_of(h) for h in due} - {ip_of(state.host)}:
            key = max(self.stamp[self.fifo[h][0]] for h in self.tops(ip))
            assert self.stamp[url] <= key, f"{url} served before {ip}'s earlier URL"
        assert url == self.fifo[state.host].pop(0)
        self.flying[state.host] = state
        self.holding.add(state.host)

    def tops(self, ip: str) -> set[str]:
        """The hosts of ``ip`` that may be its top visit state: those due first."""
        waiting = {h: self.host_next[h] for h in HOSTS if ip_of(h) == ip and self.fifo[h]}
        waiting = {h: t for h, t in waiting.items() if h not in self.flying}
        first = min(waiting.values())
        return {h for h, t in waiting.items() if t == first}

    @precondition(lambda self: self.holding)
    @rule(data=st.data())
    def release_ip(self, data: st.DataObject) -> None:
        """A robots.txt download ended: its IP goes, its host stays in flight."""
        host = data.draw(st.sampled_from(sorted(self.holding)))
        self.bench.release_ip(self.flying[host], self.now)
        self.holding.discard(host)
        self.ip_next[ip_of(host)] = self.now + 0.5

    @precondition(lambda self: self.flying)
    @rule(data=st.data(), ip_only=st.booleans())
    def release(self, data: st.DataObject, ip_only: bool) -> None:
        host = data.draw(st.sampled_from(sorted(self.flying)))
        held = host in self.holding
        self.bench.release(self.flying.pop(host), self.now, ip_only=ip_only, ip_released=not held)
        delay = 0.0 if ip_only else host_delay(VisitState(host, ip_of(host)))
        # a postponement made while in flight outlives the release
        self.host_next[host] = max(self.host_next[host], self.now + delay)
        if held:
            self.holding.discard(host)
            self.ip_next[ip_of(host)] = self.now + 0.5

    @invariant()
    def next_due_is_the_earliest_eligible_time(self) -> None:
        """Exact while nothing is due; a time not after now while something is."""
        busy_ips = {ip_of(h) for h in self.holding}
        times = [
            max(
                self.host_next[h],
                self.ip_next.get(ip_of(h), 0.0),
                self.gate.gates.get(ip_of(h), 0.0),
            )
            for h in HOSTS
            if self.fifo[h] and h not in self.flying and ip_of(h) not in busy_ips
        ]
        times = [t for t in times if t != math.inf]  # (behind a closed gate: no time)
        due = self.bench.next_due()
        if self.due():
            assert due is not None and due <= self.now
        else:
            assert due == (min(times) if times else None)
        assert len(self.bench) == sum(map(len, self.fifo.values()))
        due_ips = {ip_of(h) for h in self.due()}
        assert self.bench.due_ips(self.now, len(HOSTS)) == len(due_ips)
        if due_ips:
            assert self.bench.due_ips(self.now, 1) == 1  # stops at the limit
        for ip, entry in self.bench.ips.items():
            assert entry.urls == sum(len(self.fifo[h]) for h in HOSTS if ip_of(h) == ip)
            assert entry.host_count == sum(1 for s in self.bench.hosts.values() if s.ip == ip)


TestWorkbenchStateful = WorkbenchMachine.TestCase
TestWorkbenchStateful.settings = settings(max_examples=200, stateful_step_count=80, deadline=None)


def test_a_release_takes_the_hosts_current_budget() -> None:
    """STAR re-ranks while a host waits: the release uses the budget of now, and the IP's
    mean budget (which scales tau_s) follows."""
    budgets = {"a": 10.0, "b": 10.0}
    seen: list[tuple[str, float, float]] = []

    def record_host(state: VisitState) -> float:
        seen.append((state.host, state.budget, bench.ips[state.ip].mean_budget))
        return 1.0

    bench = Workbench(record_host, ip_delay, budget_of=budgets.__getitem__)
    bench.add("a", "10.0.0.1", "a1", budget=10.0)
    bench.add("b", "10.0.0.1", "b1", budget=10.0)
    state, _ = bench.take(0.0) or (None, None)
    assert state is not None
    budgets[state.host] = 1000.0
    bench.release(state, 0.1)
    assert seen == [(state.host, 1000.0, 505.0)]
    assert bench.ips["10.0.0.1"].budget_sum == 1010.0


def test_due_ips_are_served_in_the_order_their_urls_came() -> None:
    """The IP fetched a moment ago goes first again once due, if its next URL came
    first: not behind every IP due for longer (the order that starved huge domains)."""
    bench = Workbench(lambda state: 0.0, lambda entry: 0.1)
    for i in range(3):
        bench.add(f"w{i}", "10.0.0.1", f"w{i}")  # a huge domain's hosts, on one IP
    for i in range(3):
        bench.add(f"s{i}", f"10.0.1.{i}", f"s{i}")  # later URLs, one IP each
    served = []
    for now in (0.0, 0.1, 0.2):
        got = bench.take(now)
        assert got is not None
        served.append(got[1])
        bench.release(got[0], now)
    assert served == ["w0", "w1", "w2"]


def test_a_front_url_moves_its_ip_up() -> None:
    """A URL put in front of a host (a retry) is served before URLs admitted earlier on
    other IPs, though the host's IP was already waiting in the order."""
    bench = Workbench(host_delay, ip_delay)
    bench.add("a", "10.0.0.1", "a1")
    bench.add("b", "10.0.0.2", "b1")
    bench.add("b", "10.0.0.2", "b2")
    assert bench.due_ips(0.0, 10) == 2  # both IPs now wait in the stamp order
    bench.add("b", "10.0.0.2", "b0", front=True)
    got = bench.take(0.0)
    assert got is not None and got[1] == "b0"


def test_an_ip_whose_top_host_empties_keeps_its_place() -> None:
    """When an IP's top host loses its URLs, its next host's (earlier) URL decides where
    the IP stands."""
    bench = Workbench(host_delay, ip_delay)
    bench.add("y", "10.0.0.1", "y1", since=1.0)  # first URL, its host due later
    bench.add("z", "10.0.0.2", "z1")
    x = bench.add("x", "10.0.0.1", "x1", since=0.0)  # the IP's top host
    assert bench.due_ips(2.0, 10) == 2
    bench.remove_urls(x, lambda url: True)
    got = bench.take(2.0)
    assert got is not None and got[1] == "y1"


def test_a_clock_that_steps_back_holds_an_entry_already_moved_to_the_stamp_order() -> None:
    """The wall clock can step back (NTP): an entry found due at 10 s is not handed out
    at 9 s if it is not due then, and is at 10 s."""
    bench = Workbench(host_delay, ip_delay)
    bench.add("a", "10.0.0.1", "a1", since=10.0)
    assert bench.due_ips(10.0, 10) == 1
    assert bench.take(9.0) is None
    assert bench.next_due() == 10.0
    got = bench.take(10.0)
    assert got is not None and got[1] == "a1"


def test_a_release_waits_the_hosts_drawn_wait_and_the_rest_read_its_delay() -> None:
    """With ``host_wait`` (a project's DOWNLOAD_DELAY with Scrapy's jitter) a released
    host is due after the wait drawn at its release; its delay in force is unchanged."""
    bench = Workbench(lambda state: 1.0, lambda entry: 0.0, host_wait=lambda state: 1.4)
    bench.add("a", "10.0.0.1", "a1")
    bench.add("a", "10.0.0.1", "a2")
    state, _ = bench.take(0.0) or (None, None)
    assert state is not None
    bench.release(state, 2.0)
    assert state.next_fetch == 3.4
    assert bench.host_delay(state) == 1.0
    assert bench.take(3.3) is None
    assert bench.take(3.4) == (state, "a2")
