"""One agent against a real redis-server, on a simulated clock with its Redis I/O run
in place: what it sends when, and when its outbox journal's files may go."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from twisted.internet import defer, task

from irlscrapy.distributed.agent import CHECKPOINT_S, TICK, Agent, AgentSettings
from irlscrapy.distributed.partitions import owner, partition_of
from irlscrapy.distributed.streams import Batch
from irlscrapy.domains import ICANN
from tests.redisserver import RedisServer

PARTITIONS = 16
AGE = 3 * CHECKPOINT_S


class Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] += count


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

    def make(cache_slots: int = 1 << 10, busy: bool = True) -> tuple[Agent, task.Clock]:
        settings = AgentSettings(
            redis_url=redis_server.url, crawl="c", agent="a", agents=("a", "b"),
            partitions=PARTITIONS, lease=3.5, batch=1000, age=AGE, cache_slots=cache_slots,
        )  # fmt: skip
        clock = task.Clock()
        agent = Agent(
            settings, ICANN, Stats(), clock, worker=lambda f, *a: defer.maybeDeferred(f, *a)
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
        for url in Batch.decode(p, fields[b"b"]).urls
    ]


def advance(clock: task.Clock, seconds: float) -> None:
    for _ in range(round(seconds / TICK)):
        clock.advance(TICK)


def test_a_busy_agent_sends_a_batch_by_age_and_keeps_its_journal_until_then(
    make_agent: Any, redis_client: redis.Redis, tmp_path: Path
) -> None:
    agent, clock = make_agent()
    url = foreign_url("ab")
    assert agent.route_urls([url], [b"aux"]) == ([], [])
    advance(clock, CHECKPOINT_S + TICK)  # a checkpoint retired the file holding the URL
    assert sent_urls(redis_client) == []
    files = sorted((tmp_path / "outbox").glob("outbox-*.rec"))
    assert len(files) == 2, files  # the retired generation waits: its URL is not sent
    advance(clock, AGE)
    assert sent_urls(redis_client) == [url]
    assert len(list((tmp_path / "outbox").glob("outbox-*.rec"))) == 1


def test_an_agent_with_nothing_to_fetch_sends_at_once(
    make_agent: Any, redis_client: redis.Redis
) -> None:
    agent, clock = make_agent(busy=False)
    url = foreign_url("ab")
    agent.route_urls([url], [b""])
    advance(clock, TICK)
    assert sent_urls(redis_client) == [url]


@pytest.mark.parametrize(("cache_slots", "sent"), [(1 << 10, 1), (0, 3)])
def test_the_cache_sends_a_url_once_and_without_it_every_time(
    make_agent: Any, redis_client: redis.Redis, cache_slots: int, sent: int
) -> None:
    agent, clock = make_agent(cache_slots=cache_slots, busy=False)
    url = foreign_url("ab", "/popular")
    for _ in range(3):
        agent.route_urls([url], [b""])
        advance(clock, TICK)
    assert sent_urls(redis_client) == [url] * sent
