"""The in-vitro web's DNS server: twisted.names over UDP on loopback.

Every host of the web resolves to one address in 127.0.0.0/8 (:attr:`Host.ip`), so a
misconfigured crawl that connects to what it resolved can never leave the machine.
What each host's DNS does is fixed by its ``dns`` facet:

    ok        one A record, TTL from the profile; AAAA and other types: no data
    nxdomain  NXDOMAIN (also every name that is not in the web)
    servfail  SERVFAIL
    timeout   never answered: the client's own timeout decides
    slow      answered after the profile's dns_slow_delay seconds
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.names import common, dns, error, server

from irlscrapy.invitro.web import InVitroWeb


class ModelledServerFailure(Exception):
    """Raised for a host whose DNS fails: not a DomainError, so the server says SERVFAIL."""


class InVitroResolver(common.ResolverBase):
    """A twisted.names resolver that answers from the web's model."""

    def __init__(self, web: InVitroWeb, clock: IReactorTime) -> None:
        super().__init__()
        self.web = web
        self.clock = clock

    def _lookup(self, name: bytes, cls: int, type: int, timeout: Any) -> defer.Deferred[Any]:
        text = name.decode("ascii", "replace")
        host = self.web.host(text)
        if host is None or host.dns == "nxdomain":
            return defer.fail(error.DomainError(text))
        if host.dns == "servfail":
            return defer.fail(ModelledServerFailure(text))
        if host.dns == "timeout":
            return defer.Deferred()  # never fires; dropped with the query
        ttl = self.web.profile.dns_ttl
        answers: list[dns.RRHeader] = []
        if type in (dns.A, dns.ALL_RECORDS) and cls == dns.IN:
            record: Any = dns.Record_A(host.ip, ttl)  # an IEncodableRecord (zope interface)
            answers.append(dns.RRHeader(name, dns.A, dns.IN, ttl, record))
        result: tuple[list[dns.RRHeader], list[dns.RRHeader], list[dns.RRHeader]] = (
            answers,
            [],
            [],
        )
        if host.dns == "slow":
            return task.deferLater(self.clock, self.web.profile.dns_slow_delay, lambda: result)
        return defer.succeed(result)


class QuietServerFactory(server.DNSServerFactory):
    """Answers SERVFAIL for a modelled failure without logging it as an unhandled error."""

    def gotResolverError(self, failure: Any, protocol: Any, message: Any, address: Any) -> None:
        if failure.check(ModelledServerFailure):
            response = self._responseFromMessage(message=message, rCode=dns.ESERVER)
            self.sendReply(protocol, response, address)
            return
        super().gotResolverError(failure, protocol, message, address)


def dns_protocol(web: InVitroWeb, clock: IReactorTime) -> dns.DNSDatagramProtocol:
    """A UDP protocol to pass to ``reactor.listenUDP``."""
    factory = QuietServerFactory(clients=[InVitroResolver(web, clock)])
    factory.noisy = False
    return dns.DNSDatagramProtocol(factory)
