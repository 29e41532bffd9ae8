"""DNS, one truth: HostResolver, DNSCache and IRLResolver, over real DNS on loopback.

The server is the in-vitro web's (tiny profile), on a private reactor (see dnsfixture);
it counts the queries that reach it, so "no query" below means no packet was sent.
"""

from __future__ import annotations

import gc
import shutil
import socket
import tempfile
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plyvel
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from scrapy import Spider
from scrapy.crawler import AsyncCrawlerRunner, CrawlerRunner
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.reactor import is_reactor_installed
from scrapy.utils.test import get_crawler, get_reactor_settings
from twisted.internet import defer
from twisted.internet.base import ThreadedResolver
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.error import DNSLookupError
from twisted.internet.task import Clock
from twisted.names import client

from harness.fulldisk import fill, small_tmpfs
from irlscrapy.exceptions import ConfigurationError, DirectoryLocked
from irlscrapy.scheduler.hosts import dnsclient
from irlscrapy.scheduler.hosts.dns import DNSCache, IRLResolver
from irlscrapy.scheduler.hosts.resolver import DNSLookupFailed, HostResolver, parse_servers

from .dnsfixture import Net, ScriptedResolver, Stats


@pytest.fixture(scope="module")
def net() -> Iterator[Net]:
    n = Net()
    yield n
    n.close()


def kind_of(net: Net, d: Deferred[Any]) -> str:
    with pytest.raises(DNSLookupFailed) as info:
        net.wait(d)
    return info.value.kind


def synchronous(f: Any, *args: Any) -> Deferred[Any]:
    return defer.maybeDeferred(f, *args)


def fired(d: Deferred[Any]) -> list[Any]:
    """What ``d`` fired with so far (a list of one result or Failure, or empty)."""
    out: list[Any] = []
    d.addBoth(out.append)
    return out


def real_cache(net: Net, timeout: float = 2.0, **kw: Any) -> tuple[DNSCache, Stats]:
    stats = Stats()
    kw.setdefault("clock", net.reactor)
    return DNSCache(net.resolver(timeout), stats=stats, **kw), stats


def scripted_cache(
    script: dict[str, list[str]] | None = None, ttl: float | None = 300.0, **kw: Any
) -> tuple[DNSCache, ScriptedResolver, Clock, Stats]:
    resolver, clock, stats = ScriptedResolver(script, ttl), Clock(), Stats()
    return DNSCache(resolver, clock=clock, stats=stats, **kw), resolver, clock, stats


class TestServersSetting:
    def test_servers_are_ip_port_pairs_port_53_when_left_out(self) -> None:
        assert parse_servers("127.0.0.1:5353, [::1]:53,10.1.2.3,[::2]") == [
            ("127.0.0.1", 5353),
            ("::1", 53),
            ("10.1.2.3", 53),
            ("::2", 53),
        ]
        assert parse_servers("") == parse_servers("  ") == []

    @pytest.mark.parametrize(
        "bad",
        [
            "ns1.example:53",
            "127.0.0.1:x",
            "127.0.0.1:0",
            "127.0.0.1:70000",
            "1.2.3.4:",
            "127.0.0.1:53,",
            "[::1]53",
            "[::1",
        ],
    )
    def test_bad_servers_are_refused_with_the_expected_format(self, bad: str) -> None:
        with pytest.raises(ConfigurationError, match=r"is not IP:PORT\. Give .*127\.0\.0\.1:53"):
            parse_servers(bad)

    def test_a_crawler_with_bad_servers_fails_when_its_cache_is_built(self) -> None:
        crawler = get_crawler(Spider, {"IRL_DNS_SERVERS": "ns1.example:53"})
        with pytest.raises(ConfigurationError, match=r"IRL_DNS_SERVERS='ns1\.example:53'"):
            DNSCache.of(crawler)

    def test_bad_numbers_name_their_setting(self) -> None:
        with pytest.raises(ConfigurationError, match="IRL_DNS_TIMEOUT='soon' is not a number"):
            DNSCache.of(get_crawler(Spider, {"IRL_DNS_TIMEOUT": "soon"}))
        with pytest.raises(ConfigurationError, match=r"IRL_DNS_CACHE_ENTRIES >= 1 \(got 0\)"):
            DNSCache.of(get_crawler(Spider, {"IRL_DNS_CACHE_ENTRIES": 0}))


class TestHostResolver:
    def test_an_ok_host_answers_its_modelled_address_and_ttl(self, net: Net) -> None:
        (host,) = net.hosts("ok")
        assert net.wait(net.resolver().query(host)) == (net.ip(host), 300.0)

    def test_queries_share_a_few_ports_that_are_replaced_as_they_age(
        self, net: Net, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(dnsclient, "QUERIES_PER_PORT", 5)
        opened: list[Any] = []
        real_listen = net.reactor.listenUDP
        monkeypatch.setattr(
            net.reactor, "listenUDP", lambda *a, **kw: opened.append(real_listen(*a, **kw))
        )
        resolver = net.resolver()
        hosts = net.hosts("ok", 60)
        answers = net.wait(defer.gatherResults([resolver.query(h) for h in hosts]))
        assert [address for address, _ in answers] == [net.ip(h) for h in hosts]
        # queries go round the 8 ports; each port is replaced at its 5th query
        per_port = [len(range(i, len(hosts), dnsclient.PORTS)) for i in range(dnsclient.PORTS)]
        assert len(opened) == sum(1 + queries // 5 for queries in per_port)
        net.sleep(0.05)
        listening = [port for port in opened if port.connected]
        assert len(listening) == dnsclient.PORTS  # every retired port was closed
        resolver.close()
        net.sleep(0.05)
        assert not any(port.connected for port in opened)

    def test_failures_are_named_by_kind(self, net: Net) -> None:
        resolver = net.resolver(timeout=0.3)
        for kind in ("nxdomain", "servfail", "timeout"):
            assert kind_of(net, resolver.query(net.hosts(kind)[0])) == kind
        assert kind_of(net, resolver.query("not.in.the.web.example")) == "nxdomain"

    @pytest.mark.parametrize("name", ["a" * 64 + ".example", "a..b.example"])
    def test_a_name_that_cannot_exist_fails_as_nxdomain_without_a_query(
        self, net: Net, name: str
    ) -> None:
        """twisted.names raised UnicodeError for it at once, out of the frontier's
        admission (and at every restart: the URL was journaled)."""
        assert kind_of(net, net.resolver().query(name)) == "nxdomain"

    def test_a_slow_host_answers_after_the_modelled_delay(self, net: Net) -> None:
        (host,) = net.hosts("slow")
        started = time.monotonic()
        assert net.wait(net.resolver().query(host))[0] == net.ip(host)
        assert time.monotonic() - started >= 0.95 * net.web.profile.dns_slow_delay

    def test_the_system_resolver_reads_the_hosts_file_and_gives_no_ttl(self, net: Net) -> None:
        resolver = HostResolver(reactor=net.reactor, in_thread=synchronous)
        assert net.wait(resolver.query("localhost")) == ("127.0.0.1", None)

    @pytest.mark.parametrize(
        ("code", "kind"),
        [
            (socket.EAI_NONAME, "nxdomain"),
            (socket.EAI_AGAIN, "servfail"),
            (socket.EAI_NODATA, "noanswer"),
            (socket.EAI_FAIL, "servfail"),
        ],
    )
    def test_system_resolver_errors_are_named_by_kind(self, net: Net, code: int, kind: str) -> None:
        def failing(f: Any, *args: Any) -> Deferred[Any]:
            return defer.fail(socket.gaierror(code, "modelled"))

        resolver = HostResolver(reactor=net.reactor, in_thread=failing)
        assert kind_of(net, resolver.query("h.example")) == kind

    def test_a_resolver_installed_on_the_reactor_is_asked_instead_of_the_system(
        self, net: Net
    ) -> None:
        """A script that installs its own resolver (Scrapy's CrawlerRunner leaves it in
        place, and the downloader connects through it) has the scheduler's names
        resolved by it too: here twisted.names on the web's DNS server, which the
        system resolver does not know (Scrapy's test_crawler_subprocess::
        TestCrawlerRunnerSubprocess::test_response_ip_address)."""
        (host,) = net.hosts("ok")
        (missing,) = net.hosts("nxdomain")
        installed = client.Resolver(servers=net.servers, reactor=net.reactor)
        previous = net.reactor.installResolver(installed)
        try:
            system_answer = "192.0.2.1"  # what a getaddrinfo that is not called gives
            resolver = HostResolver(
                reactor=net.reactor,
                timeout=2.0,
                in_thread=lambda f, *a: defer.succeed(system_answer),
            )
            assert net.wait(resolver.query(host)) == (net.ip(host), None)
            assert kind_of(net, resolver.query(missing)) == "nxdomain"
            for system in (IRLResolver(net.reactor, lambda: ()), ThreadedResolver(net.reactor)):
                net.reactor.installResolver(system)  # the system's: getaddrinfo is asked
                assert net.wait(resolver.query(host)) == (system_answer, None)
        finally:
            net.reactor.installResolver(previous)

    def test_the_system_resolver_times_out(self) -> None:
        clock = Clock()
        resolver = HostResolver(timeout=5.0, reactor=clock, in_thread=lambda f, *a: Deferred())
        out = fired(resolver.query("h.example"))
        clock.advance(4.99)
        assert out == []
        clock.advance(0.01)
        assert out[0].value.kind == "timeout" and isinstance(out[0].value, DNSLookupFailed)


class TestCache:
    def test_a_positive_answer_is_cached_and_asked_once(self, net: Net) -> None:
        cache, stats = real_cache(net)
        (host,) = net.hosts("ok")
        before = net.model.asked[host]
        assert net.wait(cache.resolve(host)) == net.ip(host)
        assert net.wait(cache.resolve(host)) == net.ip(host)
        assert net.model.asked[host] - before == 1
        assert stats == {"irl/dns/queries": 1, "irl/dns/hits": 1}
        assert cache.lookup(host, net.reactor.seconds()) == net.ip(host)

    def test_an_expired_entry_is_asked_again(self, net: Net) -> None:
        clock = Clock()
        cache, stats = real_cache(net, clock=clock)
        (host,) = net.hosts("ok")
        net.wait(cache.resolve(host))
        clock.advance(299.9)
        assert cache.lookup(host, clock.seconds()) == net.ip(host)
        net.wait(cache.resolve(host))
        assert stats["irl/dns/queries"] == 1
        clock.advance(0.1)  # the profile's TTL is 300 s
        assert cache.lookup(host, clock.seconds()) is None
        assert cache.stale(host) == net.ip(host)
        assert net.wait(cache.resolve(host)) == net.ip(host)
        assert stats["irl/dns/queries"] == 2

    @pytest.mark.parametrize(
        ("ttl", "lives"), [(5.0, 60.0), (1e9, 100.0), (None, 70.0), (80.0, 80.0)]
    )
    def test_ttls_are_clamped_and_the_system_resolver_gets_the_default(
        self, ttl: float | None, lives: float
    ) -> None:
        cache, _, clock, _ = scripted_cache(ttl=ttl, min_ttl=60, max_ttl=100, default_ttl=70)
        address = fired(cache.resolve("h.example"))[0]
        clock.advance(lives - 0.001)
        assert cache.lookup("h.example", clock.seconds()) == address
        clock.advance(0.001)
        assert cache.lookup("h.example", clock.seconds()) is None

    def test_a_negative_answer_is_cached_for_the_negative_ttl(self, net: Net) -> None:
        clock = Clock()
        cache, stats = real_cache(net, clock=clock, negative_ttl=50)
        (host,) = net.hosts("nxdomain")
        before = net.model.asked[host]
        assert kind_of(net, cache.resolve(host)) == "nxdomain"
        assert kind_of(net, cache.resolve(host)) == "nxdomain"  # from the cache
        assert net.model.asked[host] - before == 1  # NXDOMAIN is an answer: never retried
        assert stats == {"irl/dns/queries": 1, "irl/dns/failed/nxdomain": 1, "irl/dns/hits": 1}
        assert cache.stale(host) is None
        clock.advance(50)
        assert kind_of(net, cache.resolve(host)) == "nxdomain"
        assert net.model.asked[host] - before == 2

    def test_servfail_is_retried_with_backoff_then_fails(self, net: Net) -> None:
        cache, stats = real_cache(net, retries=2, retry_delay=0.05)
        (host,) = net.hosts("servfail")
        before, started = net.model.asked[host], time.monotonic()
        assert kind_of(net, cache.resolve(host)) == "servfail"
        assert time.monotonic() - started >= 0.05 + 0.1
        assert net.model.asked[host] - before == 3
        assert stats == {
            "irl/dns/queries": 3,
            "irl/dns/retries": 2,
            "irl/dns/failed/servfail": 1,
        }

    def test_a_timeout_is_retried_then_fails_as_timeout(self, net: Net) -> None:
        cache, stats = real_cache(net, timeout=0.2, retries=1, retry_delay=0.01)
        (host,) = net.hosts("timeout")
        before = net.model.asked[host]
        assert kind_of(net, cache.resolve(host)) == "timeout"
        assert net.model.asked[host] - before == 2
        assert stats["irl/dns/failed/timeout"] == 1

    def test_backoff_doubles_and_an_answer_after_a_retry_is_kept(self) -> None:
        script = {"h.example": ["servfail", "timeout", "192.0.2.1"]}
        cache, resolver, clock, stats = scripted_cache(script, retry_delay=2.0)
        out = fired(cache.resolve("h.example"))
        for step, asked in [(1.99, 1), (0.01, 2), (3.99, 2), (0.01, 3)]:
            clock.advance(step)
            assert resolver.asked["h.example"] == asked
        assert out == ["192.0.2.1"]
        assert stats == {"irl/dns/queries": 3, "irl/dns/retries": 2}

    def test_concurrent_callers_share_one_query(self, net: Net) -> None:
        cache, _ = real_cache(net)
        (host,) = net.hosts("slow")
        before = net.model.asked[host]
        first, cancelled, third = cache.resolve(host), cache.resolve(host), cache.resolve(host)
        cancelled.cancel()  # one caller gives up; the query goes on for the others
        assert isinstance(fired(cancelled)[0].value, CancelledError)
        assert net.wait(first) == net.wait(third) == net.ip(host)
        assert net.model.asked[host] - before == 1

    def test_concurrent_callers_share_a_failure(self, net: Net) -> None:
        cache, _ = real_cache(net, retries=0)
        (host,) = net.hosts("servfail")
        before = net.model.asked[host]
        first, second = cache.resolve(host), cache.resolve(host)
        assert kind_of(net, first) == kind_of(net, second) == "servfail"
        assert net.model.asked[host] - before == 1

    def test_stale_keeps_the_last_address_through_a_failure(self) -> None:
        cache, _, clock, _ = scripted_cache({"h.example": ["192.0.2.7", "servfail"]}, retries=0)
        assert fired(cache.resolve("h.example")) == ["192.0.2.7"]
        clock.advance(300)
        assert fired(cache.resolve("h.example"))[0].value.kind == "servfail"
        assert cache.lookup("h.example", clock.seconds()) is None
        assert cache.stale("h.example") == "192.0.2.7"

    def test_ip_literals_are_their_own_address_without_a_query(self) -> None:
        cache, resolver, clock, stats = scripted_cache()
        for literal in ("127.0.0.1", "::1"):
            assert fired(cache.resolve(literal)) == [literal]
            assert cache.lookup(literal, clock.seconds()) == cache.stale(literal) == literal
        assert not resolver.asked and not stats and len(cache) == 0

    def test_names_compare_without_case_or_final_dot(self, net: Net) -> None:
        cache, _ = real_cache(net)
        (host,) = net.hosts("ok")
        assert net.wait(cache.resolve(host.upper() + ".")) == net.ip(host)
        assert cache.lookup(host, net.reactor.seconds()) == net.ip(host)


class TestSpill:
    def test_ram_holds_at_most_n_entries_and_evicted_ones_come_back_from_disk(
        self, tmp_path: Path
    ) -> None:
        cache, resolver, clock, stats = scripted_cache(ram_entries=2, spill_batch=1)
        cache.open(tmp_path)
        hosts = [f"h{i}.example" for i in range(5)]
        addresses = [fired(cache.resolve(h))[0] for h in hosts]
        assert len(cache) == 2 and stats["irl/dns/spilled"] == 3
        assert [cache.lookup(h, clock.seconds()) for h in hosts] == addresses
        assert len(cache) == 2 and sum(resolver.asked.values()) == 5
        cache.close()

    def test_evicted_entries_reach_disk_in_batches(self, tmp_path: Path) -> None:
        cache, _, _, stats = scripted_cache(ram_entries=1, spill_batch=3)
        cache.open(tmp_path)
        for i in range(3):
            fired(cache.resolve(f"h{i}.example"))
        assert len(cache) == 3 and "irl/dns/spilled" not in stats  # 2 waiting for a batch
        fired(cache.resolve("h3.example"))
        assert len(cache) == 1 and stats["irl/dns/spilled"] == 3
        cache.close()

    def test_on_a_full_disk_a_spill_drops_its_entries_counted_and_answers_go_on(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A spill runs in the resolver's callback, which must not fail: the crawl's own
        stores stop it on a full disk (irlscrapy.scheduler.diskfull)."""
        batch = 200  # 12 KB of entries: more than the free part of the log's last page
        cache, _, _, stats = scripted_cache(ram_entries=1, spill_batch=batch)
        with small_tmpfs(tmp_path / "disk") as disk:
            cache.open(disk / "dns")
            fill(disk / "filler")
            hosts = [f"h{i}.example" for i in range(2 * batch + 1)]
            answers = [fired(cache.resolve(h)) for h in hosts]
            assert all(isinstance(answer[0], str) for answer in answers)
            assert stats["irl/dns/unsaved"] == 2 * batch and "irl/dns/spilled" not in stats
            cache.close()  # RAM's last entry is dropped too, and close does not fail
        assert stats["irl/dns/unsaved"] == 2 * batch + 1
        unsaved = [r for r in caplog.records if "irl/dns/unsaved" in r.getMessage()]
        assert len(unsaved) == 1 and "the disk is full" in unsaved[0].getMessage()

    def test_close_writes_everything_and_a_new_cache_reads_it_back(self, tmp_path: Path) -> None:
        script = {"gone.example": ["nxdomain"]}
        cache, _, clock, _ = scripted_cache(script, ram_entries=2, spill_batch=10)
        cache.open(tmp_path)
        hosts = [f"h{i}.example" for i in range(4)]
        addresses = [fired(cache.resolve(h))[0] for h in hosts]
        fired(cache.resolve("gone.example"))
        cache.close()
        assert cache.stale(hosts[-1]) == addresses[-1]  # closed: it goes on in RAM

        again, resolver, clock, stats = scripted_cache(ram_entries=2)
        again.open(tmp_path)
        assert [again.stale(h) for h in hosts] == addresses
        assert [again.lookup(h, clock.seconds()) for h in hosts] == addresses
        assert fired(again.resolve("gone.example"))[0].value.kind == "nxdomain"
        assert not resolver.asked and stats == {"irl/dns/hits": 1}
        again.close()

    def test_before_open_evicted_entries_are_forgotten_and_after_open_they_spill(
        self, tmp_path: Path
    ) -> None:
        cache, resolver, _, _ = scripted_cache(ram_entries=1, spill_batch=1)
        fired(cache.resolve("a.example"))
        fired(cache.resolve("b.example"))
        assert cache.stale("a.example") is None  # RAM only: a.example was dropped
        cache.open(tmp_path)
        fired(cache.resolve("c.example"))  # evicts b.example, to disk
        assert cache.stale("b.example") == resolver.addresses["b.example"]
        cache.close()

    def test_open_none_keeps_the_cache_in_ram(self) -> None:
        cache, _, _, _ = scripted_cache()
        cache.open(None)
        assert fired(cache.resolve("a.example")) == ["10.0.0.1"]
        cache.close()
        assert cache.path is None and cache.stale("a.example") == "10.0.0.1"

    def test_a_directory_of_another_format_is_refused_with_advice(self, tmp_path: Path) -> None:
        db = plyvel.DB(str(tmp_path / "cache"), create_if_missing=True)
        db.put(b"!format", b"9")
        db.close()
        cache, _, _, _ = scripted_cache()
        with pytest.raises(ConfigurationError, match=r"format b'9'.*only a cache: delete it"):
            cache.open(tmp_path)
        cache.open(tmp_path / "other")  # the failed open released everything
        cache.close()

    def test_a_directory_of_something_else_is_refused(self, tmp_path: Path) -> None:
        db = plyvel.DB(str(tmp_path / "cache"), create_if_missing=True)
        db.put(b"not-ours", b"x")
        db.close()
        with pytest.raises(ConfigurationError, match="holds DNS cache format None"):
            scripted_cache()[0].open(tmp_path)

    def test_two_caches_cannot_share_a_directory(self, tmp_path: Path) -> None:
        first = scripted_cache()[0]
        first.open(tmp_path)
        with pytest.raises(DirectoryLocked, match=r"DNS cache directory .* is locked by process"):
            scripted_cache()[0].open(tmp_path)
        first.close()


HOSTS = st.sampled_from(["a.example", "b.example", "c.example", "d.example", "e.example"])
OUTCOMES = st.sampled_from(["192.0.2.1", "192.0.2.2", "nxdomain", "servfail"])


class CacheAgainstADict(RuleBasedStateMachine):
    """resolve / time passing / close and reopen, checked against a plain dict."""

    RAM, BATCH, TTL, NEGATIVE = 2, 2, 300.0, 100.0

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.clock = Clock()
        self.model: dict[str, tuple[str | None, str | None, float]] = {}
        self.cache, self.resolver = self.new_cache()

    def new_cache(self) -> tuple[DNSCache, ScriptedResolver]:
        resolver = ScriptedResolver(ttl=self.TTL)
        cache = DNSCache(
            resolver,
            clock=self.clock,
            ram_entries=self.RAM,
            spill_batch=self.BATCH,
            retries=0,
            negative_ttl=self.NEGATIVE,
        )
        cache.open(self.dir)
        return cache, resolver

    @rule(host=HOSTS, outcome=OUTCOMES)
    def resolve(self, host: str, outcome: str) -> None:
        self.resolver.script[host] = [outcome]
        (result,) = fired(self.cache.resolve(host))
        now = self.clock.seconds()
        address, failure, expiry = self.model.get(host, (None, None, 0.0))
        if expiry <= now:  # the cache must have asked
            failure = None if outcome[0].isdigit() else outcome
            address = outcome if failure is None else address
            expiry = now + (self.TTL if failure is None else self.NEGATIVE)
            self.model[host] = (address, failure, expiry)
        assert result == address if failure is None else result.value.kind == failure

    @rule(seconds=st.sampled_from([1.0, 99.0, 100.0, 250.0, 300.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def close_and_reopen(self) -> None:
        self.cache.close()
        self.cache, self.resolver = self.new_cache()

    @invariant()
    def agrees_with_the_model(self) -> None:
        now = self.clock.seconds()
        for host, (address, failure, expiry) in self.model.items():
            assert self.cache.stale(host) == address
            fresh = address if failure is None and expiry > now else None
            assert self.cache.lookup(host, now) == fresh
        assert len(self.cache) <= self.RAM + self.BATCH - 1

    def teardown(self) -> None:
        self.cache.close()
        shutil.rmtree(self.dir)


TestCacheAgainstADict = CacheAgainstADict.TestCase
TestCacheAgainstADict.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)


class TestIRLResolver:
    def crawler(self, net: Net, **settings: Any) -> Any:
        return get_crawler(Spider, {"IRL_DNS_SERVERS": net.setting, **settings})

    def test_the_downloader_gets_the_address_the_workbench_grouped_under(self, net: Net) -> None:
        crawler = self.crawler(net, IRL_DNS_TTL_MIN=0, IRL_DNS_TTL_MAX=0.05)
        resolver = build_from_crawler(IRLResolver, crawler, reactor=net.reactor)
        cache = DNSCache.of(crawler)  # what the scheduler gets
        assert resolver.caches() == (cache,)
        (host,) = net.hosts("ok")
        before = net.model.asked[host]
        assert net.wait(cache.resolve(host)) == net.ip(host)
        net.sleep(0.1)
        assert cache.lookup(host, net.reactor.seconds()) is None  # expired
        assert net.wait(resolver.getHostByName(host)) == net.ip(host)  # stale, as grouped
        assert net.model.asked[host] - before == 1

    def test_hosts_the_workbench_never_asked_about_resolve_into_the_shared_cache(
        self, net: Net
    ) -> None:
        crawler = self.crawler(net)
        resolver = IRLResolver.from_crawler(crawler, net.reactor)
        (host,) = net.hosts("ok")
        assert net.wait(resolver.getHostByName(host)) == net.ip(host)
        assert DNSCache.of(crawler).lookup(host, net.reactor.seconds()) == net.ip(host)
        assert crawler.stats.get_value("irl/dns/queries") == 1

    def test_failures_reach_scrapy_as_dns_lookup_errors(self, net: Net) -> None:
        resolver = IRLResolver.from_crawler(self.crawler(net), net.reactor)
        with pytest.raises(DNSLookupError, match="nxdomain"):
            net.wait(resolver.getHostByName(net.hosts("nxdomain")[0]))

    def test_installed_on_a_reactor_it_answers_the_reactors_resolve(self, net: Net) -> None:
        resolver = IRLResolver.from_crawler(self.crawler(net), net.reactor)
        previous = net.reactor.resolver
        resolver.install_on_reactor()
        try:
            (host,) = net.hosts("ok")
            assert net.reactor.resolver is resolver
            assert net.wait(net.reactor.resolve(host)) == net.ip(host)
        finally:
            net.reactor.installResolver(previous)

    def test_built_with_the_crawler_process_it_reads_the_running_crawlers_caches(
        self, net: Net
    ) -> None:
        # Scrapy builds TWISTED_DNS_RESOLVER with the CrawlerProcess, not a Crawler
        # (CrawlerProcessBase._setup_reactor); runner.crawlers is public API.
        settings = {**get_reactor_settings(), "IRL_DNS_SERVERS": net.setting}
        runner_cls = CrawlerRunner if is_reactor_installed() else AsyncCrawlerRunner
        runner = runner_cls(settings)
        crawler = self.crawler(net)
        runner.crawlers.add(crawler)  # as runner.crawl() does
        resolver = build_from_crawler(IRLResolver, runner, reactor=net.reactor)
        scheduler_cache, own = resolver.caches()  # built on the resolver's reactor
        assert scheduler_cache is DNSCache.of(crawler) and own is DNSCache.of(runner)
        (host,) = net.hosts("ok")
        assert net.wait(scheduler_cache.resolve(host)) == net.ip(host)
        before = net.model.asked[host]
        assert net.wait(resolver.getHostByName(host)) == net.ip(host)
        assert net.model.asked[host] == before
        other = net.hosts("ok", 2)[1]  # misses resolve through the crawler's cache
        assert net.wait(resolver.getHostByName(other)) == net.ip(other)
        assert scheduler_cache.stale(other) == net.ip(other)


class TestAccessor:
    def test_one_cache_per_crawler_built_from_its_settings(self) -> None:
        first = get_crawler(Spider, {"IRL_DNS_CACHE_ENTRIES": 7, "IRL_DNS_SERVERS": "10.0.0.1"})
        second = get_crawler(Spider)
        attributes = dict(vars(first))
        assert DNSCache.of(first) is DNSCache.of(first)
        assert vars(first) == attributes  # nothing is set on the crawler
        assert DNSCache.of(second) is not DNSCache.of(first)
        assert DNSCache.of(first).ram_entries == 7
        assert DNSCache.of(first).resolver.servers == [("10.0.0.1", 53)]
        assert DNSCache.of(second).resolver.servers == []  # the system resolver

    def test_the_cache_goes_with_its_crawler(self) -> None:
        crawler = get_crawler(Spider)
        cache = weakref.ref(DNSCache.of(crawler))
        del crawler
        gc.collect()
        assert cache() is None
