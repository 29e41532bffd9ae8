"""Many agents, one crawl (irlscrapy.distributed): the tiny web crawled by agents that
exchange URLs over a real redis-server, against one in-vitro server whose log tells
which agent fetched what (each agent has its own User-Agent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis

from harness.redisserver import RedisServer
from irlscrapy.distributed.partitions import owner, partition_of
from irlscrapy.distributed.registry import CrawlRegistry, stored_config
from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.process import InVitroProcess
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, audit, request_url
from irlscrapy.oracle.groundtruth import reachable
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

from .conftest import (
    IRL_POLICY,
    QUICK_IRL,
    RETRYABLE,
    ROOT,
    SEED,
    TINY_DOWNLOAD_TIMEOUT,
    assert_never_idle_with_work,
    assert_repeats_are_retries,
    downloads,
    read_log,
)
from .startruth import TOP, assert_counts_equal, star_counts, star_truth

CRAWL_TIMEOUT_S = 240
#: how long the agents may take to join their crawl in Redis
JOIN_TIMEOUT_S = 60
#: tau_h and its floor (every domain has the default budget), half QUICK_IRL's: still
#: far longer than an in-vitro reply, and the crawls' tails are shorter
HOST_DELAY = 0.1
CRAWL_DELAY_CAP = 0.2  # robots.txt Crawl-delay above this is cut to it
IP_DELAY = 0.05
PARTITIONS = 16
#: the agents' lease in these tests: a restarted agent waits up to this for its dead one
LEASE_S = 3.5


def user_agent(agent: str) -> str:
    return f"irlscrapy-test ({agent})"


def start_web(log: Path) -> InVitroProcess:
    web = InVitroProcess("tiny", SEED, log=log)
    web.start()
    return web


def agent_args(info: dict[str, Any], redis_url: str, crawl: str, agent: str, agents: list[str],
               jobdir: Path, seeds: list[str]) -> list[str]:  # fmt: skip
    """``scrapy crawl broad`` of the web at ``info`` as agent ``agent`` of ``crawl``."""
    settings = {  # after the web's own, as `-a seeds=invitro` has them below the command's
        **info["settings"],
        **dict(setting.split("=", 1) for setting in QUICK_IRL),
        "DOWNLOAD_TIMEOUT": TINY_DOWNLOAD_TIMEOUT,
        "TELNETCONSOLE_ENABLED": 0,
        "IRL_REPORT_DIR": "",
        "USER_AGENT": user_agent(agent),
        "JOBDIR": jobdir,
        "IRL_REDIS_URL": redis_url,
        "IRL_CRAWL_ID": crawl,
        "IRL_AGENT_ID": agent,
        "IRL_AGENT_MEMBERS": ",".join(agents),
        "IRL_AGENT_PARTITIONS": PARTITIONS,
        # the tiny web's links chain pages across agents: a hop waits for a batch's age
        "IRL_EXCHANGE_AGE": 1,
        # and its few IPs change hands often: a handover waits for a round of leases
        "IRL_AGENT_IP_ROUND": 1,
        # an agent's last hosts are a few, in a sparse tail (the work is spread over the
        # agents): QUICK_IRL's 2 s gave up on a flaky host between its 429s
        "IRL_CRAWL_GIVE_UP_AFTER": 6,
        "IRL_HOST_DELAY": HOST_DELAY,
        "IRL_HOST_DELAY_MIN": HOST_DELAY,
        "IRL_ROBOTS_MAX_CRAWL_DELAY": CRAWL_DELAY_CAP,
    }
    args = [sys.executable, "-m", "scrapy", "crawl", "broad"]
    if seeds:
        args += ["-a", "seeds=" + ",".join(seeds)]
    for name, value in settings.items():
        args += ["-s", f"{name}={value}"]
    return args


class AgentRun:
    """Agents of one crawl as ``scrapy crawl`` processes, each started (and restarted)
    with its own JOBDIR under ``work``; their stderr in ``work/<agent>-<n>.err``."""

    def __init__(self, info: dict[str, Any], redis_url: str, crawl: str, agents: list[str],
                 work: Path, *settings: str) -> None:  # fmt: skip
        self.info, self.redis_url, self.crawl = info, redis_url, crawl
        self.agents, self.work, self.settings = agents, work, settings
        self.env = {**os.environ, **info["env"]}
        self.processes: dict[str, subprocess.Popen[str]] = {}
        self.runs: dict[str, list[Path]] = defaultdict(list)
        self.seeds: list[str] = info["seeds"]  # given to every agent ([]: none)

    def start(self, agent: str, agents: list[str] | None = None) -> None:
        """Start ``agent``, with ``agents`` as IRL_AGENT_MEMBERS (default: all of the run's)."""
        err = self.work / f"{agent}-{len(self.runs[agent])}.err"
        self.runs[agent].append(err)
        args = agent_args(self.info, self.redis_url, self.crawl, agent, agents or self.agents,
                          self.work / agent, self.seeds)  # fmt: skip
        for setting in self.settings:
            args += ["-s", setting]
        with err.open("w") as stderr:
            self.processes[agent] = subprocess.Popen(
                args, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=stderr, text=True
            )

    def kill(self, agent: str) -> None:
        self.processes[agent].kill()
        self.processes[agent].wait()

    def kill_all(self) -> None:
        """Kill the agents still running (a test that failed midway leaves none)."""
        for agent, process in self.processes.items():
            if process.poll() is None:
                self.kill(agent)

    def wait_joined(self) -> None:
        """Wait until every agent has joined the crawl in Redis: its start-up takes
        seconds, more on a loaded machine, and a crawl seeded before its agents stored
        its configuration is created with the default one."""
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        with redis.Redis.from_url(self.redis_url) as client:
            while True:
                config = stored_config(client, self.crawl)
                joined = CrawlRegistry(client, self.crawl, config).members() if config else []
                if joined == sorted(self.agents):
                    return
                for agent, process in self.processes.items():
                    assert process.poll() is None, self.last_err(agent)
                assert time.monotonic() < deadline, f"joined: {joined}"
                time.sleep(0.2)

    def wait(self) -> None:
        """Wait for every agent to end; each run that was not killed ended well."""
        deadline = time.monotonic() + CRAWL_TIMEOUT_S
        for agent, process in self.processes.items():
            try:
                process.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for other in self.processes.values():
                    other.kill()
                raise AssertionError(f"agent {agent} did not end: {self.last_err(agent)}") from None
            assert process.returncode == 0, self.last_err(agent)
            err = self.runs[agent][-1].read_text()
            assert "Traceback" not in err, err[-3000:]
            assert_never_idle_with_work(err)

    def command(self, *args: str) -> str:
        """``irlscrapy agents ARGS`` for this crawl; its output."""
        done = subprocess.run(
            [sys.executable, "-m", "irlscrapy", "agents", args[0], "--redis", self.redis_url,
             "--crawl", self.crawl, *args[1:]],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def last_err(self, agent: str) -> str:
        return self.runs[agent][-1].read_text()[-3000:]


def wait_for_log(err: Path, text: str) -> None:
    deadline = time.monotonic() + CRAWL_TIMEOUT_S
    while text not in err.read_text():
        assert time.monotonic() < deadline, f"{err.name} never said {text!r}"
        time.sleep(0.2)


def stat(err: str, name: str) -> int:
    """A stat of the last stats dump in an agent's log (0 if absent)."""
    dump = err.rsplit("Dumping Scrapy stats:", 1)[-1]
    found = dump.split(f"'{name}': ", 1)
    return int(found[1].split(",", 1)[0].split("}", 1)[0]) if len(found) > 1 else 0


def wait_for_pages(log: Path, pages: int) -> None:
    deadline = time.monotonic() + CRAWL_TIMEOUT_S
    while len(downloads(log)) < pages:
        assert time.monotonic() < deadline, "the crawl never got that far"
        time.sleep(0.2)


def assert_ground_truth_and_owners(log: Path, agents: str) -> None:
    """The pages downloaded are the ground truth, each fetched by the owner of its PLD
    only (no overlap between agents), and every agent fetched some."""
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    downloaded = set(downloads(log))
    assert downloaded == truth, {
        "extra": sorted(downloaded - truth)[:10],
        "missing": sorted(truth - downloaded)[:10],
    }
    who = fetched_by(log)
    wrong = {
        url: fetchers
        for url, fetchers in who.items()
        if fetchers != {user_agent(owner(partition_of(pld(url_host(url)), PARTITIONS), agents))}
    }
    assert not wrong, sorted(wrong.items())[:10]
    assert {a for fetchers in who.values() for a in fetchers} == {user_agent(a) for a in agents}


def assert_polite_across_agents(log: Path, agents: str) -> None:
    """Zero host and IP gap violations at the server, though many IPs carry hosts of
    PLDs owned by different agents (irlscrapy.distributed.ipleases); the gaps between
    two agents' requests to one IP are counted apart, and must be there."""
    records = read_log(log)
    result = audit(
        records,
        InVitroWeb(TINY, SEED),
        host_delay=lambda host: HOST_DELAY,
        ip_delay=IP_DELAY,
        max_bytes=MAX_PAGE_BYTES,
    )
    print(f"politeness of agents {agents}: {result.summary()}")
    owners: dict[str, set[str]] = defaultdict(set)
    for r in records:
        owners[r["ip"]].add(owner(partition_of(pld(r["host"]), PARTITIONS), agents))
    shared = [ip for ip, who in owners.items() if len(who) > 1]
    served = sorted((r for r in records if r["kind"] != "dns-error"), key=lambda r: r["t_start"])
    last: dict[str, dict[str, Any]] = {}
    handovers = 0
    for r in served:
        before = last.get(r["ip"])
        handovers += before is not None and before["user_agent"] != r["user_agent"]
        last[r["ip"]] = r
    print(f"{len(shared)} of {len(owners)} IPs carry PLDs of several agents; {handovers} handovers")
    assert len(shared) >= len(owners) // 2, "the test needs IPs shared between agents"
    assert handovers >= 20, "the agents never took turns on an IP"
    assert result.host.count > 1000 and result.ip.count > 2000
    assert result.host.min_slack >= 0, sorted(result.host.slack)[:10]
    assert result.ip.min_slack >= 0, sorted(result.ip.slack)[:10]
    assert result.abandoned.min_slack > -0.05


def fetched_by(log: Path) -> dict[str, set[str]]:
    """URL -> the agents that fetched it (robots.txt and DNS failures left out)."""
    who: dict[str, set[str]] = defaultdict(set)
    for r in read_log(log):
        url = request_url(r)
        if r["kind"] != "dns-error" and r["path"] not in ROBOTS_PATHS and url is not None:
            who[url].add(r["user_agent"])
    return who


def test_one_agent_and_three_crawl_the_ground_truth_with_no_overlap_and_count_star_at_owners(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """One agent, and three, crawl the tiny web side by side, each crawl against its
    own server: both download the same pages, the ground truth's, each fetched by its
    PLD's owner only; and every PLD's in-degree and pages in STAR's store of its owner
    (and of no other agent) equal the counts over the union of the pages crawled.

    The one agent crawls with ``IRL_BUDGET_MODE = "off"``: STAR still counts, and no PLD
    gets a larger budget; that it still fetches the ground truth, as the crawls with
    budgets do (here and in tests/e2e/test_irl_crawl.py), says budgets order a crawl
    and never drop a URL. The one agent is given the seeds; the three start without,
    wait, and are seeded by ``irlscrapy agents seed``, and ``irlscrapy agents status``
    shows them at work."""
    budgets = {"a": "off", "abc": "star"}
    webs: dict[str, InVitroProcess] = {}
    runs: dict[str, AgentRun] = {}
    try:
        for agents, budget in budgets.items():
            work = tmp_path / agents
            work.mkdir()
            webs[agents] = web = start_web(work / "requests.jsonl")
            star = (f"IRL_STAR_TOP_DOMAINS={TOP}", f"IRL_BUDGET_MODE={budget}")
            runs[agents] = AgentRun(web.info, redis_server.url, f"crawl-{agents}", list(agents),
                                    work, *star)  # fmt: skip
        three = runs["abc"]
        three.seeds = []
        for run in runs.values():
            for agent in run.agents:
                run.start(agent)
        three.wait_joined()
        time.sleep(1)  # the three wait for seeds: an unseeded crawl is not done
        assert all(p.poll() is None for p in three.processes.values())
        assert "seed URLs sent" in three.command("seed", ",".join(webs["abc"].info["seeds"]))
        assert_status_shows_the_agents_at_work(three)
        for run in runs.values():
            run.wait()
    finally:
        for run in runs.values():
            run.kill_all()
        for web in webs.values():
            web.stop()
    for agents, run in runs.items():
        log = run.work / "requests.jsonl"
        assert "of the partitions" in run.runs[agents[0]][-1].read_text()  # its progress line
        larger = ["'irl/star/budget/1001-10000'" in run.runs[a][-1].read_text() for a in agents]
        assert any(larger) == (budgets[agents] == "star")
        assert_ground_truth_and_owners(log, agents)
        assert_repeats_are_retries(read_log(log))
        counted: dict[str, tuple[int, int]] = {}
        for agent in agents:
            at_agent = star_counts(run.work / agent / "star")
            foreign = [p for p in at_agent if owner(partition_of(p, PARTITIONS), agents) != agent]
            assert not foreign, (agent, foreign[:10])
            counted.update(at_agent)
        assert_counts_equal(counted, star_truth())
    assert_polite_across_agents(three.work / "requests.jsonl", "abc")


def assert_status_shows_the_agents_at_work(run: AgentRun) -> None:
    deadline = time.monotonic() + 30
    while True:
        views = [json.loads(line) for line in run.command("status", "--json").splitlines()]
        assert [v["agent"] for v in views] == run.agents
        if all(v["alive"] and v["status"] and v["status"]["pages"] > 0 for v in views):
            break
        assert time.monotonic() < deadline, views
        time.sleep(1)
    table = run.command("status")
    assert f"crawl {run.crawl}: {len(run.agents)} agents, {PARTITIONS} partitions" in table


def test_a_join_kill_9_redis_away_and_a_graceful_leave_lose_nothing(tmp_path: Path) -> None:
    """Agents a and b begin the crawl; c joins it under way, and a and b hand off the
    partitions it takes (the keys of the URLs they have seen, then the URLs they hold
    of them). Then Redis stops for 10 s (it has its append-only file, as a production
    Redis): the agents crawl their own partitions meanwhile and keep what they send on
    disk. During the outage b is killed with kill -9; once Redis is back it is started
    again with its id and JOBDIR: it waits for its dead lease, reads again what it had
    not made durable, and sends what its journal holds. Then ``irlscrapy agents leave
    c``: c finishes its fetches, hands the URLs it holds and the keys of those it has
    seen to a and b, and stops. The crawl completes with the ground truth and no URL
    downloaded twice (a retry of a failure at c, handed over, is fetched by its heir).
    Started again with its JOBDIR, c refuses: its work went to the others."""
    server = RedisServer(tmp_path / "redis", persistent=True).start()
    log = tmp_path / "requests.jsonl"
    web = start_web(log)
    try:
        run = AgentRun(web.info, server.url, "faults", ["a", "b", "c"], tmp_path,
                       f"IRL_AGENT_LEASE={LEASE_S}")  # fmt: skip
        run.start("a", ["a", "b"])
        run.start("b", ["a", "b"])
        wait_for_pages(log, 300)
        run.start("c")
        wait_for_log(run.runs["a"][0], "handed off")
        wait_for_log(run.runs["b"][0], "handed off")
        wait_for_pages(log, len(downloads(log)) + 60)  # (c crawls too)
        server.stop()
        during = len(downloads(log))
        time.sleep(5)
        run.kill("b")
        time.sleep(5)
        assert len(downloads(log)) > during, "the agents stopped crawling while Redis was away"
        server.start()
        run.start("b")
        assert "asked to leave" in run.command("leave", "c")
        run.processes["c"].wait(90)
        assert run.processes["c"].returncode == 0, run.last_err("c")
        during = len(downloads(log))
        run.wait()
        assert len(downloads(log)) > during, "the crawl ended when c left"
    finally:
        run.kill_all()
        web.stop()
        server.stop()
    # a and b handed off to c the URLs they held of its partitions (a was never killed,
    # so its count is in its final stats), and the keys of those they had seen
    assert stat(run.runs["a"][0].read_text(), "irl/agent/urls_handed_off") > 0
    assert all("keys of URLs it has seen go to" in run.runs[agent][0].read_text() for agent in "ab")
    assert "cannot reach Redis" in run.runs["a"][0].read_text()
    assert "Agent b of crawl faults" in run.runs["b"][1].read_text()
    err = run.runs["c"][0].read_text()
    assert "Agent c left crawl faults" in err and "'finish_reason': 'agent_left'" in err
    handed = int(err.split("hands over ")[1].split(" URLs")[0])
    assert handed > 0, "c held no URL when it left: the test needs a crawl under way"
    assert "keys_in" in run.runs["a"][0].read_text() + run.runs["b"][1].read_text()
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    assert set(downloads(log)) == truth
    # no URL downloaded by two agents (b's kill -9 may cost b a page again, within the
    # crash contract); what two agents asked for is a retry of a failure the leaver
    # handed over with the URLs it held
    answered: dict[str, set[str]] = defaultdict(set)
    for r in read_log(log):
        if r["path"] not in ROBOTS_PATHS and r["status"] not in RETRYABLE:
            answered[request_url(r) or ""].add(r["user_agent"])
    twice = {url: who for url, who in answered.items() if len(who) > 1}
    assert not twice, sorted(twice.items())[:10]
    retried = [url for url, who in fetched_by(log).items() if len(who) > 1]
    print(f"{len(retried)} URLs retried by an heir after a failure at c: {retried[:5]}")
    again = subprocess.run(
        agent_args(web.info, server.url, "faults", "c", run.agents, tmp_path / "c", []),
        cwd=ROOT, env=run.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "start the agent with a new JOBDIR" in again.stderr, again.stderr[-2000:]
