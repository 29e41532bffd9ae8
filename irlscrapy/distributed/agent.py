"""The agent: this process's part in a multi-agent crawl (Cho's exchange mode, seeds/001;
BUbiNG's identical agents, seeds/002).

Theory of operation
-------------------
Every agent is a whole irlscrapy (DRUM, BEAST, STAR and the workbench on its own disk);
Redis is the only thing the agents share, and it never holds the set of seen URLs.

*Ownership.* A PLD's partition (:mod:`irlscrapy.distributed.partitions`) belongs to one
member of the crawl (:mod:`irlscrapy.distributed.registry`). The intake asks
:meth:`Agent.route_urls` before URLseen: the URLs of this agent's partitions go on to its
URLseen as before; the others go to their owner's partition stream
(:mod:`irlscrapy.distributed.streams`) in batches, each URL with the aux bytes the
owner's intake stores with it (priority, depth, callback, referer). A URL sent
recently is not sent again (:class:`irlscrapy.distributed.sentcache.SentCache`). STAR's
PLD edges go the same way to the owner of the *target* PLD (:meth:`Agent.route_edges`),
whose in-degree store counts them.

*One exchange a tick.* Every :data:`TICK` seconds the agent does one round of Redis I/O
on its Redis thread (the reactor never waits for Redis): publish its idle flag if it
changed (and, every few seconds, its status: :mod:`irlscrapy.distributed.status`), send
the batches that are due, acknowledge (and delete) the batches it made
durable since the last tick, read new batches of its partitions, renew its lease every
third of it, and, while it is idle, ask whether the whole crawl is done. Batches read
are handed to the scheduler (:attr:`Agent.deliver_urls`, :attr:`Agent.deliver_edges`)
on the reactor, and acknowledged at the next tick: both store durably before they
return (URLseen's and STAR's DRUM journals), so a batch is acknowledged only once a
kill -9 can no longer lose it. A batch read and not acknowledged is read again after a
restart (:meth:`irlscrapy.distributed.streams.Exchange.pending`).

*The beginning.* A crawl begins with its first URL: an agent routing one (its seeds)
says so in Redis (``seeded``), as ``irlscrapy agents seed`` does
(:mod:`irlscrapy.distributed.seeding`). Until then the crawl is not done, so agents
started before their seeds wait for them.

*The end.* An agent is *idle* when it has nothing to fetch, nothing in flight, nothing
buffered to send and nothing read but not acknowledged: when a crawl of one process
would close. The crawl is done when every member is idle and every partition stream is
empty, read in one script (:meth:`CrawlRegistry.crawl_done`). An agent publishes "not idle" before,
in the same pipeline, it acknowledges a batch, and "idle" only after its last batch is
sent; and from the moment it decides it is idle it takes up no work of its own until
Redis has its "not idle" (:attr:`Agent.quiesce`: the parked URLs of a host whose
retirement ends meanwhile wait for the next tick, which publishes "not idle", then go
back to BEAST). So the script never sees a moment where work exists but hides: a URL is
either in a stream, or at an agent that says it is busy. Until the crawl is done, the
scheduler reports pending requests, so Scrapy keeps every agent open.

*IP leases.* Each tick's round of I/O also runs the round of this agent's IP leases
(:mod:`irlscrapy.distributed.ipleases`): the workbench takes from an IP only while this
agent holds its lease, so agents sharing an address keep its delay between them.

*Redis away.* A tick that fails keeps its batches and acknowledgements for the next
one; the agent crawls its own partitions meanwhile. After :data:`REDIS_GIVE_UP` seconds
without a successful tick the crawl stops, with its state resumable.

Limits of this version (issue 20 continues): an agent that joins a running crawl, or
leaves it, changes ownership without handing over the URLs already in the old owner's
frontier or its URLseen's knowledge, so URLs of a moved partition may be fetched twice.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import redis
from twisted.internet import defer, task
from twisted.python.failure import Failure

from irlscrapy.distributed.agentsettings import TICK, AgentSettings
from irlscrapy.distributed.ipleases import IPLeases, LeaseReply, LeaseRound
from irlscrapy.distributed.outboxjournal import OutboxJournal
from irlscrapy.distributed.partitions import PartitionCache, assignment
from irlscrapy.distributed.registry import CrawlConfig, CrawlRegistry
from irlscrapy.distributed.sentcache import SentCache
from irlscrapy.distributed.status import STATUS_EVERY, AgentStatus
from irlscrapy.distributed.streams import Batch, Exchange, Outbox, Outgoing
from irlscrapy.domains import PayLevelDomains, url_host
from irlscrapy.dupefilters.urlkey import url_keys
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.workers import NicedWorker

logger = logging.getLogger(__name__)

#: A tick's Redis I/O: batches read, the members (if renewed), the lease still held,
#: (the crawl is done, every other agent is done), the IP leases' reply.
IOResult = tuple[list[Batch], list[str] | None, bool, tuple[bool, bool], LeaseReply | None]

#: Batches read per partition per tick: one comes every IRL_EXCHANGE_AGE at most, except
#: after an outage, when more would be delivered on the reactor at once.
READ_COUNT = 4
#: Records to send the agent holds in RAM while Redis is away; past it, they wait on
#: disk only (OutboxJournal.spill), read back REPLAY_RECORDS a tick once Redis is back.
SPILL_RECORDS = 200_000
REPLAY_RECORDS = 20_000
#: Seconds without a successful exchange before the crawl stops.
REDIS_GIVE_UP = 300.0
#: Seconds between checkpoints of the outbox's journal: it starts a new file, and the
#: older ones go once everything routed before the checkpoint is in Redis (within
#: IRL_EXCHANGE_AGE; irlscrapy.distributed.outboxjournal).
CHECKPOINT_S = 10.0


class Agent:
    def __init__(
        self,
        settings: AgentSettings,
        plds: PayLevelDomains,
        stats: Any,
        clock: Any,
        worker: Callable[..., defer.Deferred[Any]] | None = None,
    ) -> None:
        self.settings = settings
        self.id = settings.agent
        self.plds = plds
        self.stats = stats
        self.clock = clock
        self.worker = worker or NicedWorker("irl-redis", 0)
        client = redis.Redis.from_url(settings.redis_url, socket_timeout=max(5.0, settings.lease))
        config = CrawlConfig(settings.partitions, private_suffixes=settings.private_suffixes)
        self.registry = CrawlRegistry(client, settings.crawl, config)
        self.exchange = Exchange(self.registry, self.id)
        #: global per-IP politeness; the scheduler attaches its workbench before start()
        self.leases = IPLeases(self.registry, self.id)
        self.outbox = Outbox(settings.batch, settings.age)
        self.sent = SentCache(settings.cache_slots) if settings.cache_slots else None
        # set by the scheduler before start()
        self.deliver_urls: Callable[[list[str], list[bytes]], None] = lambda urls, auxes: None
        self.deliver_edges: Callable[[list[tuple[str, str]]], None] = lambda edges: None
        self.locally_idle: Callable[[], bool] = lambda: True
        self.fetching: Callable[[], bool] = lambda: False  # fetches in flight?
        #: quiesce(True): this agent is about to say it is idle; until quiesce(False),
        #: called once Redis has its "not idle" or a batch has come, it must find no work
        #: of its own (work it finds meanwhile waits, and makes locally_idle() false)
        self.quiesce: Callable[[bool], None] = lambda idle: None
        self.on_fatal: Callable[[str], None] = lambda reason: None
        self.members: list[str] = []
        self.owned: frozenset[int] = frozenset()
        self.crawl_done = False
        #: every other agent is idle and every stream empty (as of the last tick that
        #: asked): only then may this one give up on hosts that keep failing
        self.others_done = False
        self._token = ""
        self._owned_mask = np.zeros(settings.partitions, dtype=bool)
        self.partitions = PartitionCache(plds, settings.partitions)
        self._unsent: list[Outgoing] = []  # batches a failed tick could not send
        self._durable: list[Batch] = []  # delivered, to acknowledge at the next tick
        self._io_running = False
        self._published_idle: bool | None = None
        self._renew_at = 0.0
        self._failing_since: float | None = None
        self._loop: task.LoopingCall | None = None
        self.journal: OutboxJournal | None = None  # the outbox on disk (start())
        self._checkpoint_at = 0.0
        self._status_at = 0.0  # when the next status record is due
        self._last_pages = (0.0, 0)  # (when, pages) of the previous one
        self._began = False  # this agent routed a URL or had work: the crawl has begun
        #: a tick failed, perhaps after reading batches it never delivered: the next
        #: one reads this agent's pending batches again (else they stay pending for good)
        self._orphans = False
        self._ticking: defer.Deferred[Any] | None = None  # the tick under way
        self._seeded_published = False  # Redis knows it

    @classmethod
    def from_crawler(cls, crawler: Any, clock: Any) -> Agent | None:
        """The crawl's agent; None without IRL_REDIS_URL."""
        name = getattr(crawler.spidercls, "name", None) or ""
        settings = AgentSettings.from_settings(crawler.settings, name)
        if settings is None:
            return None
        return cls(settings, PayLevelDomains.of(crawler), crawler.stats, clock)

    # -- start and stop --------------------------------------------------------------------
    def start(self, directory: Path) -> None:
        """Join the crawl, read back what this agent left unacknowledged, and start
        ticking. This is the one time the agent waits for Redis on the reactor: at open,
        before the crawl starts (as the state directory's recovery does), and for up to
        one lease if a killed process with this id still holds it."""
        self.journal = OutboxJournal(directory)
        self.journal.open()  # what it left is sent again: owners drop what they have
        self._checkpoint_at = self.clock.seconds() + CHECKPOINT_S
        try:
            self._joined(self._join())
        except redis.RedisError as exc:
            raise ConfigurationError(
                f"agent {self.id!r} cannot join crawl {self.settings.crawl!r} at "
                f"{self.settings.redis_url}: {exc}"
            ) from exc

    def _join(self) -> tuple[str, list[str], list[Batch], bool]:
        s = self.settings
        registry = self.registry
        registry.ensure_config()
        for name in s.agents:
            registry.add_member(name)
        token = registry.join(self.id, s.lease)
        self.exchange.create_groups(range(s.partitions))
        self.registry.client.hset(registry.key("idle"), self.id, "0")
        members = registry.members()
        owned = assignment(members, s.partitions)[self.id]
        seeded = bool(self.registry.client.exists(registry.key("seeded")))
        return token, members, self.exchange.pending(sorted(owned), 1 << 30), seeded

    def _joined(self, joined: tuple[str, list[str], list[Batch], bool]) -> None:
        self._token, members, pending, seeded = joined
        self._published_idle = False
        self._set_members(members)
        self._renew_at = self.clock.seconds() + self.settings.lease / 3
        logger.info(
            "Agent %s of crawl %s: %d partitions of %d, members %s",
            self.id,
            self.settings.crawl,
            len(self.owned),
            self.settings.partitions,
            ", ".join(members),
        )
        if not seeded:
            logger.info(
                "Crawl %s has no URLs yet: it begins with the first agent given seeds, or "
                "with `irlscrapy agents seed`; until then the agents wait",
                self.settings.crawl,
            )
        if pending:
            logger.info("Agent %s: %d batches read before a stop, again", self.id, len(pending))
            self._deliver(pending)
        self._loop = task.LoopingCall(self._tick)
        self._loop.clock = self.clock
        self._loop.start(TICK, now=True).addErrback(self._tick_crashed)

    def _tick_crashed(self, failure: Failure) -> None:
        logger.error("Agent %s: its tick failed\n%s", self.id, failure.getTraceback())
        self.on_fatal(
            f"agent {self.id!r} can no longer exchange with the other agents "
            f"({failure.getErrorMessage()}): the crawl stops; its JOBDIR is resumable"
        )

    def stop(self) -> defer.Deferred[None]:
        """Send everything buffered, acknowledge what is durable, give the lease up (the
        agent stays a member: its partitions wait for its return). A tick under way
        ends first (what it fails to send is sent here)."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        journal = self.journal
        if not self._token or journal is None:  # it never joined
            return defer.succeed(None)
        if self._io_running and self._ticking is not None:
            ended: defer.Deferred[None] = defer.Deferred()

            def tick_ended(result: Any) -> Any:
                ended.callback(None)
                return result

            self._ticking.addBoth(tick_ended)
            return ended.addCallback(lambda _: self._stop(journal))
        return self._stop(journal)

    def _stop(self, journal: OutboxJournal) -> defer.Deferred[None]:
        sends = self._unsent + self.outbox.ready(self.clock.seconds(), everything=True)
        acks, self._unsent, self._durable = self._durable, [], []
        leases = self.leases.release_all(self.clock.seconds())
        d = self.worker(self._last_io, sends, acks, leases)
        d.addCallbacks(
            # (spilled records not yet sent wait for the next start, in their files)
            lambda _: journal.close() if journal.spilling else journal.remove_all(),
            self._stop_failed,
            errbackArgs=(len(sends), len(acks)),
        )
        return d

    def _last_io(self, sends: list[Outgoing], acks: list[Batch], leases: LeaseRound) -> None:
        self._io(sends, acks, idle=None, renew=False)
        self.leases.run(leases)
        if self._token:
            self.registry.release(self.id, self._token)

    def _stop_failed(self, failure: Failure, sends: int, acks: int) -> None:
        if self.journal is not None:
            self.journal.close()  # its files are sent at the next start
        logger.error(
            "Agent %s could not reach Redis as it stopped (%s): %d batches unsent, %d "
            "unacknowledged (both again at the restart: URLseen drops what it knows)",
            self.id,
            failure.getErrorMessage(),
            sends,
            acks,
        )

    # -- routing (on the reactor) ----------------------------------------------------------
    def route_urls(
        self, urls: Sequence[str], auxes: Sequence[bytes]
    ) -> tuple[list[str], list[bytes]]:
        """The URLs (and auxes) this agent owns; the others go to the outbox."""
        self._began = True
        parts = np.fromiter(
            (self.partitions.of_host(url_host(u)) for u in urls), dtype=np.int64, count=len(urls)
        )
        mine = self._owned_mask[parts]
        if mine.all():
            return list(urls), list(auxes)
        foreign = np.flatnonzero(~mine)
        if self.sent is None:
            send = np.ones(len(foreign), dtype=bool)
        else:
            send = self.sent.first_sends(url_keys([urls[i] for i in foreign.tolist()]))
        routed: dict[int, Batch] = {}
        for i in foreign[send].tolist():
            p = int(parts[i])
            batch = routed.setdefault(p, Batch(p))
            batch.urls.append(urls[i])
            batch.auxes.append(auxes[i])
        self._route(routed)
        self.stats.inc_value("irl/agent/urls_out", int(send.sum()))
        self.stats.inc_value("irl/agent/urls_out_cached", len(foreign) - int(send.sum()))
        kept = np.flatnonzero(mine).tolist()
        return [urls[i] for i in kept], [auxes[i] for i in kept]

    def route_edges(self, source: str, targets: Iterable[str]) -> list[str]:
        """The PLDs of ``targets`` this agent owns; the edges to the others go to the
        outbox, for the target's owner to count."""
        mine = []
        routed: dict[int, Batch] = {}
        for target in targets:
            p = self.partitions.of_pld(target)
            if self._owned_mask[p]:
                mine.append(target)
            else:
                routed.setdefault(p, Batch(p)).edges.append((source, target))
        self._route(routed)
        return mine

    def _route(self, routed: dict[int, Batch]) -> None:
        """To the outbox, and on disk first: before the page that found them is done,
        so a kill -9 loses none."""
        if routed:
            assert self.journal is not None, "start() first"
            now = self.clock.seconds()
            for p, batch in routed.items():
                chunk = batch.encode()
                self.journal.append(p, chunk)
                self.outbox.add(p, chunk, now)

    # -- the tick --------------------------------------------------------------------------
    def _tick(self) -> None:
        if self._io_running:
            return
        now = self.clock.seconds()
        journal = self.journal
        assert journal is not None, "start() first"
        if now >= self._checkpoint_at:
            self._checkpoint_at = now + CHECKPOINT_S
            journal.checkpoint(now)
        locally_idle = self.locally_idle()
        self._began |= not locally_idle  # work of its own: the crawl has begun
        held = len(self._unsent)
        # with nothing of its own to fetch, the agent sends what it holds at once: the
        # crawl's last rounds of exchange wait for no batch age
        # batches by age: no more a tick than the open ones over the ticks in an age
        aged = math.ceil(len(self.outbox) * TICK / self.settings.age)
        sends = self._unsent + self.outbox.ready(now, everything=locally_idle, aged=aged)
        if self._failing_since is None and journal.spilling:
            sends += Outgoing.of_records(journal.replay(REPLAY_RECORDS))
        acks = self._durable
        self._unsent, self._durable = [], []
        idle = (
            not sends
            and not acks
            and not self.outbox.records
            and not journal.spilling
            and locally_idle
        )
        if idle:
            self.quiesce(True)  # (ended only once "not idle" is in Redis: _io_done)
        renew = now >= self._renew_at
        self._io_running = True
        check = idle or not self.fetching()
        status = None
        if now >= self._status_at:
            self._status_at = now + STATUS_EVERY
            status = self._status(now, idle, held)
        leases = self.leases.round(now) if self.leases.bench is not None else None
        d = self.worker(self._io, sends, acks, idle, renew, check, status, self._orphans, leases)
        d.addCallbacks(
            self._io_done,
            self._io_failed,
            callbackArgs=(sends, acks, idle, renew),
            errbackArgs=(sends, acks, leases),
        )
        self._ticking = d

    def _io(
        self,
        sends: list[Outgoing],
        acks: list[Batch],
        idle: bool | None,
        renew: bool,
        check: bool = False,
        status: AgentStatus | None = None,
        orphans: bool = False,
        leases: LeaseRound | None = None,
    ) -> IOResult:
        """One round of Redis I/O (on the Redis thread, one at a time: the worker has
        one thread); see the module docstring."""
        registry, exchange = self.registry, self.exchange
        pipe = registry.client.pipeline(transaction=False)
        if idle is not None and idle != self._published_idle:
            pipe.hset(registry.key("idle"), self.id, "1" if idle else "0")
        seeding = self._began and not self._seeded_published
        if seeding:
            pipe.set(registry.key("seeded"), "1", nx=True)
        if status is not None:
            pipe.hset(registry.key("status"), self.id, status.to_json())
        exchange.queue(pipe, sends)
        if len(pipe):
            pipe.execute()
        self._seeded_published |= seeding
        if idle is not None:
            self._published_idle = idle
        exchange.done(acks)
        if idle is None:
            return [], None, True, (False, False), None
        granted = self.leases.run(leases) if leases is not None else None
        owned = sorted(self.owned)
        # (every batch delivered is acknowledged by now: what is pending was lost)
        batches = exchange.pending(owned, 1 << 30) if orphans else []
        batches += exchange.read(owned, READ_COUNT, None)
        held, members = True, None
        if renew:
            held = registry.renew(self.id, self._token, self.settings.lease)
            members = registry.members()
        done = (False, False)
        if check and not batches:
            done = registry.crawl_done(exchange.stream(""), self.settings.partitions, self.id)
        return batches, members, held, done, granted

    def _io_done(
        self,
        result: IOResult,
        sends: list[Outgoing],
        acks: list[Batch],
        idle: bool,
        renew: bool,
    ) -> None:
        self._io_running = False
        self._failing_since = None
        self._orphans = False
        if self.journal is not None:
            self.journal.retire(self.outbox.oldest())
            self.journal.replayed()
        batches, members, held, done, granted = result
        if granted is not None:
            self.leases.apply(granted, self.clock.seconds())
        if not idle:
            self.quiesce(False)
        stats = self.stats
        if sends:
            stats.inc_value("irl/agent/batches_out", len(sends))
        if acks:
            stats.inc_value("irl/agent/batches_in", len(acks))
        if renew:
            self._renew_at = self.clock.seconds() + self.settings.lease / 3
            if not held:
                self.on_fatal(
                    f"agent {self.id!r} lost its lease in Redis to another process with the "
                    "same IRL_AGENT_ID: this one stops (its JOBDIR is resumable)"
                )
                return
            if members is not None and members != self.members:
                logger.warning(
                    "Agent %s: the crawl's members changed from %s to %s; partitions move "
                    "without their URLs (see irlscrapy.distributed.agent)",
                    self.id,
                    ", ".join(self.members),
                    ", ".join(members),
                )
                self._set_members(members)
        if batches:
            self._deliver(batches)
        self.crawl_done, self.others_done = done

    def figures(self) -> dict[str, int]:
        """For the progress line and the status endpoint (irlscrapy.report.figures)."""
        failing = self._failing_since
        return {
            "agent_partitions": len(self.owned),
            "agent_members": len(self.members),
            "agent_outbox": self.outbox.records,
            "agent_unsent_batches": len(self._unsent),
            "agent_redis_failing_seconds": (
                0 if failing is None else int(self.clock.seconds() - failing)
            ),
            **self.leases.figures(),
        }

    def _status(self, now: float, idle: bool, held: int) -> AgentStatus:
        def stat(name: str) -> int:
            return int(self.stats.get_value(name, 0))

        pages = stat("response_received_count")
        then, before = self._last_pages
        self._last_pages = (now, pages)
        return AgentStatus(
            t=time.time(),
            pages=pages,
            pages_per_s=(pages - before) / (now - then) if then and now > then else 0.0,
            urls_out=stat("irl/agent/urls_out"),
            urls_in=stat("irl/agent/urls_in"),
            batches_out=stat("irl/agent/batches_out"),
            batches_in=stat("irl/agent/batches_in"),
            outbox=self.outbox.records,
            unsent=held,
            idle=idle,
            redis_errors=stat("irl/agent/redis_errors"),
        )

    def _io_failed(
        self,
        failure: Failure,
        sends: list[Outgoing],
        acks: list[Batch],
        leases: LeaseRound | None = None,
    ) -> None:
        self._io_running = False
        self._unsent = sends + self._unsent
        self._durable = acks + self._durable
        self._orphans = True
        if failure.check(redis.ResponseError) and "NOGROUP" in failure.getErrorMessage():
            self.on_fatal(
                f"Redis at {self.settings.redis_url} no longer has crawl "
                f"{self.settings.crawl!r}'s streams: it lost its data (run Redis with "
                "--appendonly yes). What was in the streams is lost; this agent's JOBDIR "
                "is resumable"
            )
            return
        held = self.outbox.records + sum(len(batch) for batch in self._unsent)
        if held > SPILL_RECORDS and self.journal is not None:
            self.journal.spill()  # all of it is on disk: RAM lets go
            self._unsent = []
            self.outbox.clear()
            self.stats.inc_value("irl/agent/spills")
            logger.warning(
                "Agent %s: %d records to send while Redis is away; they wait on disk",
                self.id,
                held,
            )
        now = self.clock.seconds()
        if leases is not None:
            self.leases.failed(leases, now, len(self.members))
        if self._failing_since is None:
            self._failing_since = now
            logger.warning(
                "Agent %s cannot reach Redis (%s): crawling its own partitions, holding %d "
                "batches to send",
                self.id,
                failure.getErrorMessage(),
                len(self._unsent),
            )
        self.stats.inc_value("irl/agent/redis_errors")
        if now - self._failing_since >= REDIS_GIVE_UP:
            self.on_fatal(
                f"Redis at {self.settings.redis_url} has been unreachable for "
                f"{REDIS_GIVE_UP:g} s ({failure.getErrorMessage()}): the crawl stops; its "
                "JOBDIR is resumable once Redis is back"
            )

    def _deliver(self, batches: list[Batch]) -> None:
        self.quiesce(False)
        urls: list[str] = []
        auxes: list[bytes] = []
        edges: list[tuple[str, str]] = []
        for batch in batches:
            urls += batch.urls
            auxes += batch.auxes
            edges += batch.edges
        self.stats.inc_value("irl/agent/urls_in", len(urls))
        if urls:
            self.deliver_urls(urls, auxes)
        if edges:
            self.deliver_edges(edges)
        self._durable += batches

    def _set_members(self, members: list[str]) -> None:
        self.members = members
        self.owned = assignment(members, self.settings.partitions).get(self.id, frozenset())
        self._owned_mask[:] = False
        self._owned_mask[list(self.owned)] = True
