"""The agent: this process's part in a multi-agent crawl (Cho's exchange mode, seeds/001;
BUbiNG's identical agents, seeds/002).

Theory of operation
-------------------
Every agent is a whole irlscrapy (DRUM, BEAST, STAR and the workbench on its own disk);
Redis is the only thing the agents share, and it never holds the set of seen URLs.

*Ownership.* A PLD's partition (:mod:`irlscrapy.distributed.partitions`) belongs to one
member of the crawl (:mod:`irlscrapy.distributed.registry`); the agent's
:class:`~irlscrapy.distributed.routing.Router` keeps this agent's URLs and PLD edges and
puts the others in the outbox for their owner.

*One exchange a tick.* Every :data:`TICK` seconds the agent does one round of Redis I/O
on its Redis thread (the reactor never waits for Redis): publish its idle flag if it
changed (and, every few seconds, its status: :mod:`irlscrapy.distributed.crawlview`), send
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

*The end.* The crawl ends when every member is idle and every stream is empty, read in
one script (:meth:`CrawlRegistry.crawl_done`, whose docstring says why no work can hide
from it); until then the scheduler reports pending requests, so Scrapy keeps every
agent open.

*IP leases.* Each tick's round of I/O also runs the round of this agent's IP leases
(:mod:`irlscrapy.distributed.ipleases`): the workbench takes from an IP only while this
agent holds its lease, so agents sharing an address keep its delay between them.

*Redis away.* A tick that fails keeps its batches and acknowledgements for the next
one; the agent crawls its own partitions meanwhile. After :data:`REDIS_GIVE_UP` seconds
without a successful tick the crawl stops, with its state resumable. Each outage
(``irl/agent/redis_outages``), failed tick (``irl/agent/redis_errors``) and spill to
disk (``irl/agent/spills``) is counted; the first outage and spill are logged.

*Leaving and joining.* An agent asked to leave hands its partitions over
(:mod:`irlscrapy.distributed.leave`). One that joins a running crawl takes partitions
from others, which hand them off (:mod:`irlscrapy.distributed.join`); it reads them
once no other agent holds them (:mod:`irlscrapy.distributed.ownership`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import redis
from twisted.internet import defer, task
from twisted.python.failure import Failure

from irlscrapy.distributed import leavemarks as marks
from irlscrapy.distributed.agentsettings import (
    CHECKPOINT_S,
    REDIS_GIVE_UP,
    REPLAY_RECORDS,
    SPILL_RECORDS,
    TICK,
    AgentSettings,
)
from irlscrapy.distributed.crawlview import StatusClock
from irlscrapy.distributed.ipleases import IPLeases, LeaseRound
from irlscrapy.distributed.outboxjournal import OutboxJournal
from irlscrapy.distributed.ownership import Ownership
from irlscrapy.distributed.redisround import TickIO, tick_io
from irlscrapy.distributed.registry import TAKEN, CrawlConfig, CrawlRegistry
from irlscrapy.distributed.routing import Router
from irlscrapy.distributed.sentcache import SentCache
from irlscrapy.distributed.streams import Batch, Exchange, Outbox, Outgoing
from irlscrapy.domains import PayLevelDomains
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.crawlservices import crawl_plds
from irlscrapy.runtime.troubles import tally
from irlscrapy.runtime.workers import NicedWorker

logger = logging.getLogger(__name__)


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
        self.leases = IPLeases(self.registry, self.id, settings.ip_round)
        self.outbox = Outbox(settings.batch, settings.age)
        sent = SentCache(settings.cache_slots) if settings.cache_slots else None
        #: where each URL and PLD edge goes (the intake and STAR ask it)
        self.router = Router(plds, settings.partitions, self.outbox, sent, stats, clock)
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
        #: the partitions this agent owns, has taken over, holds
        self.ownership = Ownership(self.id, settings.partitions)
        #: it holds partitions it no longer owns: hand them off (irlscrapy.distributed.join)
        self.on_hand_off: Callable[[frozenset[int]], None] = lambda lost: None
        self._handoff: list[Outgoing] = []  # keys handed off, sent before the holds
        #: keys an agent that left had seen, for partitions this one now owns (handover)
        self.deliver_keys: Callable[[np.ndarray], None] = lambda keys: None
        self.on_leave: Callable[[], None] = lambda: None  # asked to leave: settle first
        self.leaving = False  # it reads no more batches (irlscrapy.distributed.leave)
        self._reads_over = False  # a tick that read nothing has ended since
        self._handover: list[Outgoing] = []  # keys for the heirs, sent as it stops
        self.handed_over = False  # all it held is routed: it leaves as it stops ...
        self.handover_members: list[str] = []  # ... if the members are still these
        self._alone_warned = False
        self.crawl_done = False
        #: every other agent is idle and every stream empty (as of the last tick that
        #: asked): only then may this one give up on hosts that keep failing
        self.others_done = False
        self.token = ""
        self.unsent: list[Outgoing] = []  # batches a failed tick could not send
        self._durable: list[Batch] = []  # delivered, to acknowledge at the next tick
        self._io_running = False
        self.published_idle: bool | None = None
        self._renew_at = 0.0
        self._renewed_at = 0.0  # when the lease on its id was last renewed
        self.failing_since: float | None = None
        self._loop: task.LoopingCall | None = None
        self.journal: OutboxJournal | None = None  # the outbox on disk (start())
        self._checkpoint_at = 0.0
        self.status = StatusClock(stats)
        #: a tick failed, perhaps after reading batches it never delivered: the next
        #: one reads this agent's pending batches again (else they stay pending for good)
        self._orphans = False
        self._ticking: defer.Deferred[Any] | None = None  # the tick under way
        self.seeded_published = False  # Redis knows it

    @classmethod
    def from_crawler(cls, crawler: Any, clock: Any) -> Agent | None:
        """The crawl's agent; None without IRL_REDIS_URL."""
        name = getattr(crawler.spidercls, "name", None) or ""
        settings = AgentSettings.from_settings(crawler.settings, name)
        if settings is None:
            return None
        return cls(settings, crawl_plds(crawler), crawler.stats, clock)

    # -- start and stop --------------------------------------------------------------------
    def start(self, directory: Path) -> None:
        """Join the crawl, read back what this agent left unacknowledged, and start
        ticking. This is the one time the agent waits for Redis on the reactor: at open,
        before the crawl starts (as the state directory's recovery does), and for up to
        one lease if a killed process with this id still holds it."""
        self.journal = self.router.journal = OutboxJournal(directory)
        self.journal.open()  # what it left is sent again: owners drop what they have
        # (a handover cut short goes on)
        self.ownership.set_salt(*marks.salt_of(directory))
        self._checkpoint_at = self.clock.seconds() + CHECKPOINT_S
        try:
            self._joined(self._join())
        except redis.RedisError as exc:
            raise ConfigurationError(
                f"agent {self.id!r} cannot join crawl {self.settings.crawl!r} at "
                f"{self.settings.redis_url}: {exc}"
            ) from exc

    def _join(self) -> tuple[str, list[str], list[Batch], bool, frozenset[int]]:
        s, registry = self.settings, self.registry
        assert self.journal is not None
        marks.check_directory(self.journal.directory, registry, self.id)
        registry.ensure_config()
        for name in s.agents:
            registry.add_member(name)
        token = registry.join(self.id, s.lease)
        self.exchange.create_groups(range(s.partitions))
        self.registry.client.hset(registry.key("idle"), self.id, "0")
        members = registry.members()
        seeded = bool(self.registry.client.exists(registry.key("seeded")))
        lost = self.ownership.start(members, registry.holds().get(self.id, frozenset()))
        registry.publish_holds(registry.client, self.id, self.ownership.holds)
        # (also of partitions lost while it was down: they are handed off with the rest)
        return (
            token,
            members,
            self.exchange.pending(sorted(self.ownership.holds), 1 << 30),
            seeded,
            lost,
        )

    def _joined(self, joined: tuple[str, list[str], list[Batch], bool, frozenset[int]]) -> None:
        self.token, members, pending, seeded, lost = joined
        self.published_idle = False
        self.router.own(self.ownership.routed_here)
        self._renew_at = self.clock.seconds() + self.settings.lease / 3
        self._renewed_at = self.clock.seconds()
        logger.info(
            "Agent %s of crawl %s: %d partitions of %d, members %s",
            self.id,
            self.settings.crawl,
            len(self.ownership.owned),
            self.settings.partitions,
            ", ".join(members),
        )
        if lost:
            self.on_hand_off(lost)  # (a handoff a kill -9 cut short starts over)
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
        if not self.token or journal is None:  # it never joined
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
        sends = self.unsent + self.outbox.ready(self.clock.seconds(), everything=True)
        sends = [part for batch in sends for part in batch.split(self.settings.batch)]
        # (records spilled to disk wait for the next start: the leave waits with them)
        leave = self.handed_over and not journal.spilling
        if leave:
            marks.mark_leaving(journal.directory)
        sends += self._handoff + self._handover
        acks, self.unsent, self._durable = self._durable, [], []
        leases = self.leases.release_all(self.clock.seconds())
        members = self.handover_members if leave else None
        d = self.worker(self._last_io, sends, acks, leases, members, self.ownership.unpublished())
        d.addCallbacks(self._stopped, self._stop_failed, callbackArgs=(journal,),
                       errbackArgs=(len(sends), len(acks)))  # fmt: skip
        return d

    def _last_io(
        self,
        sends: list[Outgoing],
        acks: list[Batch],
        leases: LeaseRound,
        members: list[str] | None,
        holds: frozenset[int] | None,
    ) -> bool:
        """The last round; with the ``members`` a handover was for, leave (True: left)."""
        tick_io(self, sends, acks, idle=None, renew=False, holds=holds)
        self.leases.run(leases)
        # (everything is in the streams: its partitions may go to the heirs)
        if members is not None and self.registry.hand_over(self.id, self.token, members):
            return True
        if self.token:
            self.registry.release(self.id, self.token)
        return False

    def _stopped(self, left: bool, journal: OutboxJournal) -> None:
        # (spilled records not yet sent wait for the next start, in their files)
        journal.close() if journal.spilling else journal.remove_all()
        if left:
            marks.mark_left(journal.directory, self.settings.crawl)
            logger.info("Agent %s left crawl %s", self.id, self.settings.crawl)
        elif self.handed_over:
            (journal.directory / marks.LEAVING).unlink(missing_ok=True)
            logger.warning("Agent %s did not leave (members changed, or spilled records "
                           "wait): the leave starts over at its next start", self.id)  # fmt: skip

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

    def send_as_it_leaves(self, batches: list[Outgoing]) -> None:
        """Batches (a handover's keys) to send last, just before it leaves the members."""
        self._handover += batches

    # -- the tick --------------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.clock.seconds()
        if now - self._renewed_at > self.settings.lease * 2 / 3:
            self.leases.lapse()  # no renewal for most of a lease: others may think it dead
        if self._io_running:
            return
        journal = self.journal
        assert journal is not None, "start() first"
        if now >= self._checkpoint_at:
            self._checkpoint_at = now + CHECKPOINT_S
            journal.checkpoint(now)
        locally_idle = self.locally_idle()
        self.router.began |= not locally_idle  # work of its own: the crawl has begun
        held = len(self.unsent)
        # with nothing of its own to fetch, the agent sends what it holds at once: the
        # crawl's last rounds of exchange wait for no batch age
        # batches by age: no more a tick than the open ones over the ticks in an age
        aged = math.ceil(len(self.outbox) * TICK / self.settings.age)
        sends = self.unsent + self.outbox.ready(now, everything=locally_idle, aged=aged)
        if self.failing_since is None and journal.spilling:
            sends += Outgoing.of_records(journal.replay(REPLAY_RECORDS))
        acks = self._durable
        self.unsent, self._durable = [], []
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
        status = self.status.due(now, idle, self.outbox.records, held)
        leases = self.leases.round(now) if self.leases.due(now) else None
        reads = not self.leaving
        taken = list(self.ownership.taken_over)  # (leaving too: what they hold is exported)
        handoff, holds = (
            list(self._handoff),
            self.ownership.unpublished(),
        )  # (kept until they are out)
        d = self.worker(tick_io, self, sends + handoff, acks, idle, renew, check, status,
                        self._orphans, leases, reads, taken, holds)  # fmt: skip
        d.addCallbacks(
            self._io_done,
            self._io_failed,
            callbackArgs=(sends, acks, idle, renew, reads, len(handoff), holds),
            errbackArgs=(sends, acks, leases),
        )
        self._ticking = d

    def _io_done(
        self,
        result: TickIO,
        sends: list[Outgoing],
        acks: list[Batch],
        idle: bool,
        renew: bool,
        reads: bool = True,
        handed_off: int = 0,
        holds: frozenset[int] | None = None,
    ) -> None:
        self._io_running = False
        del self._handoff[:handed_off]
        if holds is not None:
            self.ownership.published = holds
        self.failing_since = None
        self._orphans = False
        if self.journal is not None:
            self.journal.retire(self.outbox.oldest())
            self.journal.replayed()
        batches, members, done = result.batches, result.members, result.done
        if result.leases is not None:
            self.leases.apply(result.leases, self.clock.seconds())
        self._reads_over |= not reads
        self.ownership.read(result.taken_read)
        if not idle:
            self.quiesce(False)
        stats = self.stats
        if sends:
            stats.inc_value("irl/agent/batches_out", len(sends))
        if acks:
            stats.inc_value("irl/agent/batches_in", len(acks))
        if renew:
            self._renew_at = self.clock.seconds() + self.settings.lease / 3
            if result.leave and not self.leaving:
                if len(self.ownership.members) > 1:
                    self.leaving = True
                    self.on_leave()
                elif not self._alone_warned:
                    self._alone_warned = True
                    logger.warning(
                        "Agent %s was asked to leave crawl %s, but it is its only member: "
                        "it stays (stop it instead)",
                        self.id,
                        self.settings.crawl,
                    )
            self._renewed_at = self.clock.seconds()
            if result.held == TAKEN:
                self.leases.lapse()  # others may have taken its IPs as a dead agent's
            if not result.held:
                self.on_fatal(
                    f"agent {self.id!r} lost its lease in Redis to another process with the "
                    "same IRL_AGENT_ID: this one stops (its JOBDIR is resumable)"
                )
                return
            if members is not None and members != self.ownership.members:
                logger.info(
                    "Agent %s: the crawl's members changed from %s to %s",
                    self.id,
                    ", ".join(self.ownership.members),
                    ", ".join(members),
                )
                self._set_members(members)
        if batches:
            self._deliver(batches)
        if result.taken_read:
            self.router.own(self.ownership.routed_here)
        self.crawl_done, self.others_done = done

    def _io_failed(
        self,
        failure: Failure,
        sends: list[Outgoing],
        acks: list[Batch],
        leases: LeaseRound | None = None,
    ) -> None:
        self._io_running = False
        self.unsent = sends + self.unsent
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
        held = self.outbox.records + sum(len(batch) for batch in self.unsent)
        if held > SPILL_RECORDS and self.journal is not None:
            self.journal.spill()  # all of it is on disk: RAM lets go
            self.unsent = []
            self.outbox.clear()
            tally(
                logger,
                self.stats,
                "irl/agent/spills",
                "Agent %s: %d records to send while Redis is away; they wait on disk",
                self.id,
                held,
                level=logging.WARNING,
            )
        now = self.clock.seconds()
        if leases is not None:
            self.leases.failed(leases, now, len(self.ownership.members))
        if self.failing_since is None:
            self.failing_since = now
            tally(
                logger,
                self.stats,
                "irl/agent/redis_outages",
                "Agent %s cannot reach Redis (%s): crawling its own partitions, holding %d "
                "batches to send",
                self.id,
                failure.getErrorMessage(),
                len(self.unsent),
                level=logging.WARNING,
            )
        self.stats.inc_value("irl/agent/redis_errors")
        if now - self.failing_since >= REDIS_GIVE_UP:
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
            if len(batch.keys):  # (before any URL: irlscrapy.distributed.leave)
                self.deliver_keys(batch.keys)
                self.stats.inc_value("irl/agent/keys_in", len(batch.keys))
        self.stats.inc_value("irl/agent/urls_in", len(urls))
        if urls:
            self.deliver_urls(urls, auxes)
        if edges:
            self.deliver_edges(edges)
        self._durable += batches

    @property
    def reads_settled(self) -> bool:
        """Leaving, it reads no more, and every batch it read is acknowledged."""
        return self.leaving and self._reads_over and not self._durable and not self._io_running

    def _set_members(self, members: list[str]) -> None:
        lost = self.ownership.set_members(members)
        self.router.own(self.ownership.routed_here)
        if lost and self.journal is not None:  # a new loss: a new salt to hand over under
            self.ownership.set_salt("handoff", marks.new_salt(self.journal.directory, "handoff"))
            self.on_hand_off(lost)

    def hand_off(self, partitions: frozenset[int], keys: list[Outgoing]) -> None:
        """The keys of a handoff of ``partitions`` (irlscrapy.distributed.join): sent
        at the next round of I/O, and Redis then learns this agent holds them no more."""
        self._handoff += keys
        self.ownership.released(partitions)
