"""An agent against the module's redis-server on a simulated clock, its Redis I/O run in
place (no thread): the ``make_agent`` fixture of the agent's component tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from twisted.internet import defer, task

from harness.redisserver import RedisServer
from irlscrapy.distributed.agent import Agent
from irlscrapy.distributed.agentsettings import CHECKPOINT_S, TICK, AgentSettings
from irlscrapy.distributed.partitions import owner, partition_of
from irlscrapy.distributed.streams import entry_batch
from irlscrapy.domains import ICANN

PARTITIONS = 16
AGE = 3 * CHECKPOINT_S


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] += count

    def get_value(self, key: str, default: int = 0) -> int:
        return self.values.get(key, default)


def foreign_url(agents: str, path: str = "/") -> str:
    """A URL whose PLD agent ``agents[1]`` owns."""
    for n in range(1000):
        pld = f"site{n}.com"
        if owner(partition_of(pld, PARTITIONS), agents) == agents[1]:
            return f"http://www.{pld}{path}"
    raise AssertionError("no PLD of the second agent")


@pytest.fixture
def make_agent(
    redis_server: RedisServer, redis_client: redis.Redis, tmp_path: Path
) -> Iterator[Any]:
    made: list[Agent] = []

    def make(
        cache_slots: int = 1 << 10, busy: bool = True, worker: Any = None
    ) -> tuple[Agent, task.Clock]:
        settings = AgentSettings(
            redis_url=redis_server.url, crawl="c", agent="a", agents=("a", "b"),
            partitions=PARTITIONS, lease=3.5, batch=1000, age=AGE, cache_slots=cache_slots,
        )  # fmt: skip
        clock = task.Clock()
        agent = Agent(
            settings,
            ICANN,
            Stats(),
            clock,
            worker=worker or (lambda f, *a: defer.maybeDeferred(f, *a)),
        )
        agent.locally_idle = lambda: not busy
        agent.fetching = lambda: busy
        agent.start(tmp_path / "outbox")
        made.append(agent)
        return agent, clock

    yield make
    for agent in made:
        agent.stop()


def sent_urls(client: redis.Redis) -> list[str]:
    """The URLs in every partition's stream."""
    return [
        url
        for p in range(PARTITIONS)
        for _, fields in client.xrange(f"irl:{{c}}:p:{p}")
        for url in entry_batch(p, b"", fields).urls
    ]


def advance(clock: task.Clock, seconds: float) -> None:
    for _ in range(round(seconds / TICK)):
        clock.advance(TICK)
