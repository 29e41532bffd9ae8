"""The robots cache: every host's robots.txt outcome on disk, little of it in RAM.

Theory of operation
-------------------
A host's *record* says what its robots.txt answered and until when that holds. Records
live in LevelDB; RAM holds two LRUs:

- the records of the ``ram_hosts`` hosts used last, without their bodies: host ->
  ``(refetch_at, outcome, failures, digest)``, a tuple of atomic values (the cyclic GC
  does not track it);
- parsed rules by body digest (``ram_bodies`` of them): hosts with the same robots.txt
  share one parse (many sites serve a stock robots.txt, and a parsed robots.txt is
  dozens of objects). A record whose rules were evicted is parsed again from its body
  on disk.

So RAM does not grow with the hosts met: at IRLbot's 117 million hosts the records are
on disk (LevelDB's own caches are bounded too: its block cache and write buffer).

What an answer does (:meth:`RobotsCache.learn`; outcomes from
:func:`irlscrapy.scheduler.robots.outcome_of`):

- parsed or unavailable: the rules hold for ``ttl`` seconds (``IRL_ROBOTS_TTL``); after
  that, robots.txt is fetched again before the host's next URL;
- unreachable (5xx, no answer): the first ``retries - 1`` times in a row, the rules are
  unknown: the host's URLs wait, and robots.txt is fetched again after
  ``retry_delay * 2**(failures - 1)`` seconds. From the ``retries``-th time on, the rules
  are "disallow all" for ``ttl`` (the host's URLs are dropped); a later answer resets
  the count.

Invariants:
*RAM holds at most ram_hosts records and ram_bodies parsed rules.*
*lookup() answers what the last learn() for the host stored, also after a restart.*

Files under the directory given to open() (DO NOT CHANGE: format version 1)::

    LOCK        exclusive flock holding the owner's pid (irlscrapy.dirlock)
    cache/      LevelDB:
                  b"!format"     -> b"1"
                  b"h" host      -> record          host: the workbench's host key, UTF-8
    record  := refetch_at: f64be, outcome: u8, failures: u8, body
    refetch_at  POSIX seconds after which robots.txt must be fetched again
    outcome     0 parsed | 1 unavailable | 2 unreachable
    failures    unreachable answers in a row (0 after any answer)
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
from irlscrapy.cachedb import open_cache_db
from irlscrapy.dirlock import DirectoryLock
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.robots import (
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

FORMAT_VERSION = b"1"
_HOST_PREFIX = b"h"
_RECORD = struct.Struct(">dBB")
_CODES = {PARSED: 0, UNAVAILABLE: 1, UNREACHABLE: 2}
_OUTCOMES = {code: outcome for outcome, code in _CODES.items()}

#: A record in RAM: (refetch_at, outcome code, failures, body digest or b"").
_Record = tuple[float, int, int, bytes]


def _digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=16).digest()


class RobotsCache:
    def __init__(
        self,
        *,
        ttl: float,
        retry_delay: float,
        retries: int,
        ram_hosts: int,
        ram_bodies: int,
    ) -> None:
        if ttl <= 0 or retry_delay < 0:
            raise ConfigurationError(
                f"robots cache: IRL_ROBOTS_TTL ({ttl}) must be > 0 and "
                f"IRL_ROBOTS_RETRY_DELAY ({retry_delay}) >= 0 seconds"
            )
        if retries < 1 or ram_hosts < 1 or ram_bodies < 1:
            raise ConfigurationError(
                "robots cache: IRL_ROBOTS_RETRIES, IRL_ROBOTS_RAM_HOSTS and "
                "IRL_ROBOTS_RAM_BODIES must be >= 1"
            )
        self.ttl = ttl
        self.retry_delay = retry_delay
        self.retries = retries
        self.ram_hosts = ram_hosts
        self.ram_bodies = ram_bodies
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._rules: OrderedDict[bytes, RobotsRules] = OrderedDict()
        self._db: Any = None
        self._hosts: Any = None
        self._lock: DirectoryLock | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> RobotsCache:
        return cls(
            ttl=defaults.get(settings, "IRL_ROBOTS_TTL"),
            retry_delay=defaults.get(settings, "IRL_ROBOTS_RETRY_DELAY"),
            retries=defaults.get(settings, "IRL_ROBOTS_RETRIES"),
            ram_hosts=defaults.get(settings, "IRL_ROBOTS_RAM_HOSTS"),
            ram_bodies=defaults.get(settings, "IRL_ROBOTS_RAM_BODIES"),
        )

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, path: Path) -> None:
        """Keep records under ``path`` from now on; until then (and after close()) the
        cache works in RAM only and forgets what it evicts."""
        self._lock = DirectoryLock(path, "robots cache")
        self._lock.acquire()
        try:
            self._db = open_cache_db(path / "cache", FORMAT_VERSION, "robots cache")
            self._hosts = self._db.prefixed_db(_HOST_PREFIX)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db = self._hosts = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __len__(self) -> int:
        """Records in RAM (every host ever learned is on disk)."""
        return len(self._records)

    # -- reading -------------------------------------------------------------------------
    def lookup(self, host: str) -> tuple[RobotsRules | None, float]:
        """``(rules, refetch_at)`` of ``host``: the rules last learned (None: never
        learned, or unreachable and to be tried again) and the instant after which its
        robots.txt must be fetched (again); ``(None, 0.0)`` for a host never met."""
        record = self._record(host)
        if record is None:
            return None, 0.0
        refetch_at, code, failures, digest = record
        outcome = _OUTCOMES[code]
        if outcome == PARSED:
            rules = self._parsed(host, digest)
            if rules is None:  # no disk (never opened): what RAM forgot is fetched again
                del self._records[host]
                return None, 0.0
            return rules, refetch_at
        if outcome == UNAVAILABLE:
            return ALLOW_ALL, refetch_at
        return (DISALLOW_ALL if failures >= self.retries else None), refetch_at

    def _record(self, host: str) -> _Record | None:
        records = self._records
        record = records.get(host)
        if record is not None:
            records.move_to_end(host)
            return record
        raw = self._hosts.get(host.encode()) if self._hosts is not None else None
        if raw is None:
            return None
        refetch_at, code, failures = _RECORD.unpack_from(raw)
        body = raw[_RECORD.size :]
        record = (refetch_at, code, failures, _digest(body) if code == 0 else b"")
        self._remember(host, record)
        return record

    def _parsed(self, host: str, digest: bytes) -> RobotsRules | None:
        rules = self._rules.get(digest)
        if rules is not None:
            self._rules.move_to_end(digest)
            return rules
        raw = self._hosts.get(host.encode()) if self._hosts is not None else None
        return None if raw is None else self._share(digest, raw[_RECORD.size :])

    # -- learning ------------------------------------------------------------------------
    def learn(
        self, host: str, status: int | None, body: bytes, now: float
    ) -> tuple[RobotsRules | None, float]:
        """Store what ``host``'s robots.txt answered at ``now`` (``status`` None: no
        answer); return ``lookup(host)`` as it is now."""
        outcome = outcome_of(status)
        failures = 0
        refetch_at = now + self.ttl
        if outcome == UNREACHABLE:
            known = self._record(host)
            failures = min((known[2] if known is not None else 0) + 1, 255)
            if failures < self.retries:
                refetch_at = now + self.retry_delay * 2 ** (failures - 1)
        if outcome != PARSED:
            body = b""
        body = body[:PARSE_LIMIT]
        digest = _digest(body) if outcome == PARSED else b""
        if outcome == PARSED:
            self._share(digest, body)
        code = _CODES[outcome]
        if self._hosts is not None:
            self._hosts.put(host.encode(), _RECORD.pack(refetch_at, code, failures) + body)
        self._remember(host, (refetch_at, code, failures, digest))
        return self.lookup(host)

    def _remember(self, host: str, record: _Record) -> None:
        records = self._records
        records[host] = record
        records.move_to_end(host)
        if len(records) > self.ram_hosts:
            records.popitem(last=False)

    def _share(self, digest: bytes, body: bytes) -> RobotsRules:
        rules = self._rules.get(digest)
        if rules is None:
            rules = self._rules[digest] = parse(body)
            if len(self._rules) > self.ram_bodies:
                self._rules.popitem(last=False)
        else:
            self._rules.move_to_end(digest)
        return rules
