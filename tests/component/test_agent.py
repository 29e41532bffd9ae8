"""One agent against a real redis-server, on a simulated clock with its Redis I/O run
in place: what it sends when, and when its outbox journal's files may go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from twisted.internet import defer
from twisted.python.failure import Failure

from harness.redisserver import RedisServer
from irlscrapy.distributed import agent as agent_module
from irlscrapy.distributed.agentsettings import CHECKPOINT_S, TICK
from irlscrapy.distributed.peering import AgentPeers
from irlscrapy.distributed.streams import Batch, Exchange, Outgoing

from .agentfixture import AGE, PARTITIONS, advance, foreign_url, sent_urls


def test_a_busy_agent_sends_a_batch_by_age_and_keeps_its_journal_until_then(
    make_agent: Any, redis_client: redis.Redis, tmp_path: Path
) -> None:
    agent, clock = make_agent()
    url = foreign_url("ab")
    assert agent.router.route_urls([url], [b"aux"]) == ([], [])
    figures = AgentPeers(agent).figures()
    assert figures["agent_outbox"] == 1 and figures["agent_members"] == 2
    assert 0 < figures["agent_partitions"] < PARTITIONS
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
    agent.router.route_urls([url], [b""])
    advance(clock, TICK)
    assert sent_urls(redis_client) == [url]


@pytest.mark.parametrize(("cache_slots", "sent"), [(1 << 10, 1), (0, 3)])
def test_the_cache_sends_a_url_once_and_without_it_every_time(
    make_agent: Any, redis_client: redis.Redis, cache_slots: int, sent: int
) -> None:
    agent, clock = make_agent(cache_slots=cache_slots, busy=False)
    url = foreign_url("ab", "/popular")
    for _ in range(3):
        agent.router.route_urls([url], [b""])
        advance(clock, TICK)
    assert sent_urls(redis_client) == [url] * sent


def test_batches_read_by_a_tick_that_failed_are_read_again_and_delivered(
    make_agent: Any, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, clock = make_agent()
    delivered: list[str] = []
    agent.deliver_urls = lambda urls, auxes: delivered.extend(urls)
    p = min(agent.ownership.owned)
    sender = Exchange(agent.registry, "b")
    sent = Outgoing(p)
    sent.add(Batch(p, ["http://mine.com/"], [b""]).encode())
    sender.send([sent])
    read = agent.exchange.read

    def read_then_lose_the_reply(*args: Any) -> list[Batch]:
        read(*args)
        monkeypatch.setattr(agent.exchange, "read", read)
        raise redis.ConnectionError("the reply was lost")

    monkeypatch.setattr(agent.exchange, "read", read_then_lose_the_reply)
    advance(clock, TICK)
    assert delivered == []  # read, pending at Redis, never delivered
    advance(clock, TICK)
    assert delivered == ["http://mine.com/"]
    advance(clock, TICK)  # acknowledged, deleted
    assert redis_client.xlen(agent.exchange.stream(p)) == 0


def test_an_agent_busy_with_its_own_work_says_the_crawl_has_begun(
    make_agent: Any, redis_client: redis.Redis
) -> None:
    make_agent(busy=True)  # work of its own, nothing routed
    assert redis_client.get("irl:{c}:seeded") == b"1"


def test_a_tick_that_raises_stops_the_crawl_with_a_message(
    make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, clock = make_agent()
    fatal: list[str] = []
    agent.on_fatal = fatal.append

    def disk_full(now: float) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(agent.journal, "checkpoint", disk_full)
    advance(clock, CHECKPOINT_S + TICK)
    assert fatal and "can no longer exchange" in fatal[0] and "No space" in fatal[0]


class HeldTicks:
    """A Redis worker whose ticks wait until the test ends them (the rest run at once)."""

    def __init__(self) -> None:
        self.ticks: list[tuple[defer.Deferred[Any], Any, tuple[Any, ...]]] = []

    def __call__(self, f: Any, *args: Any) -> defer.Deferred[Any]:
        if f.__name__ != "tick_io":
            return defer.maybeDeferred(f, *args)
        d: defer.Deferred[Any] = defer.Deferred()
        self.ticks.append((d, f, args))
        return d

    def end(self, lose: bool = False) -> None:
        d, f, args = self.ticks.pop(0)
        if lose:
            d.errback(Failure(redis.ConnectionError("Redis went away")))
        else:
            d.callback(f(*args))


def test_a_stop_waits_for_the_tick_under_way_and_sends_what_it_could_not(
    make_agent: Any, redis_client: redis.Redis, tmp_path: Path
) -> None:
    ticks = HeldTicks()
    agent, clock = make_agent(busy=False, worker=ticks)
    ticks.end()  # the first tick, at start
    url = foreign_url("ab")
    agent.router.route_urls([url], [b""])
    clock.advance(TICK)  # a tick takes the URL's batch, and is under way...
    stopped = agent.stop()  # ...when the crawl closes
    assert not stopped.called
    ticks.end(lose=True)  # the tick fails: its batch goes back to be sent
    assert stopped.called and sent_urls(redis_client) == [url]
    assert list((tmp_path / "outbox").glob("outbox-*.rec")) == []


def test_what_redis_cannot_take_waits_on_disk_past_a_bound_and_all_of_it_arrives(
    make_agent: Any,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(Last in this module: it stops the module's redis-server, and starts it again.)"""
    monkeypatch.setattr(agent_module, "SPILL_RECORDS", 5)
    monkeypatch.setattr(agent_module, "REPLAY_RECORDS", 3)
    agent, clock = make_agent()
    fatal: list[str] = []
    agent.on_fatal = fatal.append
    urls = [foreign_url("ab", f"/{n}") for n in range(12)]
    redis_server.stop()
    try:
        for url in urls:
            agent.router.route_urls([url], [b""])
            advance(clock, TICK)
            held = AgentPeers(agent).figures()["agent_outbox"]
            assert held <= 5  # RAM lets go past the bound
        assert agent.stats.values["irl/agent/spills"] >= 2
        assert agent.stats.values["irl/agent/redis_outages"] == 1  # one outage, many ticks
        assert AgentPeers(agent).figures()["agent_redis_failing_seconds"] > 0
    finally:
        redis_server.start()
    advance(clock, TICK)  # this Redis keeps no data: the agent says so, and stops
    assert fatal and "lost its data" in fatal[0]
    agent.registry.add_member("b")  # as a Redis with its data has them
    agent.exchange.create_groups(range(PARTITIONS))
    advance(clock, TICK)
    assert agent.journal.spilling  # read back 3 a tick
    advance(clock, AGE)
    assert set(sent_urls(redis_client)) == set(urls)
    assert not agent.journal.spilling
    assert len(list((tmp_path / "outbox").glob("outbox-*.rec"))) == 1
