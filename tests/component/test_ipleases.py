"""IP leases (irlscrapy.distributed.ipleases) in a real redis-server: agents, each with
its own workbench on one simulated clock, fetching hosts that share IPs. Every fetch is
logged as the server would see it, and the log is held to the IP delay across agents."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator

import pytest
import redis
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from harness.redisserver import RedisServer
from irlscrapy.distributed.ipleases import FALLBACK_AFTER, HOLD_S, IPLeases
from irlscrapy.distributed.registry import CrawlConfig, CrawlRegistry
from irlscrapy.scheduler.frontier.workbench import IPEntry, VisitState, Workbench

IP_DELAY = 1.0
AGENTS = "abc"
HOSTS = [f"h{i}" for i in range(6)]
IPS = ["10.0.0.0", "10.0.0.1"]


def ip_of(host: str) -> str:
    return IPS[int(host[1:]) % len(IPS)]


def no_host_delay(state: VisitState) -> float:
    return 0.0


def ip_delay(entry: IPEntry) -> float:
    return IP_DELAY


class Agent:
    """An agent's workbench and leases, and the fetches it has in flight."""

    def __init__(self, registry: CrawlRegistry, name: str) -> None:
        self.name = name
        self.bench = Workbench(no_host_delay, ip_delay)
        self.leases = IPLeases(registry, name)
        self.bench.ip_delay = self.leases.ip_delay(ip_delay)
        self.leases.attach(self.bench, lambda: None)
        self.flying: list[tuple[VisitState, float]] = []  # (state, start)

    def tick(self, now: float) -> None:
        self.leases.apply(self.leases.run(self.leases.round(now)), now)


class Crawl:
    """Agents of one crawl against one server log: IP -> [(start, end, agent)]."""

    def __init__(self, client: redis.Redis, agents: str = AGENTS) -> None:
        client.flushall()
        self.registry = CrawlRegistry(client, "c", CrawlConfig(16))
        self.tokens = {a: self.registry.join(a, lease_s=600) for a in agents}
        self.agents = {a: Agent(self.registry, a) for a in agents}
        self.now = 1000.0
        self.log: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
        self.urls = 0

    def add(self, agent: str, host: str) -> None:
        self.urls += 1
        self.agents[agent].bench.add(host, ip_of(host), f"http://{host}/{self.urls}")

    def fetch(self, agent: str) -> bool:
        a = self.agents[agent]
        a.bench.forget_idle(self.now)  # as the frontier does before it takes
        got = a.bench.take(self.now)
        if got is not None:
            a.flying.append((got[0], self.now))
        return got is not None

    def end(self, agent: str) -> None:
        a = self.agents[agent]
        state, start = a.flying.pop(0)
        a.bench.release(state, self.now)
        self.log[state.ip].append((start, self.now, agent))

    def run(self, seconds: float, step: float = 0.25) -> None:
        """Every agent ticks each second, and fetches whatever is due (each fetch ends
        ``step`` later)."""
        for _ in range(int(seconds / step)):
            self.now += step
            for name, a in self.agents.items():
                while a.flying:
                    self.end(name)
                if int(self.now / step) % int(1 / step) == 0:
                    a.tick(self.now)
                while self.fetch(name):
                    pass

    def violations(self) -> list[tuple[str, tuple[float, float, str], tuple[float, float, str]]]:
        """Pairs of fetches of one IP closer than the IP delay (or overlapping)."""
        found = []
        for ip, fetches in self.log.items():
            ordered = sorted(fetches)
            for before, after in itertools.pairwise(ordered):
                if after[0] < before[1] + IP_DELAY - 1e-9:
                    found.append((ip, before, after))
        return found


@pytest.fixture
def client(redis_client: redis.Redis) -> redis.Redis:
    return redis_client


def test_two_agents_take_turns_on_a_shared_ip_and_keep_its_delay(client: redis.Redis) -> None:
    crawl = Crawl(client, "ab")
    for _ in range(40):
        crawl.add("a", "h0")  # both hosts on 10.0.0.0, owned by different agents
        crawl.add("b", "h2")
    crawl.run(120)
    assert not crawl.violations(), crawl.violations()[:5]
    fetchers = [agent for _, _, agent in sorted(crawl.log["10.0.0.0"])]
    assert fetchers.count("a") == fetchers.count("b") == 40, "every URL fetched"
    turns = sum(1 for x, y in itertools.pairwise(fetchers) if x != y)
    assert turns >= 4, f"the lease went back and forth only {turns} times: {fetchers}"
    # while both want it, each holds it for HOLD_S, and its fetch in flight then ends
    runs = [len(list(run)) for _, run in itertools.groupby(fetchers)]
    assert max(runs[:-1]) <= HOLD_S / IP_DELAY + 2, "".join(fetchers)


def test_an_ip_nobody_else_wants_is_granted_at_the_next_tick_and_given_back_when_forgotten(
    client: redis.Redis,
) -> None:
    crawl = Crawl(client, "ab")
    crawl.add("a", "h1")
    a = crawl.agents["a"]
    assert not crawl.fetch("a"), "a new IP is gated until its lease comes"
    assert a.leases.wanted == {"10.0.0.1"}
    a.tick(crawl.now)
    assert crawl.fetch("a") and a.leases.held.keys() == {"10.0.0.1"}
    crawl.now += 0.1
    crawl.end("a")
    crawl.now += 2 * IP_DELAY
    a.tick(crawl.now)  # forgets the idle IP and gives its lease back
    assert not a.leases.held and client.hlen("irl:{c}:ips") == 0


def test_a_dead_holders_ip_is_taken_and_a_stopping_agent_gives_its_ips_back(
    client: redis.Redis,
) -> None:
    crawl = Crawl(client, "abc")
    a, b, c = (crawl.agents[x] for x in "abc")
    crawl.add("a", "h0")
    crawl.add("a", "h0")
    a.tick(crawl.now)
    assert crawl.fetch("a")
    crawl.add("b", "h2")
    b.tick(crawl.now)
    assert b.leases.wanted == {"10.0.0.0"}, "held by a, which is alive"
    client.delete("irl:{c}:lease:a")  # a is killed, and its lease on its id lapses
    crawl.now += 1
    b.tick(crawl.now)
    assert b.leases.held.keys() == {"10.0.0.0"}
    # b stops: its leases go back, to the agent waiting
    crawl.add("c", "h4")
    c.tick(crawl.now)
    assert c.leases.wanted == {"10.0.0.0"}
    b.leases.run(b.leases.release_all(crawl.now))
    crawl.now += 1
    c.tick(crawl.now)
    assert c.leases.held.keys() == {"10.0.0.0"}


def test_an_ip_forgotten_and_made_anew_while_waiting_still_waits(client: redis.Redis) -> None:
    crawl = Crawl(client, "ab")
    a, b = crawl.agents["a"], crawl.agents["b"]
    crawl.add("b", "h2")
    b.tick(crawl.now)
    crawl.add("a", "h0")
    a.tick(crawl.now)
    assert a.leases.wanted == {"10.0.0.0"}
    # h0's URLs leave (its origin backs off), its IP entry is forgotten, and back they come
    a.bench.remove_urls(a.bench.hosts["h0"], lambda url: True)
    assert not crawl.fetch("a") and "10.0.0.0" not in a.bench.ips
    crawl.add("a", "h0")
    assert not crawl.fetch("a"), "fetched from an IP another agent holds"
    assert a.leases.wanted == {"10.0.0.0"}
    crawl.run(10)
    assert not crawl.violations() and not len(a.bench), "b gave it up, and a fetched"


def test_redis_away_opens_every_gate_and_multiplies_the_ip_delay_then_asks_again(
    client: redis.Redis,
) -> None:
    crawl = Crawl(client, "ab")
    a, b = crawl.agents["a"], crawl.agents["b"]
    crawl.add("a", "h0")
    a.tick(crawl.now)
    crawl.add("b", "h2")
    crawl.add("b", "h3")
    b.tick(crawl.now)
    assert b.leases.wanted == {"10.0.0.0"} and b.leases.held.keys() == {"10.0.0.1"}
    lost = b.leases.round(crawl.now)
    b.leases.failed(lost, crawl.now, members=2)
    assert crawl.fetch("b") and not crawl.fetch("b"), "a short outage changes nothing"
    crawl.now += 0.5
    crawl.end("b")
    crawl.now += FALLBACK_AFTER
    b.leases.failed(b.leases.round(crawl.now), crawl.now, members=2)
    assert b.leases.factor == 2 and crawl.fetch("b")
    crawl.now += 0.5
    crawl.end("b")
    assert b.bench.ips["10.0.0.0"].next_fetch == crawl.now + 2 * IP_DELAY
    crawl.add("b", "h2")
    crawl.add("b", "h3")
    b.tick(crawl.now)  # Redis is back: every IP asked for anew; a still holds 10.0.0.0
    assert b.leases.factor == 1 and b.leases.held.keys() == {"10.0.0.1"}
    assert b.leases.wanted == {"10.0.0.0"}
    crawl.now += 2 * IP_DELAY
    assert crawl.fetch("b") and b.flying[-1][0].ip == "10.0.0.1"
    assert not crawl.fetch("b"), "10.0.0.0 is a's again"


class SharedIPs(RuleBasedStateMachine):
    """Agents add, fetch, end fetches and tick in any order: the server never sees two
    fetches of one IP closer than the IP delay, at most one agent holds an IP, and once
    the agents keep ticking every URL is fetched."""

    client: redis.Redis

    @initialize()
    def setup(self) -> None:
        self.crawl = Crawl(self.client)
        self.held: dict[str, list[str]] = defaultdict(list)  # agent -> URLs held out

    @rule(agent=st.sampled_from(AGENTS), host=st.sampled_from(HOSTS))
    def add(self, agent: str, host: str) -> None:
        self.crawl.add(agent, host)

    @rule(agent=st.sampled_from(AGENTS))
    def tick(self, agent: str) -> None:
        self.crawl.agents[agent].tick(self.crawl.now)

    @rule(agent=st.sampled_from(AGENTS), host=st.sampled_from(HOSTS))
    def hold_host(self, agent: str, host: str) -> None:
        """The host's URLs leave the workbench (its origin backs off), to come back
        later: its IP entry may be forgotten meanwhile, and made anew."""
        bench = self.crawl.agents[agent].bench
        state = bench.hosts.get(host)
        if state is not None:
            self.held[agent].extend(url for _, url in bench.remove_urls(state, lambda url: True))

    @rule(agent=st.sampled_from(AGENTS))
    def unhold(self, agent: str) -> None:
        for url in self.held.pop(agent, []):
            host = url.split("/")[2]
            self.crawl.agents[agent].bench.add(host, ip_of(host), url)

    @rule(agent=st.sampled_from(AGENTS))
    def fetch(self, agent: str) -> None:
        self.crawl.fetch(agent)

    @precondition(lambda self: any(a.flying for a in self.crawl.agents.values()))
    @rule(data=st.data())
    def end(self, data: st.DataObject) -> None:
        busy = [name for name, a in self.crawl.agents.items() if a.flying]
        self.crawl.end(data.draw(st.sampled_from(busy)))

    @rule(dt=st.sampled_from([0.25, 1.0, HOLD_S]))
    def wait(self, dt: float) -> None:
        self.crawl.now += dt

    @invariant()
    def politeness_and_one_holder(self) -> None:
        assert not self.crawl.violations(), self.crawl.violations()[:3]
        for ip in IPS:
            holders = [n for n, a in self.crawl.agents.items() if ip in a.leases.held]
            assert len(holders) <= 1, (ip, holders)

    def teardown(self) -> None:
        crawl = self.crawl
        if not hasattr(self, "crawl"):
            return
        for agent in AGENTS:
            self.unhold(agent)
        crawl.run(60)
        left = {n: len(a.bench) for n, a in crawl.agents.items()}
        assert not any(left.values()), f"URLs never fetched: {left}"
        assert not crawl.violations(), crawl.violations()[:3]


@pytest.fixture
def shared_ips_client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis_server.client()
    yield client
    client.close()


def test_shared_ips_under_any_interleaving(shared_ips_client: redis.Redis) -> None:
    SharedIPs.client = shared_ips_client
    SharedIPs.TestCase.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)
    SharedIPs.TestCase().runTest()
