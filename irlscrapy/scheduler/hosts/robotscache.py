"""The robots cache: every host's robots.txt outcome on disk, little of it in RAM.

Theory of operation
-------------------
A host's *record* says what its robots.txt answered and until when that holds. Records
live in LevelDB; RAM holds two LRUs:

- the records of the ``ram_hosts`` hosts used last, without their bodies: host -> the
  record's head (one bytes object of 10 or 26 bytes, which the cyclic GC does not track;
  a tuple of a float, two ints and a digest costs 3x the RAM);
- parsed rules by body digest (``ram_bodies`` of them, of bodies of ``ram_bytes`` in
  all: a parsed robots.txt takes about 8 times its body's bytes, and a body may be
  500 KiB): hosts with the same robots.txt share one parse (many sites serve a stock
  robots.txt, and a parsed robots.txt is dozens of objects). A record whose rules were
  evicted is parsed again from its body on disk, unless the body is over
  :data:`BIG_BODY`: parsing one holds a thread 50 to 250 ms, so the fetch of a big
  robots.txt parses it on a worker thread (:mod:`irlscrapy.scheduler.robotsfetch`) and
  a big body RAM let go of is fetched again rather than parsed on the reactor's.

So RAM does not grow with the hosts met: at IRLbot's 117 million hosts the records are
on disk (LevelDB's own caches are bounded too: its block cache and write buffer). A
host new to the crawl is looked up several times before its robots.txt answers (each
of its URLs admitted meanwhile asks): LevelDB is asked once, and the host remembered
as *absent* (a set of at most ``ram_hosts`` hosts, emptied when full) until it is
learned.

What an answer does (:meth:`RobotsCache.learn`; outcomes from
:func:`irlscrapy.scheduler.hosts.robots.outcome_of`):

- parsed or unavailable: the rules hold for ``ttl`` seconds (``IRL_ROBOTS_TTL``); after
  that, robots.txt is fetched again before the host's next URL;
- unreachable (5xx, no answer): the first ``retries - 1`` times in a row, the rules are
  unknown: the host's URLs wait, and robots.txt is fetched again after
  ``retry_delay * 2**(failures - 1)`` seconds. From the ``retries``-th time on, the rules
  are "disallow all" for ``ttl`` (the host's URLs are dropped); a later answer resets
  the count.

Invariants:
*RAM holds at most ram_hosts records, and at most ram_bodies parsed rules of at most
ram_bytes of bodies (one body over ram_bytes is held alone).*
*A host remembered absent has no record, in RAM or on disk.*
*lookup() never parses a body over BIG_BODY.*
*lookup() answers what the last learn() for the host stored, also after a restart, until
RAM lets go of the rules of a body over BIG_BODY: then the host's record is forgotten (on
disk too), and lookup() answers (None, 0.0) until the next learn() for the host.* So a
host's lookup never turns from None to rules but by a learn() for it, even when another
host with the same body brings its rules back to RAM: the frontier drops a host's
disallowed URLs when it learns its rules, and at admission only while they are known
(:mod:`irlscrapy.scheduler.stages`).

Files under the directory given to open() (DO NOT CHANGE: format version 1)::

    LOCK        exclusive flock holding the owner's pid (irlscrapy.storage.dirlock)
    cache/      LevelDB:
                  b"!format"     -> b"1"
                  b"h" host      -> record          host: the workbench's host key, UTF-8
    record  := head, body
    head    := refetch_at: f64be, outcome: u8, failures: u8, digest
    refetch_at  POSIX seconds after which robots.txt must be fetched again
    outcome     0 parsed | 1 unavailable | 2 unreachable
    failures    unreachable answers in a row (0 after any answer)
    digest      BLAKE2b-128 of the body (parsed only; else empty)
    body        the first PARSE_LIMIT bytes of the robots.txt (parsed only)

Crash semantics: every learn() is one LevelDB write, handed to the OS before it returns
(a kill -9 loses nothing learned; a power loss may lose the last writes: robots.txt is
then fetched again).
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from pathlib import Path
from typing import Any

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.hosts.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    PARSE_LIMIT,
    PARSED,
    UNAVAILABLE,
    UNREACHABLE,
    RobotsRules,
    outcome_of,
    parse,
)
from irlscrapy.storage.cachedb import CacheStore

FORMAT_VERSION = b"1"
_HOST_PREFIX = b"h"
_HEAD = struct.Struct(">dBB")
_DIGEST = 16
#: A body over this many bytes is parsed on a worker thread when fetched, and never on
#: the reactor's (a 32 KiB robots.txt parses in about 15 ms).
BIG_BODY = 32 * 1024
DEFAULT_RAM_BYTES = 8 << 20
_CODES = {PARSED: 0, UNAVAILABLE: 1, UNREACHABLE: 2}
_OUTCOMES = {code: outcome for outcome, code in _CODES.items()}


def _digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=_DIGEST).digest()


def _head_size(code: int) -> int:
    return _HEAD.size + (_DIGEST if code == _CODES[PARSED] else 0)


class RobotsCache:
    def __init__(
        self,
        *,
        ttl: float,
        retry_delay: float,
        retries: int,
        ram_hosts: int,
        ram_bodies: int,
        ram_bytes: int = DEFAULT_RAM_BYTES,
    ) -> None:
        if ttl <= 0 or retry_delay < 0:
            raise ConfigurationError(
                f"robots cache: IRL_ROBOTS_TTL ({ttl}) must be > 0 and "
                f"IRL_ROBOTS_RETRY_DELAY ({retry_delay}) >= 0 seconds"
            )
        if retries < 1 or ram_hosts < 1 or ram_bodies < 1 or ram_bytes < 1:
            raise ConfigurationError(
                "robots cache: IRL_ROBOTS_RETRIES, IRL_ROBOTS_RAM_HOSTS, "
                "IRL_ROBOTS_RAM_BODIES and IRL_ROBOTS_RAM_BYTES must be >= 1"
            )
        self.ttl = ttl
        self.retry_delay = retry_delay
        self.retries = retries
        self.ram_hosts = ram_hosts
        self.ram_bodies = ram_bodies
        self.ram_bytes = ram_bytes
        self._records: OrderedDict[str, bytes] = OrderedDict()  # host -> record head
        #: digest -> (rules, the body's length)
        self._rules: OrderedDict[bytes, tuple[RobotsRules, int]] = OrderedDict()
        self._rule_bytes = 0  # the sum of the bodies' lengths in _rules
        #: hosts LevelDB had no record of when asked, none learned since (module docstring)
        self._absent: set[str] = set()
        self._db: Any = None
        self._hosts: Any = None
        self._store: CacheStore | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> RobotsCache:
        return cls(
            ttl=defaults.get(settings, "IRL_ROBOTS_TTL"),
            retry_delay=defaults.get(settings, "IRL_ROBOTS_RETRY_DELAY"),
            retries=defaults.get(settings, "IRL_ROBOTS_RETRIES"),
            ram_hosts=defaults.get(settings, "IRL_ROBOTS_RAM_HOSTS"),
            ram_bodies=defaults.get(settings, "IRL_ROBOTS_RAM_BODIES"),
            ram_bytes=defaults.get(settings, "IRL_ROBOTS_RAM_BYTES"),
        )

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, path: Path) -> None:
        """Keep records under ``path`` from now on; until then (and after close()) the
        cache works in RAM only and forgets what it evicts."""
        self._store = CacheStore(path, FORMAT_VERSION, "robots cache", _HOST_PREFIX)
        self._store.open()
        self._db, self._hosts = self._store.db, self._store.hosts
        self._absent.clear()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        self._db = self._hosts = None

    def __len__(self) -> int:
        """Records in RAM (every host ever learned is on disk)."""
        return len(self._records)

    # -- reading -------------------------------------------------------------------------
    def lookup(self, host: str) -> tuple[RobotsRules | None, float]:
        """``(rules, refetch_at)`` of ``host``: the rules last learned (None: never
        learned, or unreachable and to be tried again) and the instant after which its
        robots.txt must be fetched (again); ``(None, 0.0)`` for a host never met."""
        head = self._head(host)
        if head is None:
            return None, 0.0
        refetch_at, code, failures = _HEAD.unpack_from(head)
        outcome = _OUTCOMES[code]
        if outcome == PARSED:
            rules = self._parsed(host, head[_HEAD.size :])
            if rules is None:  # no disk, or a big body: what RAM forgot is fetched again
                del self._records[host]
                if self._hosts is not None:
                    self._hosts.delete(host.encode())  # (module docstring: invariants)
                return None, 0.0
            return rules, refetch_at
        if outcome == UNAVAILABLE:
            return ALLOW_ALL, refetch_at
        return (DISALLOW_ALL if failures >= self.retries else None), refetch_at

    def _head(self, host: str) -> bytes | None:
        records = self._records
        head = records.get(host)
        if head is not None:
            records.move_to_end(host)
            return head
        if self._hosts is None or host in self._absent:
            return None
        raw = self._hosts.get(host.encode())
        if raw is None:
            if len(self._absent) >= self.ram_hosts:
                self._absent.clear()
            self._absent.add(host)
            return None
        head = raw[: _head_size(raw[8])]
        self._remember(host, head)
        return head

    def _parsed(self, host: str, digest: bytes) -> RobotsRules | None:
        held = self._rules.get(digest)
        if held is not None:
            self._rules.move_to_end(digest)
            return held[0]
        raw = self._hosts.get(host.encode()) if self._hosts is not None else None
        if raw is None or len(raw) - _HEAD.size - _DIGEST > BIG_BODY:
            return None  # forgotten: robots.txt is fetched (and parsed) again
        return self._share(digest, raw[_HEAD.size + _DIGEST :])

    # -- learning ------------------------------------------------------------------------
    def learn(
        self,
        host: str,
        status: int | None,
        body: bytes,
        now: float,
        parsed: RobotsRules | None = None,
    ) -> tuple[RobotsRules | None, float]:
        """Store what ``host``'s robots.txt answered at ``now`` (``status`` None: no
        answer; ``parsed``: the body's rules, parsed already, on a worker thread);
        return ``lookup(host)`` as it is now."""
        outcome = outcome_of(status)
        failures = 0
        refetch_at = now + self.ttl
        if outcome == UNREACHABLE:
            known = self._head(host)
            failures = min((_HEAD.unpack_from(known)[2] if known is not None else 0) + 1, 255)
            if failures < self.retries:
                refetch_at = now + self.retry_delay * 2 ** (failures - 1)
        if outcome != PARSED:
            body = b""
        body = body[:PARSE_LIMIT]
        digest = _digest(body) if outcome == PARSED else b""
        if outcome == PARSED:
            self._share(digest, body, parsed)
        head = _HEAD.pack(refetch_at, _CODES[outcome], failures) + digest
        if self._hosts is not None:
            self._hosts.put(host.encode(), head + body)
        self._remember(host, head)
        if outcome == PARSED:  # (lookup would not parse a big body again)
            return self._rules[digest][0], refetch_at
        return self.lookup(host)

    def _remember(self, host: str, head: bytes) -> None:
        self._absent.discard(host)
        records = self._records
        records[host] = head
        records.move_to_end(host)
        if len(records) > self.ram_hosts:
            records.popitem(last=False)

    def _share(self, digest: bytes, body: bytes, parsed: RobotsRules | None = None) -> RobotsRules:
        held = self._rules.get(digest)
        if held is not None:
            self._rules.move_to_end(digest)
            return held[0]
        rules = parsed if parsed is not None else parse(body)
        self._rules[digest] = (rules, len(body))
        self._rule_bytes += len(body)
        while len(self._rules) > 1 and (
            len(self._rules) > self.ram_bodies or self._rule_bytes > self.ram_bytes
        ):
            _, (_, size) = self._rules.popitem(last=False)
            self._rule_bytes -= size
        return rules
