"""``irlscrapy agents seed``, ``status``, ``leave`` and ``remove`` against a real redis-server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from harness.redisserver import RedisServer
from irlscrapy.cli import main
from irlscrapy.distributed.crawlview import STATUS_EVERY
from irlscrapy.distributed.partitions import partition_of
from irlscrapy.distributed.streams import Batch, entry_batch
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.intake import seed_aux

from .agentfixture import advance

SEEDS = ["http://www.a.com/", "http://b.org/x", "https://c.net/"]


def stream_urls(client: redis.Redis, crawl: str, partitions: int) -> dict[int, list[Batch]]:
    found: dict[int, list[Batch]] = {}
    for p in range(partitions):
        for _, fields in client.xrange(f"irl:{{{crawl}}}:p:{p}"):
            found.setdefault(p, []).append(entry_batch(p, b"", fields))
    return found


def test_seed_creates_the_crawl_and_sends_each_url_to_its_partition(
    redis_server: RedisServer, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["agents", "seed", "--redis", redis_server.url, "--crawl", "new", "--partitions", "8"]
    assert main([*argv, ",".join(SEEDS)]) == 0
    assert "3 seed URLs sent" in capsys.readouterr().out
    config = json.loads(redis_client.get("irl:{new}:config") or b"{}")
    assert config["partitions"] == 8 and redis_client.get("irl:{new}:seeded") == b"1"
    sent = stream_urls(redis_client, "new", 8)
    for url, pld in zip(SEEDS, ["a.com", "b.org", "c.net"], strict=True):
        batch = sent[partition_of(pld, 8)][0]
        assert batch.auxes[batch.urls.index(url)] == seed_aux(url)
    # the crawl exists now: its partition count and PLDs stay
    assert main([*argv[:-1], "16", SEEDS[0]]) == 2
    assert "has 8 partitions, not 16" in capsys.readouterr().err
    assert main([*argv[:-2], "--private-suffixes", SEEDS[0]]) == 2
    assert "seed it without --private-suffixes" in capsys.readouterr().err


def test_a_crawl_of_private_suffixes_seeds_a_blog_to_its_own_partition(
    redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    argv = ["agents", "seed", "--redis", redis_server.url, "--crawl", "blogs"]
    assert (
        main([*argv, "--partitions", "64", "--private-suffixes", "http://alice.blogspot.com/"]) == 0
    )
    p = partition_of("alice.blogspot.com", 64)
    assert p != partition_of("blogspot.com", 64)
    assert stream_urls(redis_client, "blogs", 64)[p][0].urls == ["http://alice.blogspot.com/"]


def test_seed_reads_a_file_and_refuses_what_is_not_a_url(
    redis_server: RedisServer, redis_client: redis.Redis, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# seeds\nhttp://www.a.com/\n\nhttp://d.org/\n")
    argv = ["agents", "seed", "--redis", redis_server.url, "--crawl", "f"]
    assert main([*argv, str(seeds)]) == 0
    assert sum(len(b.urls) for bs in stream_urls(redis_client, "f", 64).values() for b in bs) == 2
    assert main([*argv, "ftp://x.org/"]) == 2
    assert "http(s) URLs" in capsys.readouterr().err


def test_status_shows_each_agent_its_pages_and_the_batches_waiting_for_it(
    make_agent: Any, redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["agents", "status", "--redis", redis_server.url, "--crawl", "c"]
    assert main(argv) == 2
    assert "there is no crawl 'c'" in capsys.readouterr().err
    agent, clock = make_agent()
    agent.stats.values["response_received_count"] = 42
    advance(clock, STATUS_EVERY)  # a status record with them
    seed = ["agents", "seed", "--redis", redis_server.url, "--crawl", "c"]
    assert main([*seed, ",".join(f"http://site{n}.com/" for n in range(40))]) == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    views = {v["agent"]: v for v in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(views) == {"a", "b"}
    assert views["a"]["alive"] and not views["b"]["alive"]
    assert views["a"]["status"]["pages"] == 42 and views["b"]["status"] is None
    assert views["a"]["partitions"] + views["b"]["partitions"] == 16
    # the seeds in b's partitions wait for b, which never ran
    assert views["b"]["lag"]["unread"] > 0 and views["b"]["lag"]["oldest_unread_s"] >= 0
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "crawl c: 2 agents, 16 partitions" in table
    assert any(line.startswith("b ") and "stopped" in line for line in table.splitlines())


def test_leave_asks_a_member_to_leave_one_at_a_time_and_never_the_last(
    redis_server: RedisServer, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    from irlscrapy.distributed.registry import CrawlConfig, CrawlRegistry

    registry = CrawlRegistry(redis_client, "c", CrawlConfig(16))
    registry.ensure_config()
    for agent in "abc":
        registry.add_member(agent)

    def leave(agent: str) -> tuple[int, str]:
        code = main(["agents", "leave", "--redis", redis_server.url, "--crawl", "c", agent])
        out, err = capsys.readouterr()
        return code, out + err

    assert leave("x") == (2, "irlscrapy: 'x' is not a member of crawl 'c' (['a', 'b', 'c'])\n")
    code, said = leave("c")
    assert code == 0 and "asked to leave" in said and "when it runs again" in said
    assert redis_client.exists("irl:{c}:leave:c")
    code, said = leave("b")
    assert code == 2 and "'c' of crawl 'c' is leaving already" in said
    redis_client.delete("irl:{c}:leave:c")
    registry.hand_over("c", "", ["a", "b", "c"])
    registry.hand_over("b", "", ["a", "b"])
    code, said = leave("a")
    assert code == 2 and "only member" in said


def test_remove_takes_a_dead_member_out_for_good_and_its_jobdir_is_refused(
    redis_server: RedisServer,
    redis_client: redis.Redis,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A member whose machine is gone blocks the crawl's end (it is never idle):
    ``remove`` takes it out, its partitions go to the others, and its JOBDIR, should
    it come back, is refused; a new JOBDIR joins anew. A running agent, a non-member and
    the last member are refused."""
    from irlscrapy.distributed.leavemarks import check_directory
    from irlscrapy.distributed.registry import CrawlConfig, CrawlRegistry

    registry = CrawlRegistry(redis_client, "c", CrawlConfig(16))
    registry.ensure_config()
    for agent in "ab":
        registry.add_member(agent)
    check_directory(tmp_path / "b", registry, "b")  # b's JOBDIR, as it starts
    registry.join("a", 30.0)  # a runs
    redis_client.hset("irl:{c}:holds", "b", "1,2")
    redis_client.hset("irl:{c}:idle", "b", "0")

    def remove(agent: str) -> tuple[int, str]:
        code = main(["agents", "remove", "--redis", redis_server.url, "--crawl", "c", agent])
        out, err = capsys.readouterr()
        return code, out + err

    code, said = remove("a")
    assert code == 2 and "is running: ask it to leave instead" in said
    assert remove("x") == (2, "irlscrapy: 'x' is not a member of crawl 'c'\n")
    code, said = remove("b")
    assert code == 0 and "agent b removed" in said and "What it held is lost" in said
    assert registry.members() == ["a"] and registry.holds() == {}
    assert redis_client.hkeys("irl:{c}:idle") == []
    registry.add_member("b")  # (IRL_AGENT_MEMBERS, listed by an agent that starts)
    assert registry.members() == ["a"]
    with pytest.raises(ConfigurationError, match="'b' was removed from crawl 'c'"):
        check_directory(tmp_path / "b", registry, "b")
    check_directory(tmp_path / "b-new", registry, "b")  # a new JOBDIR may join anew
    redis_client.delete("irl:{c}:lease:a")
    code, said = remove("a")
    assert code == 2 and "only member" in said
