"""The in-vitro DNS server on a private reactor, and stand-ins for the DNS tests.

The reactor is an AsyncioSelectorReactor (Scrapy's default) on an event loop of its own,
never installed as the global reactor: installing one would change how every later
test's ``get_crawler`` builds its crawler. Tests spin it with :meth:`Net.wait`.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, TypeVar

from scrapy.utils.reactor import is_reactor_installed
from twisted.internet import defer
from twisted.internet.asyncioreactor import AsyncioSelectorReactor
from twisted.internet.defer import Deferred
from twisted.names import dns

from irlscrapy.invitro.dnsserver import InVitroResolver, QuietServerFactory
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.scheduler.hosts.resolver import Answer, DNSLookupFailed, HostResolver

SEED = 0
LOOPBACK = "127.0.0.1"
T = TypeVar("T")


class CountingResolver(InVitroResolver):
    """The in-vitro model, counting the queries that reach the server, per name."""

    def __init__(self, web: InVitroWeb, clock: Any) -> None:
        super().__init__(web, clock)
        self.asked: Counter[str] = Counter()

    def _lookup(self, name: bytes, cls: int, type: int, timeout: Any) -> Deferred[Any]:
        if type == dns.A:
            self.asked[name.decode()] += 1
        return super()._lookup(name, cls, type, timeout)


class Net:
    """A private reactor with the tiny web's DNS server listening on 127.0.0.1:<port>."""

    def __init__(self) -> None:
        self.global_reactor_before = is_reactor_installed()
        self.loop = asyncio.new_event_loop()
        self.reactor: Any = AsyncioSelectorReactor(self.loop)
        self.web = InVitroWeb(TINY, SEED)
        self.model = CountingResolver(self.web, self.reactor)
        # irlscrapy.invitro.dnsserver.dns_protocol() builds the same stack, but its
        # protocol gets no reactor, so it would import (and install) the global one.
        factory = QuietServerFactory(clients=[self.model])
        factory.noisy = False
        protocol = dns.DNSDatagramProtocol(factory, reactor=self.reactor)
        self.port = self.reactor.listenUDP(0, protocol, interface=LOOPBACK)
        self.servers = [(LOOPBACK, self.port.getHost().port)]
        self.setting = f"{LOOPBACK}:{self.port.getHost().port}"

    def wait(self, d: Deferred[T], timeout: float = 10.0) -> T:
        """Run the reactor until ``d`` fires; its result, or its failure raised."""
        future = d.asFuture(self.loop)
        result: T = self.loop.run_until_complete(asyncio.wait_for(future, timeout))
        return result

    def sleep(self, seconds: float) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def resolver(self, timeout: float = 2.0) -> HostResolver:
        return HostResolver(self.servers, timeout, self.reactor)

    def hosts(self, kind: str, n: int = 1) -> list[str]:
        """``n`` host names of the web whose ``dns`` facet is ``kind``."""
        found = []
        for pid in range(self.web.total_plds):
            for k in range(self.web.hosts_in_pld(pid) or 3):
                host = self.web.host(self.web.host_name(pid, k))
                if host is not None and host.dns == kind and host.name not in found:
                    found.append(host.name)
                    if len(found) == n:
                        return found
        raise AssertionError(f"only {len(found)} {kind} hosts in tiny, {n} wanted")

    def ip(self, host: str) -> str:
        modelled = self.web.host(host)
        assert modelled is not None
        return modelled.ip

    def close(self) -> None:
        self.port.stopListening()
        for selectable in self.reactor.removeAll():  # query ports a failed test left open
            selectable.stopListening()
        self.sleep(0.05)  # their connectionLost runs on the next turns
        for call in self.reactor.getDelayedCalls():
            call.cancel()
        self.loop.close()
        if is_reactor_installed() and not self.global_reactor_before:
            raise AssertionError(
                "a DNS test installed the global reactor (a cache built without the "
                "private one?): later tests would build their crawlers differently"
            )


class Stats(Counter[str]):
    """The ``inc_value`` part of Scrapy's StatsCollector."""

    __hash__ = object.__hash__  # one collector, one object (troubles.tally keys by it)

    def inc_value(self, key: str, count: int = 1) -> None:
        self[key] += count


class ScriptedResolver(HostResolver):
    """Answers each query with the host's next scripted outcome: an address or a kind.

    Past its script (or without one) a host answers its own 10.0.x.y with ``ttl``.
    ``asked`` counts the queries per host.
    """

    def __init__(
        self, script: dict[str, list[str]] | None = None, ttl: float | None = 300.0
    ) -> None:
        super().__init__()
        self.ttl = ttl
        self.script = {host: list(seq) for host, seq in (script or {}).items()}
        self.asked: Counter[str] = Counter()
        self.addresses: dict[str, str] = {}

    def query(self, host: str) -> Deferred[Answer]:
        self.asked[host] += 1
        n = len(self.addresses)
        own = self.addresses.setdefault(host, f"10.0.{n // 250}.{n % 250 + 1}")
        seq = self.script.get(host)
        outcome = seq.pop(0) if seq else own
        if outcome in ("nxdomain", "servfail", "timeout", "noanswer"):
            return defer.fail(DNSLookupFailed(outcome, host))
        return defer.succeed((outcome, self.ttl))
