"""Many agents, one crawl (irlscrapy.distributed): the tiny web crawled by agents that
exchange URLs over a real redis-server, against one in-vitro server whose log tells
which agent fetched what (each agent has its own User-Agent)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from irlscrapy.distributed.partitions import owner, partition_of
from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.process import InVitroProcess
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import reachable
from tests.redisserver import RedisServer

from .conftest import (
    IRL_POLICY,
    QUICK_IRL,
    ROOT,
    SEED,
    TINY_DOWNLOAD_TIMEOUT,
    assert_never_idle_with_work,
    assert_repeats_are_retries,
    downloads,
    read_log,
)

CRAWL_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


def user_agent(agent: str) -> str:
    return f"irlscrapy-test ({agent})"


def start_web(log: Path) -> InVitroProcess:
    web = InVitroProcess("tiny", SEED, log=log)
    web.start()
    return web


def agent_args(info: dict[str, Any], redis_url: str, crawl: str, agent: str, agents: list[str],
               jobdir: Path) -> list[str]:  # fmt: skip
    """``scrapy crawl broad`` of the web at ``info`` as agent ``agent`` of ``crawl``."""
    settings = {
        **info["settings"],
        "DOWNLOAD_TIMEOUT": TINY_DOWNLOAD_TIMEOUT,
        "TELNETCONSOLE_ENABLED": 0,
        "IRL_REPORT_DIR": "",
        "USER_AGENT": user_agent(agent),
        "JOBDIR": jobdir,
        "IRL_REDIS_URL": redis_url,
        "IRL_CRAWL_ID": crawl,
        "IRL_AGENT_ID": agent,
        "IRL_AGENTS": ",".join(agents),
        "IRL_AGENT_PARTITIONS": 16,
    }
    args = [sys.executable, "-m", "scrapy", "crawl", "broad", "-a",
            "seeds=" + ",".join(info["seeds"])]  # fmt: skip
    for setting in QUICK_IRL:
        args += ["-s", setting]
    for name, value in settings.items():
        args += ["-s", f"{name}={value}"]
    return args


def crawl_with_agents(
    info: dict[str, Any], redis_url: str, crawl: str, agents: list[str], work: Path
) -> list[subprocess.CompletedProcess[str]]:
    env = {**os.environ, **info["env"]}
    running = [
        subprocess.Popen(
            agent_args(info, redis_url, crawl, agent, agents, work / agent),
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for agent in agents
    ]
    results = []
    for process in running:
        out, err = process.communicate(timeout=CRAWL_TIMEOUT_S)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def fetched_by(log: Path) -> dict[str, set[str]]:
    """URL -> the agents that fetched it (robots.txt and DNS failures left out)."""
    who: dict[str, set[str]] = defaultdict(set)
    for r in read_log(log):
        url = request_url(r)
        if r["kind"] != "dns-error" and r["path"] not in ROBOTS_PATHS and url is not None:
            who[url].add(r["user_agent"])
    return who


@pytest.fixture(scope="module")
def three_agents(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[subprocess.CompletedProcess[str]], Path]:
    work = tmp_path_factory.mktemp("agents3")
    log = work / "requests.jsonl"
    web = start_web(log)
    try:
        results = crawl_with_agents(web.info, redis_server.url, "three", ["a", "b", "c"], work)
    finally:
        web.stop()
    return results, log


def test_three_agents_crawl_the_ground_truth_with_no_overlap(
    three_agents: tuple[list[subprocess.CompletedProcess[str]], Path],
) -> None:
    results, log = three_agents
    for result in results:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        assert_never_idle_with_work(result.stderr)
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    downloaded = set(downloads(log))
    assert downloaded == truth, {
        "extra": sorted(downloaded - truth)[:10],
        "missing": sorted(truth - downloaded)[:10],
    }
    overlap = {url: agents for url, agents in fetched_by(log).items() if len(agents) > 1}
    assert not overlap, sorted(overlap.items())[:10]
    assert_repeats_are_retries(read_log(log))
    # each URL was fetched by the owner of its PLD's partition, and each agent owns some
    wrong = {
        url: agents
        for url, agents in fetched_by(log).items()
        if agents != {user_agent(owner(partition_of(pld(url_host(url)), 16), "abc"))}
    }
    assert not wrong, sorted(wrong.items())[:10]
    assert {a for agents in fetched_by(log).values() for a in agents} == {
        user_agent(a) for a in "abc"
    }
