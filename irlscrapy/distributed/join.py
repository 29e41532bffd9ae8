"""An agent that loses partitions to an agent that joins hands them off: the keys of the
URLs it has seen, and the URLs it holds of them.

Theory of operation
-------------------
When the members change and this agent no longer owns partitions it holds
(:mod:`irlscrapy.distributed.ownership`), it stays in the crawl and a :class:`Handoff`
runs:

1. *Forward.* The router sends their new URLs to their owners at once (it follows the
   members). The frontier forwards the stored URLs it has of their hosts to their
   partitions' streams: those in RAM at once (the workbench's, the bench's, those
   waiting for DNS), the others (BEAST's, the parked store's) as they come up
   (:attr:`irlscrapy.scheduler.stages.Frontier.foreign`), each *handed over* as a
   leaving agent's are (:mod:`irlscrapy.distributed.leave`): its new owner admits
   it although the keys below say it was seen (it was, here, and never fetched).
2. *Settle.* It waits until URLseen has merged and stored every URL submitted before the
   change (the last ones of those partitions this agent admitted), and until no fetch
   of their hosts is in flight and each such host is due again (its delay, or a
   back-off, has passed; :data:`HOST_WAIT_S` at most).
3. *Keys.* With URLseen's merges held, it reads every key URLseen holds and sends them
   to each agent that takes one of the partitions (keys carry no partition, as in
   :mod:`irlscrapy.distributed.leave`).
4. *Release.* The keys go out, then Redis learns that this agent holds the partitions no
   more, in one round of I/O. Their new owners read their backlog then, keys first: no
   URL this agent has seen is admitted again, and each URL it forwards is admitted once.

After a restart the frontier forwards from the start (:meth:`Handoff.attach`): what
the admitted journal puts back in RAM, and what BEAST holds, of partitions this agent
no longer owns still goes to their owners.

A kill -9 during a handoff: Redis still says the agent holds the partitions, so the
handoff starts over when it starts again, under the same salt
(:mod:`irlscrapy.distributed.leavemarks`): keys sent twice change nothing, and a URL
forwarded again (its mark in the admitted journal was lost with the kill) is admitted
once. Each new loss of partitions hands off under a new salt, so a URL that comes back
to this agent and goes again is admitted again.

Politeness: the new owner reaches a moved host only after the release, which waits for
this agent's last fetch there and the host's delay after it; the IP delay holds
throughout (:mod:`irlscrapy.distributed.ipleases`). Not handed off: STAR's in-degrees
of the moved PLDs (their new owner counts from the links it receives from then on),
robots.txt rules and host health (learnt again), and Requests that cannot be stored
(they stay, and are fetched, here).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from twisted.internet import task

from irlscrapy.distributed.leave import SAY_EVERY_S, SETTLE_POLL_S, heir_batches
from irlscrapy.distributed.partitions import assignment
from irlscrapy.distributed.streams import Outgoing
from irlscrapy.scheduler.intake import handed_off_aux
from irlscrapy.scheduler.requestcodec import payload_url

if TYPE_CHECKING:
    from irlscrapy.distributed.agent import Agent
    from irlscrapy.scheduler.frontieritems import Item
    from irlscrapy.scheduler.intake import Intake
    from irlscrapy.scheduler.stages import Frontier

logger = logging.getLogger(__name__)

#: Seconds the release waits at most for a moved host to be due again (a host resting
#: after failures, or retired, is not waited for).
HOST_WAIT_S = 30.0


class Handoff:
    """The handing agent's side (see the module docstring): :meth:`begin` with the
    partitions it lost; it hands the keys to the agent once settled."""

    def __init__(self, agent: Agent, intake: Intake, frontier: Frontier, stats: Any, clock: Any):
        self.agent = agent
        self.intake = intake
        self.frontier = frontier
        self.stats = stats
        self.clock = clock
        self.lost: frozenset[int] = frozenset()  # partitions to hand off
        self._hosts: list[str] = []  # their hosts the workbench had when it began
        self._merge: int | None = None  # the URLseen merge that must be stored first
        self._hosts_until = 0.0  # the end of the wait for their hosts (HOST_WAIT_S)
        self._loop: task.LoopingCall | None = None
        self._say_at = 0.0  # when to say what it waits for

    @property
    def active(self) -> bool:
        return bool(self.lost)

    def attach(self) -> None:
        """The agent has joined (its ownership is known): from now on the frontier
        forwards what it holds of partitions this agent does not own, those the admitted
        journal put back in RAM at the restart first."""
        if self.frontier.foreign is None:
            self.frontier.take_foreign(self._foreign)

    def begin(self, lost: frozenset[int]) -> None:
        """Hand off ``lost`` (partitions this agent holds and no longer owns)."""
        self.lost |= lost
        self._merge = None  # (the first look sets it: URLs delivered with the change)
        hosts, forwarded = self.frontier.take_foreign(self._foreign)
        self._hosts = sorted(set(self._hosts) | set(hosts))
        self._say_at = self.clock.seconds() + SAY_EVERY_S
        self._hosts_until = self.clock.seconds() + HOST_WAIT_S
        logger.info(
            "Agent %s hands off %d partitions it no longer owns (members %s): %d URLs it "
            "held in RAM forwarded, the rest as they come up",
            self.agent.id,
            len(lost),
            ", ".join(self.agent.ownership.members),
            forwarded,
        )
        if self._loop is None:
            self._loop = task.LoopingCall(self._look)
            self._loop.clock = self.clock
            self._loop.start(SETTLE_POLL_S, now=False)

    def _foreign(self, host: str) -> bool:
        agent = self.agent
        return agent.router.partitions.of_host(host) not in agent.ownership.owned

    def forward(self, priority: int, item: Item) -> None:
        """A stored URL of a host another agent now owns goes there (Frontier.forward)."""
        payload, id_ = item
        self.agent.router.hand_over_urls(
            [payload_url(payload)], [handed_off_aux(priority, payload, self.agent.ownership.salt)]
        )
        self.frontier.journal.done(id_)  # (after its record is in the outbox's journal)
        self.stats.inc_value("irl/agent/urls_handed_off")

    def waiting_for(self) -> list[str]:
        """What the handoff still waits for (empty: nothing, or no handoff)."""
        if not self.lost:
            return []
        intake, now = self.intake, self.clock.seconds()
        if self._merge is None:
            self._merge = intake.merges + 1 if intake.pending else intake.merges
        stored = intake.merges_stored >= self._merge
        if not stored and intake.pending and not intake.merging:
            intake.flush()  # (the merge it waits for; later ones come as they would)
        hosts = self.frontier.workbench.hosts
        self._hosts = [
            host
            for host in self._hosts
            if (state := hosts.get(host)) is not None
            and (state.in_flight or (state.next_fetch > now and now < self._hosts_until))
        ]
        waits = {
            "URLs of before the change to store": not stored,
            "fetches or host delays of their hosts": self._hosts,
        }
        return [what for what, count in waits.items() if count]

    def _look(self) -> None:
        waits, intake = self.waiting_for(), self.intake
        if waits:
            intake.hold_merges(False)
            now = self.clock.seconds()
            if now >= self._say_at:
                self._say_at = now + SAY_EVERY_S
                logger.info("Agent %s hands off once it has no %s", self.agent.id, ", ".join(waits))
            return
        if intake.merging:  # (URLseen's keys are read between merges: none starts meanwhile)
            intake.hold_merges(True)
            return
        lost, keys = self.lost, self._keys()
        intake.hold_merges(False)
        self.agent.hand_off(lost, keys)
        logger.info(
            "Agent %s handed off %d partitions: %d keys of URLs it has seen go to their owners",
            self.agent.id,
            len(lost),
            sum(len(batch.keys) // 8 for batch in keys),
        )
        self.lost = frozenset()
        assert self._loop is not None
        self._loop.stop()
        self._loop = None

    def _keys(self) -> list[Outgoing]:
        """Every key URLseen holds, for each agent that takes one of the partitions."""
        agent = self.agent
        owners = assignment(agent.ownership.members, agent.settings.partitions)
        heirs = {owner: parts for owner, parts in owners.items() if owner != agent.id}
        drum = self.intake.urlseen.drum
        assert drum is not None
        batches: list[Outgoing] = []
        for stored, _ in drum.items():
            batches += heir_batches(stored, heirs, self.lost)
        return batches
