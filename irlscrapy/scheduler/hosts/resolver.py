"""Asking DNS: one name -> one IPv4 address, from nameservers or the system resolver.

The DNS cache (:mod:`.dns`) asks through :class:`HostResolver` and stores what it
answers; this module stores nothing.

Theory of operation
-------------------
:class:`HostResolver` asks ONE question per call: the first A record of a name, with
its TTL. It asks the nameservers of ``IRL_DNS_SERVERS`` through twisted.names
(:mod:`.dnsclient`), else the *system* resolver: ``getaddrinfo`` on daemon threads
(:mod:`.lookupthreads`; not the reactor's thread pool, whose queue the process's exit
waits for), the call that Python, curl, browsers and Scrapy's own
CachingThreadedResolver make, so /etc/hosts, nsswitch, search domains and container or
VPN DNS behave as users expect. (twisted.names' ``createResolver`` reads resolv.conf
and /etc/hosts only, and would resolve differently from the rest of the machine.) A
resolver that a script or project installed on the reactor (``reactor.installResolver``
or ``installNameResolver`` before the crawl, as Scrapy's CrawlerRunner leaves it; or
its own ``TWISTED_DNS_RESOLVER``) is asked instead of the system, so the scheduler
groups a host under the address the downloader will connect to; Twisted's, Scrapy's and
irlscrapy's own resolvers are the system's. Neither gives a TTL: the cache keeps such
entries its ``default_ttl``.

Every failure is a :class:`DNSLookupFailed` whose ``kind`` is one of :data:`KINDS`,
translated at one boundary (:meth:`HostResolver._translate`). irlscrapy's own reactor
resolver, :class:`.dns.IRLResolver`, answers from the cache and resolves its misses
through HostResolver, so asking it would ask the cache back: it derives from
:class:`CacheResolver`, which this module knows without importing the cache.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Sequence
from typing import Any

from scrapy.resolver import CachingHostnameResolver
from twisted.internet import defer
from twisted.internet._resolver import GAIResolver
from twisted.internet.base import BlockingResolver, ThreadedResolver
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError
from twisted.names import dns, error
from twisted.python.failure import Failure

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError, IrlscrapyError
from irlscrapy.runtime.workers import installed_reactor
from irlscrapy.scheduler.hosts.dnsclient import PooledPortResolver
from irlscrapy.scheduler.hosts.lookupthreads import LookupThreads

__all__ = [
    "KINDS",
    "CacheResolver",
    "DNSLookupFailed",
    "HostResolver",
    "parse_servers",
]

logger = logging.getLogger(__name__)

#: The default of IRL_DNS_TIMEOUT (irlscrapy.defaults), for direct construction.
DEFAULT_TIMEOUT = defaults.BY_NAME["IRL_DNS_TIMEOUT"].default  # seconds per query

#: In the DNS cache's disk order (.dns encodes a kind by its place): DO NOT CHANGE.
KINDS = ("nxdomain", "servfail", "timeout", "noanswer")
_GAI_NODATA = {getattr(socket, n) for n in ("EAI_NODATA", "EAI_ADDRFAMILY") if hasattr(socket, n)}

Answer = tuple[str, float | None]  # (IPv4 address, TTL in seconds or None if unknown)
InThread = Callable[..., "Deferred[Any]"]


class DNSLookupFailed(IrlscrapyError, DNSLookupError):
    """A name has no usable address; ``kind`` is one of :data:`KINDS`.

    A DNSLookupError, so Scrapy's downloader and RetryMiddleware treat it as one.
    """

    def __init__(self, kind: str, host: str = "") -> None:
        assert kind in KINDS, kind
        super().__init__(kind, host)
        self.kind = kind
        self.host = host

    def __str__(self) -> str:
        return f"DNS lookup of {self.host!r} failed: {self.kind}"


def parse_servers(text: str) -> list[tuple[str, int]]:
    """``"ip[:port][,ip[:port]...]"`` (port 53 if left out; IPv6 as ``[::1]:53``) -> pairs.

    An empty string means no servers: the system resolver.
    """
    if not text.strip():
        return []
    servers = []
    for item in (part.strip() for part in text.split(",")):
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else "53" if bracket and not rest else "?"
        elif item.count(":") == 1:
            host, _, port = item.partition(":")
        else:
            host, port = item, "53"
        try:
            ipaddress.ip_address(host)
            number = int(port)
            if not 0 < number < 65536:
                raise ValueError(port)
        except ValueError:
            raise ConfigurationError(
                f"IRL_DNS_SERVERS={text!r}: {item!r} is not IP:PORT. Give comma-separated "
                "nameserver addresses such as 127.0.0.1:5353,[::1]:53 (IP addresses, not "
                "names: a name would need DNS itself), or leave it empty for the system "
                "resolver"
            ) from None
        servers.append((host, number))
    return servers


class CacheResolver:
    """The base of a reactor resolver that answers from the DNS cache
    (:class:`.dns.IRLResolver`): to :class:`HostResolver` it is the system's."""


def _installed_resolver(reactor: Any) -> Any:
    """The resolver (an IResolverSimple) a script or project installed on ``reactor``;
    None when it is the system's (Twisted's default, Scrapy's threaded and caching
    ones, irlscrapy's)."""
    resolver = getattr(reactor, "resolver", None)
    if resolver is None or isinstance(
        resolver, (CacheResolver, ThreadedResolver, BlockingResolver)
    ):
        return None
    names = getattr(reactor, "nameResolver", None)
    if isinstance(names, (GAIResolver, CachingHostnameResolver)):
        return None  # the reactor's resolver simplifies the system's name resolver
    return resolver


def _getaddrinfo(host: str) -> str:
    return str(socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])


class HostResolver:
    """One name -> one IPv4 address, from explicit nameservers or the system resolver.

    :meth:`query` asks once and fails only with :class:`DNSLookupFailed`.
    ``in_thread(f, *args) -> Deferred`` runs getaddrinfo (default: a
    :class:`~.lookupthreads.LookupThreads`, emptied by :meth:`close`).
    """

    def __init__(
        self,
        servers: Sequence[tuple[str, int]] = (),
        timeout: float = DEFAULT_TIMEOUT,
        reactor: Any = None,
        in_thread: InThread | None = None,
    ) -> None:
        self.servers = list(servers)
        self.timeout = timeout
        self._reactor = reactor  # None: the global reactor, imported when first needed
        self._in_thread = in_thread
        self._client: Any = None
        self._threads: LookupThreads | None = None
        self._unexpected: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any = None) -> HostResolver:
        servers = parse_servers(crawler.settings.get("IRL_DNS_SERVERS") or "")
        return cls(servers, defaults.get(crawler.settings, "IRL_DNS_TIMEOUT"), reactor)

    @property
    def reactor(self) -> Any:
        if self._reactor is None:
            self._reactor = installed_reactor()
        return self._reactor

    def query(self, host: str) -> Deferred[Answer]:
        if self.servers:
            return self._ask_servers(host)
        installed = _installed_resolver(self.reactor)
        if installed is not None:
            return self._in_time(host, installed.getHostByName(host, (round(self.timeout),)))
        in_thread = self._in_thread or self._pool
        return self._in_time(host, in_thread(_getaddrinfo, host))

    def _ask_servers(self, host: str) -> Deferred[Answer]:
        if self._client is None:
            self._client = PooledPortResolver(servers=self.servers, reactor=self.reactor)
        try:
            d: Deferred[Any] = self._client.lookupAddress(host, timeout=(self.timeout,))
        except (UnicodeError, ValueError):
            # twisted.names encodes the name at once, and raises for one that cannot
            # exist (a label empty or over 63 characters): no name, no query
            return defer.fail(DNSLookupFailed("nxdomain", host))
        return d.addCallbacks(
            self._first_a, self._translate, callbackArgs=(host,), errbackArgs=(host,)
        )

    def close(self) -> None:
        """Close the nameserver client's UDP ports and drop the system lookups not
        started (a later query opens new ones)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._threads is not None:
            self._threads.close()
            self._threads = None

    def _first_a(self, result: Any, host: str) -> Answer:
        for rr in result[0]:
            if rr.type == dns.A:
                return rr.payload.dottedQuad(), float(rr.ttl)
        raise DNSLookupFailed("noanswer", host)

    def _translate(self, failure: Failure, host: str) -> Failure:
        """The one boundary: twisted.names and getaddrinfo errors -> DNSLookupFailed."""
        if failure.check(DNSLookupFailed):
            return failure
        code = getattr(failure.value, "errno", None) if failure.check(socket.gaierror) else None
        if failure.check(error.DNSNameError, DNSLookupError) or code == socket.EAI_NONAME:
            # DNSLookupError: an installed resolver found no address
            return Failure(DNSLookupFailed("nxdomain", host))
        if code is not None and code in _GAI_NODATA:
            return Failure(DNSLookupFailed("noanswer", host))
        if failure.check(defer.TimeoutError, error.DNSQueryTimeoutError):
            return Failure(DNSLookupFailed("timeout", host))
        what = type(failure.value).__name__  # EAI_AGAIN, SERVFAIL, REFUSED...: servfail
        if not failure.check(error.DomainError, socket.gaierror) and what not in self._unexpected:
            self._unexpected.add(what)  # not a DNS answer: logged once per type
            logger.warning("DNS lookup of %s: unexpected %s", host, failure.getErrorMessage())
        return Failure(DNSLookupFailed("servfail", host))

    def _in_time(self, host: str, asked: Deferred[str]) -> Deferred[Answer]:
        """The address ``asked`` gives, within the timeout, without a TTL."""
        result: Deferred[Answer] = Deferred()

        def timed_out() -> None:
            if not result.called:
                result.errback(DNSLookupFailed("timeout", host))

        def done(outcome: Any) -> None:
            if timer.active():
                timer.cancel()
            if result.called:
                return  # timed out first; the thread's answer comes too late
            if isinstance(outcome, Failure):
                result.errback(self._translate(outcome, host))
            else:
                result.callback((outcome, None))

        timer = self.reactor.callLater(self.timeout, timed_out)
        asked.addBoth(done)
        return result

    def _pool(self, f: Callable[..., Any], *args: Any) -> Deferred[Any]:
        if self._threads is None:
            self._threads = LookupThreads(self.reactor)
        return self._threads(f, *args)
