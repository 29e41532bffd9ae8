"""A crawl's registry in a real redis-redis_server: configuration, members, leases."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
import redis

from harness.redisserver import RedisServer
from irlscrapy.distributed.registry import CrawlConfig, CrawlRegistry
from irlscrapy.exceptions import AgentConflict, ConfigurationError


def registry(redis_client: redis.Redis, partitions: int = 64, crawl: str = "c1") -> CrawlRegistry:
    return CrawlRegistry(redis_client, crawl, CrawlConfig(partitions))


def test_the_first_agent_stores_the_configuration_and_the_others_must_agree(
    redis_client: redis.Redis,
) -> None:
    registry(redis_client).ensure_config()
    registry(redis_client).ensure_config()  # the same: fine
    with pytest.raises(ConfigurationError, match=r"partitions: the crawl's 64, this agent's 32"):
        registry(redis_client, partitions=32).ensure_config()
    registry(redis_client, partitions=32, crawl="c2").ensure_config()  # another crawl: its own
    assert sorted(redis_client.keys("*config")) == [
        b"irl:{c1}:config",
        b"irl:{c2}:config",
    ]


@pytest.mark.parametrize("bad", ["", "a:b", "a{b", "tab\t"])
def test_a_crawl_id_that_would_break_the_key_layout_is_refused(
    redis_client: redis.Redis, bad: str
) -> None:
    with pytest.raises(ConfigurationError, match="IRL_CRAWL_ID"):
        registry(redis_client, crawl=bad)


def test_members_stay_until_they_leave_whatever_their_leases(redis_client: redis.Redis) -> None:
    reg = registry(redis_client)
    a = reg.join("a", lease_s=0.3)
    reg.join("b", lease_s=0.3)
    assert reg.members() == ["a", "b"] and reg.alive("a") and reg.alive("b")
    time.sleep(0.5)  # both "killed": their leases lapse, their partitions stay theirs
    assert reg.members() == ["a", "b"] and not reg.alive("a")
    assert reg.member("b")["pid"] > 0  # type: ignore[index]
    assert not reg.hand_over("a", a, ["a"]), "the members changed since its handover"
    assert reg.hand_over("a", a, ["a", "b"])
    assert reg.members() == ["b"] and reg.has_left("a")
    assert not reg.hand_over("b", "token", ["b"]), "the last member stays"
    reg.add_member("a")  # IRL_AGENT_MEMBERS of an agent that starts: a left, it stays out
    assert reg.members() == ["b"]
    reg.join("a", lease_s=0.3)  # a itself joins again (with a new JOBDIR)
    assert reg.members() == ["a", "b"] and not reg.has_left("a")


def test_one_agent_id_cannot_run_twice(redis_client: redis.Redis) -> None:
    reg = registry(redis_client)
    token = reg.join("a", lease_s=5)
    started = time.monotonic()
    with pytest.raises(AgentConflict, match="agent 'a' of crawl 'c1' is already running"):
        reg.join("a", lease_s=5, wait_s=0.3)
    assert time.monotonic() - started >= 0.3
    assert reg.renew("a", token, 5)  # the holder keeps it
    reg.release("a", token)
    assert reg.join("a", lease_s=5, wait_s=0)  # released: taken at once


def test_a_killed_agent_restarted_takes_its_lease_once_it_lapses(redis_server: RedisServer) -> None:
    """The holder dies without releasing (kill -9): a restart with the same id waits up
    to one lease, takes it when it lapses, and the dead token cannot renew any more."""
    context = multiprocessing.get_context("spawn")
    holder = context.Process(target=_hold_forever, args=(redis_server.url,))
    holder.start()
    redis_client = redis_server.client()
    redis_client.flushall()
    reg = registry(redis_client)
    deadline = time.monotonic() + 20
    while not reg.alive("a"):
        assert time.monotonic() < deadline, "the holder never took its lease"
        time.sleep(0.05)
    holder.kill()
    holder.join()
    started = time.monotonic()
    token = reg.join("a", lease_s=1.0)
    assert 0.2 < time.monotonic() - started < 1.5
    assert reg.renew("a", token, 1.0)
    assert not reg.renew("a", "the dead one's token", 1.0)
    redis_client.close()


def _hold_forever(url: str) -> None:
    reg = registry(redis.Redis.from_url(url))
    token = reg.join("a", lease_s=1.0)
    while reg.renew("a", token, 1.0):
        time.sleep(0.1)


def test_keys_of_a_crawl_share_one_cluster_slot(redis_client: redis.Redis, tmp_path: Path) -> None:
    reg = registry(redis_client)
    reg.ensure_config()
    reg.join("a", lease_s=5)
    keys = redis_client.keys("irl:*")
    assert len(keys) == 3 and all(k.startswith(b"irl:{c1}:") for k in keys)
