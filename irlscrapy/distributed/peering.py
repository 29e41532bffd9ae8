"""``AgentPeers``: the multi-agent mode behind the scheduler's
:class:`irlscrapy.scheduler.peers.Peers`.

It joins this process's :class:`irlscrapy.distributed.agent.Agent` to the local crawl:
what other agents send goes to the intake (URLs, and the keys of a leaver) and to STAR
(PLD edges); a handoff (:mod:`irlscrapy.distributed.join`) forwards the frontier's
URLs of partitions this agent lost (``Frontier.forward``); the IP leases
(:mod:`irlscrapy.distributed.ipleases`) wrap the workbench's IP delay; a leave
(:mod:`irlscrapy.distributed.leave`) begins when Redis asks for it. The agent learns
from the crawl whether it is idle, and parks its parked URLs while the whole crawl is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from twisted.internet import defer

from irlscrapy.distributed.agent import Agent
from irlscrapy.distributed.join import Handoff
from irlscrapy.distributed.leave import Departure
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.peers import LocalCrawl


class AgentPeers:
    shared = True

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.departure: Departure | None = None  # how the agent leaves, once joined

    @classmethod
    def from_crawler(cls, crawler: Any, clock: Any) -> AgentPeers:
        agent = Agent.from_crawler(crawler, clock)
        assert agent is not None, "AgentPeers is chosen with IRL_REDIS_URL set"
        return cls(agent)

    def join(self, crawl: LocalCrawl) -> None:
        agent, intake, frontier, dispatcher = (
            self.agent,
            crawl.intake,
            crawl.frontier,
            crawl.dispatcher,
        )
        if not intake.urlseen.identity.url_only:
            raise ConfigurationError(
                "the multi-agent mode sends URLs to their owners, so requests must be keyed "
                "by their URL: use Scrapy's default REQUEST_FINGERPRINTER_CLASS"
            )
        agent.deliver_urls = intake.receive
        agent.deliver_keys = intake.receive_keys
        handoff = Handoff(agent, intake, frontier, crawl.crawler.stats, crawl.clock)
        agent.on_hand_off = handoff.begin
        frontier.forward = handoff.forward
        self.departure = Departure(
            agent, intake, frontier, dispatcher, crawl.crawler, crawl.clock, lambda: handoff.active
        )
        agent.on_leave = self.departure.begin
        if crawl.indegree is not None:
            agent.deliver_edges = crawl.indegree.record_edges
        agent.locally_idle = lambda: (
            not (
                dispatcher.has_pending_requests()
                or len(dispatcher.ledger)
                or frontier.holds.parked.replay_waits  # (found while it said it was idle)
                or handoff.active
            )
        )
        agent.fetching = lambda: bool(len(dispatcher.ledger))
        workbench = frontier.workbench
        workbench.ip_delay = agent.leases.ip_delay(workbench.ip_delay)
        agent.leases.attach(workbench, crawl.wake)

        def quiesce(idle: bool) -> None:
            """The agent says the crawl is idle (True), or busy again: parked URLs wait
            meanwhile, then go back to BEAST, and the engine is woken for them."""
            frontier.holds.hold_parked(idle)
            if not idle:
                crawl.wake()

        agent.quiesce = quiesce
        agent.on_fatal = lambda message: crawl.give_up(message, "irlscrapy_agent_stopped")
        agent.start(crawl.directory)
        handoff.attach()

    def route_urls(self, urls: list[str], auxes: list[bytes]) -> tuple[list[str], list[bytes]]:
        return self.agent.router.route_urls(urls, auxes)

    def route_edges(self, source: str, targets: set[str]) -> Iterable[str]:
        return self.agent.router.route_edges(source, targets)

    @property
    def kept_salt(self) -> int | None:
        return self.agent.ownership.kept_salt

    @property
    def crawl_done(self) -> bool:
        return self.agent.crawl_done

    def may_give_up(self) -> bool:
        # (URLs behind an IP another agent holds are not given up: that agent is busy)
        return self.agent.others_done and not self.agent.leases.wanted

    @property
    def leaving(self) -> bool:
        return self.departure is not None and self.departure.begun

    def stop(self) -> defer.Deferred[None]:
        return self.agent.stop()

    def figures(self) -> dict[str, int]:
        agent = self.agent
        failing = agent.failing_since
        return {
            "agent_partitions": len(agent.ownership.owned),
            "agent_members": len(agent.ownership.members),
            "agent_outbox": agent.outbox.records,
            "agent_unsent_batches": len(agent.unsent),
            "agent_redis_failing_seconds": (
                0 if failing is None else int(agent.clock.seconds() - failing)
            ),
            **agent.leases.figures(),
        }
