"""One agent's settings (irlscrapy.defaults.agents), read and checked, and the
agent's fixed timings and bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irlscrapy import defaults
from irlscrapy.distributed.partitions import check_partitions
from irlscrapy.distributed.registry import check_crawl_id
from irlscrapy.exceptions import ConfigurationError

#: Seconds between two rounds of Redis I/O.
TICK = 1.0
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


@dataclass(frozen=True)
class AgentSettings:
    redis_url: str
    crawl: str
    agent: str
    agents: tuple[str, ...]
    partitions: int
    lease: float
    batch: int
    age: float
    cache_slots: int
    ip_round: float = 2.0  # IRL_AGENT_IP_ROUND
    private_suffixes: bool = False  # IRL_STAR_PRIVATE_SUFFIXES: what a PLD is

    @classmethod
    def from_settings(cls, settings: Any, spider_name: str) -> AgentSettings | None:
        """The multi-agent settings; None when IRL_REDIS_URL is empty (one process)."""
        url = defaults.get(settings, "IRL_REDIS_URL")
        if not url:
            return None
        agent = defaults.get(settings, "IRL_AGENT_ID")
        if not agent:
            raise ConfigurationError(
                "IRL_REDIS_URL is set, so this is one agent of a multi-agent crawl: set "
                "IRL_AGENT_ID to a name unique within the crawl, the same at every restart "
                "of this agent (with its JOBDIR)"
            )
        agents = tuple(defaults.get(settings, "IRL_AGENT_MEMBERS"))
        for name in (agent, *agents):
            check_crawl_id(name)  # the same rules as the crawl id: it is part of keys
            if "|" in name or "," in name:  # (separators of the IP leases' values)
                raise ConfigurationError(f"an agent id may not hold '|' or ',' (got {name!r})")
        got = cls(
            redis_url=url,
            crawl=check_crawl_id(defaults.get(settings, "IRL_CRAWL_ID") or spider_name),
            agent=agent,
            agents=agents,
            partitions=check_partitions(defaults.get(settings, "IRL_AGENT_PARTITIONS")),
            lease=defaults.get(settings, "IRL_AGENT_LEASE"),
            batch=defaults.get(settings, "IRL_EXCHANGE_BATCH"),
            age=defaults.get(settings, "IRL_EXCHANGE_AGE"),
            cache_slots=defaults.get(settings, "IRL_EXCHANGE_CACHE"),
            ip_round=defaults.get(settings, "IRL_AGENT_IP_ROUND"),
            private_suffixes=defaults.get(settings, "IRL_STAR_PRIVATE_SUFFIXES"),
        )
        if got.lease <= 3 * TICK:
            raise ConfigurationError(f"IRL_AGENT_LEASE must exceed {3 * TICK:g} s")
        if got.ip_round < TICK:
            raise ConfigurationError(f"IRL_AGENT_IP_ROUND must be at least {TICK:g} s")
        if got.batch < 1 or got.age <= 0:
            raise ConfigurationError("IRL_EXCHANGE_BATCH and IRL_EXCHANGE_AGE must be positive")
        if got.cache_slots < 0 or got.cache_slots & (got.cache_slots - 1):
            raise ConfigurationError("IRL_EXCHANGE_CACHE must be 0 (off) or a power of two")
        return got
