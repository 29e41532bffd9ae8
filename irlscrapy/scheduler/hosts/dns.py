"""DNS, one truth: the host -> address cache shared by the workbench and the downloader.

The cache asks through :class:`.resolver.HostResolver` (nameservers or the system's
getaddrinfo, failures named by :data:`.resolver.KINDS`); this module holds what it
answers, on disk too, and :class:`IRLResolver`, the downloader's reader of the cache.

Theory of operation
-------------------
:class:`DNSCache` maps a host to an entry ``(address, failure, expiry)``: ``failure`` is
None or one of :data:`.resolver.KINDS`, ``address`` the last address ever known (kept
when a later lookup fails). :meth:`DNSCache.resolve` answers fresh entries at once;
otherwise it sends one query for the host, which every concurrent caller shares.
NXDOMAIN and NODATA are answers and are not retried; SERVFAIL and timeouts are retried
after ``retry_delay * 2**attempt`` seconds, up to ``retries`` times. TTLs are clamped to
[min_ttl, max_ttl]; answers without a TTL live ``default_ttl``; failures are cached
``negative_ttl`` seconds.

RAM holds an LRU of at most ``ram_entries`` entries. Once :meth:`DNSCache.open` has
given it a directory, evicted entries go to a spill buffer written to LevelDB every
``spill_batch`` entries; a RAM miss looks in the buffer, then on disk, and brings the
entry back into RAM. Before ``open`` (Scrapy builds the resolver before the scheduler
opens) and after ``close`` the cache works in RAM only and forgets what it evicts.

:class:`IRLResolver` is Scrapy's ``TWISTED_DNS_RESOLVER``: the downloader connects to
``stale(host)``, the address the workbench grouped the host under, and resolves through
the same cache only for hosts the workbench never asked about. Scrapy builds it with
the CrawlerProcess, not a Crawler (``CrawlerProcessBase._setup_reactor``), so it reads
the caches of the running crawlers (``process.crawlers``, public API) before its own.
Twisted's HostnameEndpoint reports every failure to the downloader as "no results for
hostname lookup"; the kind is in the stats (``irl/dns/failed/<kind>``).

Invariants:
*A host has at most one query in flight.*
*RAM holds at most ram_entries entries, plus fewer than spill_batch waiting for disk.*
*A host's address changes only through resolve(): the downloader never refreshes an
entry it finds, so it connects where the workbench grouped the host.*
*A host is in at most one of RAM and the spill buffer; RAM is newer than the buffer,
the buffer newer than disk.*

Files under the directory given to open() (DO NOT CHANGE: format version 1)::

    LOCK       exclusive flock holding the owner's pid (irlscrapy.storage.dirlock)
    cache/     LevelDB:
                 b"!format"     -> b"1"
                 b"h" host      -> entry         host: lower-case name, UTF-8
    entry   := kind: u8, expiry: f64be, address: ASCII (empty when never known)
    kind    := 0 address | 1 nxdomain | 2 servfail | 3 timeout | 4 noanswer
    expiry  := the clock's seconds (reactor.seconds() is POSIX time, so entries
               outlive the process)

Crash semantics: the directory is a cache. A kill -9 loses the entries in RAM and in
the spill buffer since the last close(); close() writes both (one LevelDB batch each,
on the calling thread). Losing or deleting the directory loses nothing but queries.
"""

from __future__ import annotations

import ipaddress
import logging
import struct
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import plyvel
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IResolverSimple
from twisted.python.failure import Failure
from zope.interface import implementer

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError, disk_full
from irlscrapy.runtime.crawlservices import shared
from irlscrapy.runtime.troubles import tally
from irlscrapy.scheduler.hosts.resolver import (
    KINDS,
    Answer,
    CacheResolver,
    DNSLookupFailed,
    HostResolver,
)
from irlscrapy.storage.cachedb import CacheStore

__all__ = [
    "DNSCache",
    "IRLResolver",
    "is_ip",
]

logger = logging.getLogger(__name__)

#: The defaults of the DNS cache's settings (irlscrapy.defaults), for direct construction.
DEFAULT_RETRIES = defaults.BY_NAME["IRL_DNS_RETRIES"].default
#: seconds before the first retry; doubles each time
DEFAULT_RETRY_DELAY = defaults.BY_NAME["IRL_DNS_RETRY_DELAY"].default
DEFAULT_MIN_TTL = defaults.BY_NAME["IRL_DNS_TTL_MIN"].default
DEFAULT_MAX_TTL = defaults.BY_NAME["IRL_DNS_TTL_MAX"].default
#: for the system resolver, which gives no TTL
DEFAULT_TTL = defaults.BY_NAME["IRL_DNS_TTL_DEFAULT"].default
#: RFC 2308's ceiling for caching server failures
DEFAULT_NEGATIVE_TTL = defaults.BY_NAME["IRL_DNS_NEGATIVE_TTL"].default
#: About 250 bytes each in RAM (6 MB); the rest is a LevelDB read away (microseconds).
DEFAULT_RAM_ENTRIES = defaults.BY_NAME["IRL_DNS_CACHE_ENTRIES"].default
DEFAULT_SPILL_BATCH = 1_000

_RETRIED = frozenset({"servfail", "timeout"})
FORMAT_VERSION = b"1"  # DO NOT CHANGE the constants below: they are the disk format
_HOST_PREFIX = b"h"
_ENTRY = struct.Struct(">Bd")
_CODES = (None, *KINDS)  # KINDS are in disk order


class Stats(Protocol):
    def inc_value(self, key: str, count: int = 1) -> None: ...


class _Entry(NamedTuple):
    address: str | None
    failure: str | None
    expiry: float


def _encode(e: _Entry) -> bytes:
    return _ENTRY.pack(_CODES.index(e.failure), e.expiry) + (e.address or "").encode("ascii")


def _decode(raw: bytes) -> _Entry:
    code, expiry = _ENTRY.unpack_from(raw)
    return _Entry(raw[_ENTRY.size :].decode("ascii") or None, _CODES[code], expiry)


def is_ip(host: str) -> bool:
    if ":" not in host and not host.replace(".", "").isdigit():
        return False  # a name (an IPv6 literal has a colon, an IPv4 one only digits and dots)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _norm(host: str) -> str:
    return host.lower().rstrip(".")


class DNSCache:
    """host -> address, shared by the workbench and the downloader (see the module doc)."""

    def __init__(
        self,
        resolver: HostResolver,
        *,
        clock: Any = None,
        stats: Stats | None = None,
        ram_entries: int = DEFAULT_RAM_ENTRIES,
        min_ttl: float = DEFAULT_MIN_TTL,
        max_ttl: float = DEFAULT_MAX_TTL,
        default_ttl: float = DEFAULT_TTL,
        negative_ttl: float = DEFAULT_NEGATIVE_TTL,
        retries: int = DEFAULT_RETRIES,
        retry_delay: float = DEFAULT_RETRY_DELAY,
        spill_batch: int = DEFAULT_SPILL_BATCH,
    ) -> None:
        if ram_entries < 1 or spill_batch < 1 or retries < 0 or not 0 <= min_ttl <= max_ttl:
            raise ConfigurationError(
                f"DNS cache: need IRL_DNS_CACHE_ENTRIES >= 1 (got {ram_entries}), "
                f"IRL_DNS_RETRIES >= 0 (got {retries}) and 0 <= IRL_DNS_TTL_MIN <= "
                f"IRL_DNS_TTL_MAX (got {min_ttl}, {max_ttl})"
            )
        self.resolver = resolver
        self._clock = clock  # an IReactorTime; None: the resolver's reactor
        self.stats = stats
        self.ram_entries = ram_entries
        self.min_ttl, self.max_ttl, self.default_ttl = min_ttl, max_ttl, default_ttl
        self.negative_ttl = negative_ttl
        self.retries, self.retry_delay = retries, retry_delay
        self.spill_batch = spill_batch
        self.path: Path | None = None
        # Entries are kept encoded (_encode), in RAM as on disk: 60 bytes each, and
        # invisible to the cyclic GC (a tuple subclass is tracked, bytes are not).
        self._ram: OrderedDict[str, bytes] = OrderedDict()
        self._pending: dict[str, bytes] = {}  # evicted, waiting for the next disk batch
        self._inflight: dict[str, list[Deferred[str]]] = {}
        self._store: CacheStore | None = None
        self._db: Any = None
        self._hosts: Any = None  # the b"h" prefixed view of _db

    @classmethod
    def of(cls, crawler: Any, reactor: Any = None) -> DNSCache:
        """The crawler's one DNSCache (:mod:`irlscrapy.runtime.crawlservices`), built from
        its settings on first use; ``reactor`` is used only by the call that builds it (None: the
        global reactor)."""
        return shared(crawler, cls, lambda: cls.from_crawler(crawler, reactor))

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any = None) -> DNSCache:
        s = crawler.settings
        return cls(
            HostResolver.from_crawler(crawler, reactor),
            stats=_CrawlerStats(crawler),
            ram_entries=defaults.get(s, "IRL_DNS_CACHE_ENTRIES"),
            min_ttl=defaults.get(s, "IRL_DNS_TTL_MIN"),
            max_ttl=defaults.get(s, "IRL_DNS_TTL_MAX"),
            default_ttl=defaults.get(s, "IRL_DNS_TTL_DEFAULT"),
            negative_ttl=defaults.get(s, "IRL_DNS_NEGATIVE_TTL"),
            retries=defaults.get(s, "IRL_DNS_RETRIES"),
            retry_delay=defaults.get(s, "IRL_DNS_RETRY_DELAY"),
        )

    @property
    def clock(self) -> Any:
        return self.resolver.reactor if self._clock is None else self._clock

    def __len__(self) -> int:
        """Entries in RAM, spill buffer included (not those only on disk)."""
        return len(self._ram) + len(self._pending)

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, path: Path | str | None) -> None:
        """Spill evicted entries under ``path`` from now on; None keeps the cache in RAM."""
        assert self._db is None, "DNSCache.open() called twice"
        if path is None:
            return
        self.path = Path(path)
        self._store = CacheStore(self.path, FORMAT_VERSION, "DNS cache", _HOST_PREFIX)
        self._store.open()
        self._db, self._hosts = self._store.db, self._store.hosts

    def close(self) -> None:
        """Write RAM and the spill buffer to disk, close it; the cache goes on in RAM."""
        if self._hosts is not None:
            self._write(self._ram, count=False)
            self._write(self._pending, count=True)
        if self._store is not None:
            self._store.close()
            self._store = None
        self._db = self._hosts = None
        self.resolver.close()

    # -- reading -------------------------------------------------------------------------
    def lookup(self, host: str, now: float) -> str | None:
        """The address of ``host`` if a positive entry is fresh at ``now``."""
        if is_ip(host):
            return host
        e = self._get(_norm(host))
        return e.address if e is not None and e.failure is None and e.expiry > now else None

    def stale(self, host: str) -> str | None:
        """The last address known for ``host``, however old, even after a failure."""
        if is_ip(host):
            return host
        e = self._get(_norm(host))
        return e.address if e is not None else None

    def resolve(self, host: str) -> Deferred[str]:
        """The address of ``host``: at once if cached, else after one shared query.

        Fails with :class:`DNSLookupFailed` (also from the negative cache).
        """
        if is_ip(host):
            return defer.succeed(host)
        host = _norm(host)
        e = self._get(host)
        if e is not None and e.expiry > self.clock.seconds():
            self._inc("irl/dns/hits")
            if e.failure is None:
                return defer.succeed(e.address or "")
            return defer.fail(DNSLookupFailed(e.failure, host))
        d: Deferred[str] = Deferred()
        if host in self._inflight:
            self._inflight[host].append(d)
        else:
            self._inflight[host] = [d]
            self._ask(host, 0)
        return d

    # -- querying ------------------------------------------------------------------------
    def _ask(self, host: str, attempt: int) -> None:
        self._inc("irl/dns/queries")
        d = self.resolver.query(host)
        d.addCallbacks(
            self._answered, self._failed, callbackArgs=(host,), errbackArgs=(host, attempt)
        )

    def _answered(self, answer: Answer, host: str) -> None:
        address, ttl = answer
        ttl = self.default_ttl if ttl is None else min(max(ttl, self.min_ttl), self.max_ttl)
        try:
            self._put(host, _Entry(address, None, self.clock.seconds() + ttl))
        finally:  # even if the disk fails, no caller waits forever
            self._settle(host, address, None)

    def _failed(self, failure: Failure, host: str, attempt: int) -> None:
        kind = failure.value.kind if isinstance(failure.value, DNSLookupFailed) else "servfail"
        if kind in _RETRIED and attempt < self.retries:
            self._inc("irl/dns/retries")
            self.clock.callLater(self.retry_delay * 2**attempt, self._ask, host, attempt + 1)
            return
        self._inc(f"irl/dns/failed/{kind}")
        logger.debug("DNS lookup of %s failed: %s", host, kind)
        try:
            known = self._get(host)
            expiry = self.clock.seconds() + self.negative_ttl
            self._put(host, _Entry(known.address if known else None, kind, expiry))
        finally:
            self._settle(host, None, kind)

    def _settle(self, host: str, address: str | None, kind: str | None) -> None:
        for d in self._inflight.pop(host):
            if d.called:
                continue  # the caller cancelled; the query was shared, so it went on
            if kind is None:
                d.callback(address or "")
            else:
                d.errback(DNSLookupFailed(kind, host))

    # -- storage -------------------------------------------------------------------------
    def _get(self, host: str) -> _Entry | None:
        raw = self._ram.get(host)
        if raw is not None:
            self._ram.move_to_end(host)
            return _decode(raw)
        raw = self._pending.pop(host, None)
        if raw is None and self._hosts is not None:
            raw = self._hosts.get(host.encode())
        if raw is None:
            return None
        self._put_raw(host, raw)
        return _decode(raw)

    def _put(self, host: str, e: _Entry) -> None:
        self._put_raw(host, _encode(e))

    def _put_raw(self, host: str, raw: bytes) -> None:
        self._ram[host] = raw
        self._ram.move_to_end(host)
        while len(self._ram) > self.ram_entries:
            old_host, old = self._ram.popitem(last=False)
            if self._hosts is not None:
                self._pending[old_host] = old
        if len(self._pending) >= self.spill_batch:
            self._write(self._pending, count=True)

    def _write(self, entries: dict[str, bytes], count: bool) -> None:
        """Write ``entries`` to disk. On a full disk they are dropped instead (a cache:
        each costs one lookup more), with a warning: the crawl's own stores stop it
        there (:mod:`irlscrapy.scheduler.diskfull`), and the resolver's callbacks that
        spill must not fail."""
        try:
            with self._hosts.write_batch() as batch:
                for host, raw in entries.items():
                    batch.put(host.encode(), raw)
        except plyvel.IOError as exc:
            if not disk_full(exc):
                raise
            if self.stats is not None:
                tally(
                    logger,
                    self.stats,
                    "irl/dns/unsaved",
                    "the DNS cache dropped %d entries it could not write to %s: the disk "
                    "is full (%s)",
                    len(entries),
                    self.path,
                    exc,
                    count=len(entries),
                    level=logging.WARNING,
                )
        else:
            if count and entries:
                self._inc("irl/dns/spilled", len(entries))
        if entries is self._pending:
            self._pending.clear()

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


class _CrawlerStats:
    """``crawler.stats`` when it exists (the cache may be built before it; weak: no cycle)."""

    def __init__(self, crawler: Any) -> None:
        self._crawler = weakref.ref(crawler)

    def inc_value(self, key: str, count: int = 1) -> None:
        stats = getattr(self._crawler(), "stats", None)
        if stats is not None:
            stats.inc_value(key, count)


@implementer(IResolverSimple)
class IRLResolver(CacheResolver):
    """``TWISTED_DNS_RESOLVER``: the downloader connects where the workbench grouped a host.

    ``caches()`` lists the caches to read, in order; misses resolve through the first.
    """

    def __init__(self, reactor: Any, caches: Callable[[], Sequence[DNSCache]]) -> None:
        self.reactor = reactor
        self.caches = caches

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> IRLResolver:
        own = DNSCache.of(crawler, reactor)
        if not hasattr(crawler, "crawlers"):  # a Crawler
            return cls(reactor, lambda: (own,))
        # A CrawlerProcess, as Scrapy passes it: its running crawlers' caches first.
        return cls(reactor, lambda: (*(DNSCache.of(c, reactor) for c in crawler.crawlers), own))

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        """``timeout`` is ignored: IRL_DNS_TIMEOUT and IRL_DNS_RETRIES apply."""
        caches = self.caches()
        for cache in caches:
            address = cache.stale(name)
            if address is not None:
                return defer.succeed(address)
        return caches[0].resolve(name)
