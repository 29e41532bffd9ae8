"""``irlscrapy agents seed``, ``status``, ``leave`` and ``remove``: a multi-agent crawl
from outside its agents (irlscrapy/cli.py parses the command line)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import redis

from irlscrapy import defaults
from irlscrapy.distributed.crawlview import crawl_view, render
from irlscrapy.distributed.registry import CrawlConfig, CrawlRegistry, stored_config
from irlscrapy.distributed.seeding import seed_crawl
from irlscrapy.distributed.streams import Exchange
from irlscrapy.exceptions import ConfigurationError


def seed(
    redis_url: str, crawl: str, seeds: str, partitions: int | None, private_suffixes: bool
) -> str:
    """Seed ``crawl``; return what was done, in a sentence."""
    from irlscrapy.spiders.broad import parse_seeds

    urls = parse_seeds(seeds, named="agents seed ")
    with _client(redis_url) as client:
        config = stored_config(client, crawl)
        if config is None:
            default = defaults.BY_NAME["IRL_AGENT_PARTITIONS"].default
            config = CrawlConfig(partitions or default, private_suffixes=private_suffixes)
        elif partitions is not None and partitions != config.partitions:
            raise ConfigurationError(
                f"crawl {crawl!r} has {config.partitions} partitions, not {partitions}: "
                "leave --partitions out to seed it"
            )
        elif private_suffixes != config.private_suffixes:
            raise ConfigurationError(
                f"crawl {crawl!r} counts PLDs {'with' if config.private_suffixes else 'without'}"
                " the Public Suffix List's private section: seed it "
                f"{'with' if config.private_suffixes else 'without'} --private-suffixes"
            )
        sent = seed_crawl(CrawlRegistry(client, crawl, config), urls)
    return (
        f"crawl {crawl}: {sum(sent.values())} seed URLs sent to {len(sent)} of "
        f"{config.partitions} partitions"
    )


def status(redis_url: str, crawl: str, as_json: bool) -> str:
    """The crawl's agents, as a table or JSON lines."""
    with _client(redis_url) as client:
        config = stored_config(client, crawl)
        if config is None:
            raise ConfigurationError(f"there is no crawl {crawl!r} at {redis_url}")
        registry = CrawlRegistry(client, crawl, config)
        views = crawl_view(registry, Exchange(registry, "status"))
    if as_json:
        return "\n".join(json.dumps(asdict(v), sort_keys=True) for v in views)
    return render(crawl, config.partitions, views)


def leave(redis_url: str, crawl: str, agent: str, wait: float) -> str:
    """Ask ``agent`` to leave ``crawl`` (irlscrapy.distributed.leave); with ``wait``,
    wait up to that many seconds for it to be gone from the members."""
    with _client(redis_url) as client:
        config = stored_config(client, crawl)
        if config is None:
            raise ConfigurationError(f"there is no crawl {crawl!r} at {redis_url}")
        registry = CrawlRegistry(client, crawl, config)
        members = registry.members()
        if agent not in members:
            raise ConfigurationError(f"{agent!r} is not a member of crawl {crawl!r} ({members})")
        if len(members) == 1:
            raise ConfigurationError(
                f"{agent!r} is crawl {crawl!r}'s only member: there is nobody to hand its "
                "partitions to (stop it instead)"
            )
        leaving = [m for m in members if m != agent and client.exists(registry.key("leave", m))]
        if leaving:
            raise ConfigurationError(
                f"agent {leaving[0]!r} of crawl {crawl!r} is leaving already: one leave at "
                "a time (each hands its partitions to the members it sees)"
            )
        client.set(registry.key("leave", agent), "1")
        running = registry.alive(agent)
        deadline = time.monotonic() + wait
        gone = False
        while wait and not gone and time.monotonic() < deadline:
            time.sleep(0.5)
            gone = agent not in registry.members()
    if gone:
        return f"crawl {crawl}: agent {agent} handed its partitions over and left"
    return f"crawl {crawl}: agent {agent} was asked to leave; it hands its partitions over " + (
        "at its next renewal" if running else "when it runs again"
    )


def remove(redis_url: str, crawl: str, agent: str) -> str:
    """Remove ``agent``, a member that no process runs as and that will not come back,
    from ``crawl``: its partitions go to the others, and what it held is lost."""
    with _client(redis_url) as client:
        config = stored_config(client, crawl)
        if config is None:
            raise ConfigurationError(f"there is no crawl {crawl!r} at {redis_url}")
        registry = CrawlRegistry(client, crawl, config)
        done = registry.remove(agent)
    if done == -1:
        raise ConfigurationError(
            f"agent {agent!r} of crawl {crawl!r} is running: ask it to leave instead "
            "(irlscrapy agents leave), which hands its work over"
        )
    if done == 0:
        raise ConfigurationError(f"{agent!r} is not a member of crawl {crawl!r}")
    if done == -2:
        raise ConfigurationError(f"{agent!r} is crawl {crawl!r}'s only member: nobody would crawl")
    return (
        f"crawl {crawl}: agent {agent} removed; its partitions go to the other agents. What "
        "it held is lost: URLs it had found and not fetched (unless found again), and what "
        "it had seen (the new owners may fetch those pages again). Its JOBDIR can no "
        "longer join the crawl"
    )


def _client(redis_url: str) -> redis.Redis:
    try:
        client = redis.Redis.from_url(redis_url, socket_timeout=10)
    except ValueError as exc:  # not a redis:// URL
        raise ConfigurationError(f"--redis {redis_url}: {exc}") from None
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        raise ConfigurationError(f"cannot reach Redis at {redis_url}: {exc}") from exc
    return client
