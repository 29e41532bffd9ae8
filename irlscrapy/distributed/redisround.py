"""One round of an agent's Redis I/O, on its Redis thread (irlscrapy.distributed.agent
says what a tick does): publish its idle flag, seeded flag and status, send the batches
due (and a handoff's keys, then what it holds), acknowledge and delete the batches made
durable, run the IP leases' round, read its partitions' batches (those it has taken
over whole, once nobody else holds them), renew its lease and read the members, and ask
whether the crawl is done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from irlscrapy.distributed.agentsettings import READ_COUNT
from irlscrapy.distributed.crawlview import AgentStatus
from irlscrapy.distributed.ipleases import LeaseReply, LeaseRound
from irlscrapy.distributed.streams import Batch, Outgoing


@dataclass
class TickIO:
    """What a tick's Redis I/O found."""

    batches: list[Batch] = field(default_factory=list)  # read
    members: list[str] | None = None  # the crawl's members (read at a renewal)
    held: int = 1  # its agent id's lease: 0 lost, 1 renewed, TAKEN anew (it had lapsed)
    done: tuple[bool, bool] = (False, False)  # (the crawl is done, every other agent is)
    leases: LeaseReply | None = None  # the IP leases' round
    leave: bool = False  # an operator asked this agent to leave (irlscrapy agents leave)
    taken_read: list[int] = field(default_factory=list)  # partitions taken over, read


def tick_io(
    agent: Any,  # (irlscrapy.distributed.agent.Agent, which imports this module)
    sends: list[Outgoing],
    acks: list[Batch],
    idle: bool | None,
    renew: bool,
    check: bool = False,
    status: AgentStatus | None = None,
    orphans: bool = False,
    leases: LeaseRound | None = None,
    reads: bool = True,
    taken: Sequence[int] = (),
    holds: frozenset[int] | None = None,
) -> TickIO:
    """One round of ``agent``'s Redis I/O (on its Redis thread, one at a time: the
    worker has one thread); see the module docstring. ``holds``: what the agent holds
    now, to publish after ``sends`` (a handoff's keys come first)."""
    registry, exchange = agent.registry, agent.exchange
    pipe = registry.client.pipeline(transaction=False)
    if idle is not None and idle != agent.published_idle:
        pipe.hset(registry.key("idle"), agent.id, "1" if idle else "0")
    seeding = agent.router.began and not agent.seeded_published
    if seeding:
        pipe.set(registry.key("seeded"), "1", nx=True)
    if status is not None:
        pipe.hset(registry.key("status"), agent.id, status.to_json())
    exchange.queue(pipe, sends)
    if holds is not None:
        registry.publish_holds(pipe, agent.id, holds)
    if len(pipe):
        pipe.execute()
    agent.seeded_published |= seeding
    if idle is not None:
        agent.published_idle = idle
    exchange.done(acks)
    got = TickIO()
    if idle is None:
        return got
    got.leases = agent.leases.run(leases) if leases is not None else None
    owned = sorted(agent.ownership.owned)
    # (every batch delivered is acknowledged by now: what is pending was lost)
    held = sorted(agent.ownership.holds)
    got.batches = exchange.pending(held, 1 << 30) if orphans and reads else []
    if taken:  # (read once no other agent holds them: irlscrapy.distributed.ownership)
        got.taken_read = agent.ownership.readable(list(taken), registry.holds())
        owned = [p for p in owned if p not in taken or p in got.taken_read]
        taken = got.taken_read
    for p in taken:  # a partition handed over: what a dead owner never acknowledged
        got.batches += exchange.claim(p, int(agent.settings.lease * 2000), 1 << 30)
    got.batches += exchange.read(taken, 1 << 30, None)  # then its whole backlog
    if reads:
        got.batches += exchange.read(owned, READ_COUNT, None)
    if renew:
        got.held = registry.renew(agent.id, agent.token, agent.settings.lease)
        got.members = registry.members()
        got.leave = bool(registry.client.exists(registry.key("leave", agent.id)))
    if check and not got.batches:
        got.done = registry.crawl_done(exchange.stream(""), agent.settings.partitions, agent.id)
    return got
