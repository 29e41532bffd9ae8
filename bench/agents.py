"""Many agents, one crawl: the multi-agent mode's bars (issue 20), in one run.

    python bench/agents.py [--seconds S] [--unique N] [--quick]

Three crawls of the in-vitro ``broad`` web (seed 0), each with a fresh web and a fresh
``redis-server`` on loopback, every agent an ordinary ``scrapy crawl broad`` with the
project's settings, bench/crawl.py's binding politeness (``IRL_SETTINGS``), its own
JOBDIR, and the bench sampler (bench/sampler.py) writing its state every second:

``one``      1 agent pinned to core 1, the web pinned to core 0, Redis unpinned; S s.
``two``      2 agents, one pinned to each core, the web and Redis unpinned; until the
             agents together know N unique URLs (the Redis-memory bar's crawl).
``nocache``  ``two`` with the sent-URL cache off (``IRL_EXCHANGE_CACHE=0``); S s.

Figures (the bars in brackets):

- scaling: pages/s (every response) over the same window of each crawl, seconds
  :data:`WARMUP_S` to ``WARMUP_S + S`` of each agent's own clock, summed over agents;
  ``two``/``one`` [>= 1.6]; CPU seconds per page of each agent against ``one``'s.
- communication: Redis commands per page over the whole crawl, from Redis's own
  ``INFO commandstats`` (a script counts as one call plus the calls it makes; the
  bench's own ``INFO`` calls left out) [<= 0.05]; bytes into and out of Redis per page;
  URLs sent per page with and without the cache, and the cut [>= 30%].
- Redis memory: ``used_memory`` less its value once every agent has joined (the agents
  seed the crawl as they open), sampled every second; the peak from 10% of the N URLs
  on against the value at 10% [<= 1.5x]. Also ``used_memory_dataset`` (the data, without
  client buffers) at 10% and its peak after, and the median of used_memory after 10%.
- reactor lag: p99.9 of each agent of ``two`` (stats ``irl/reactor/*``) [<= 50 ms].

Every figure is one JSON line (bench/common.py); logs and samples go to
``bench/results/agents-*``; the agents' JOBDIRs are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from common import REPO, RESULTS, emit
from crawl import (
    IRL_SETTINGS,
    PROFILE,
    SEED,
    as_args,
    crawler_env,
    interpolate,
    project_extensions,
    sampler_settings,
)

from irlscrapy.invitro.process import InVitroProcess

sys.path.insert(0, str(REPO))
from harness.redisserver import RedisServer  # the suite's real redis-server

BENCH_NAME = "agents"
SCALING_S = 90.0
QUICK_SCALING_S = 20.0
#: Seconds of each crawl left out of the rates: start-up, robots.txt and DNS of the seeds.
WARMUP_S = 10.0
UNIQUE = 2_000_000
QUICK_UNIQUE = 100_000
WALL_S = 1800.0
STOP_GRACE_S = 120.0
PARTITIONS = 64
SERVER_CPU = 0
POLL_S = 1.0


@dataclass
class AgentProcess:
    name: str
    process: subprocess.Popen[bytes]
    samples: Path
    log: Path

    def read_samples(self) -> list[dict[str, Any]]:
        if not self.samples.exists():
            return []
        return [json.loads(line) for line in self.samples.read_text().splitlines() if line]

    def stat(self, name: str) -> float:
        """A stat of the final dump in the log (0 if absent)."""
        found = re.search(rf"'{re.escape(name)}': ([0-9.]+)", self.log.read_text(errors="replace"))
        return float(found.group(1)) if found else 0.0


@dataclass
class RedisSample:
    t: float
    used_memory: int
    dataset: int  # used_memory_dataset: used_memory less Redis's overhead (client buffers)
    clients: int  # mem_clients_normal: the clients' query and output buffers
    streams: int  # MEMORY USAGE of the partitions' streams, summed
    entries: int  # entries in them (batches sent and not yet acknowledged)
    ips: int  # MEMORY USAGE of the IP leases' hash
    calls: int
    net_bytes: int
    unique: int
    by_command: dict[str, int]


@dataclass
class Crawl:
    name: str
    agents: list[AgentProcess]
    redis: list[RedisSample] = field(default_factory=list)
    joined: RedisSample | None = None  # the first sample with every agent joined


def agent_cmd(info: dict[str, Any], redis_url: str, crawl: str, agent: str, agents: list[str],
              jobdir: Path, samples: Path, extra: dict[str, str]) -> list[str]:  # fmt: skip
    settings = {
        **info["settings"],  # what -a seeds=invitro would set
        **IRL_SETTINGS,
        "JOBDIR": str(jobdir),
        "IRL_REPORT_DIR": "",
        "IRL_REDIS_URL": redis_url,
        "IRL_CRAWL_ID": crawl,
        "IRL_AGENT_ID": agent,
        "IRL_AGENT_MEMBERS": ",".join(agents),
        "IRL_AGENT_PARTITIONS": str(PARTITIONS),
        **extra,
    }
    return [
        sys.executable, "-m", "scrapy", "crawl", "broad", "-a", "seeds=" + ",".join(info["seeds"]),
        *as_args(settings), *sampler_settings(samples, project_extensions()),
    ]  # fmt: skip


#: The bench's own commands, left out of the counts.
BENCH_COMMANDS = ("cmdstat_info", "cmdstat_memory|usage", "cmdstat_xlen")


def redis_sample(client: Any, crawl: str, t: float, unique: int) -> RedisSample:
    memory = client.info("memory")
    stats = client.info("stats")
    commands = client.info("commandstats")
    by_command = {
        k.removeprefix("cmdstat_"): int(v["calls"])
        for k, v in commands.items()
        if k not in BENCH_COMMANDS
    }
    net = stats["total_net_input_bytes"] + stats["total_net_output_bytes"]
    streams = [f"irl:{{{crawl}}}:p:{p}" for p in range(PARTITIONS)]
    pipe = client.pipeline(transaction=False)
    for key in streams:
        pipe.memory_usage(key, samples=0)
        pipe.xlen(key)
    pipe.memory_usage(f"irl:{{{crawl}}}:ips", samples=0)
    *per_stream, ips = pipe.execute()
    return RedisSample(
        t,
        memory["used_memory"],
        memory["used_memory_dataset"],
        memory["mem_clients_normal"],
        sum(n or 0 for n in per_stream[0::2]),
        sum(per_stream[1::2]),
        ips or 0,
        sum(by_command.values()),
        net,
        unique,
        by_command,
    )


def run_crawl(name: str, cpus: list[int | None], server_cpu: int | None, seconds: float,
              unique: int | None, extra: dict[str, str]) -> Crawl:  # fmt: skip
    """Agents ``a``, ``b``, ... (one per entry of ``cpus``, pinned there unless None), until
    the scaling window has passed on every agent's clock and they know ``unique`` URLs."""
    work = RESULTS / f"agents-{name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    names = [chr(ord("a") + i) for i in range(len(cpus))]
    server = RedisServer(work / "redis").start()
    client = server.client()
    try:
        with InVitroProcess(profile=PROFILE, seed=SEED, cpu=server_cpu) as web:
            env = crawler_env(web.info)
            agents = []
            for agent, cpu in zip(names, cpus, strict=True):
                log = work / f"{agent}.log"
                cmd = agent_cmd(web.info, server.url, name, agent, names, work / agent,
                                work / f"{agent}.jsonl", extra)  # fmt: skip
                with log.open("wb") as out:
                    process = subprocess.Popen(
                        cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        preexec_fn=None if cpu is None else _pin(cpu),
                    )  # fmt: skip
                agents.append(AgentProcess(agent, process, work / f"{agent}.jsonl", log))
            crawl = Crawl(name, agents)
            assert web.pid is not None and server.process is not None
            others = {"web": psutil.Process(web.pid), "redis": psutil.Process(server.process.pid)}
            cpu0 = {k: sum(p.cpu_times()[:2]) for k, p in others.items()}
            started = time.monotonic()
            _watch(crawl, client, seconds, unique)
            wall = time.monotonic() - started
            for k, p in others.items():
                emit(BENCH_NAME, f"{k}_cores", round((sum(p.cpu_times()[:2]) - cpu0[k]) / wall, 3),
                     "cores", crawl=name)  # fmt: skip
            _stop(agents)
            crawl.redis.append(redis_sample(client, name, time.monotonic(), _unique(agents)))
    finally:
        client.close()
        server.stop()
        for agent in names:
            shutil.rmtree(work / agent, ignore_errors=True)
    for agent in crawl.agents:
        if agent.process.returncode != 0:
            raise RuntimeError(f"{name}: agent {agent.name} ended with "
                               f"{agent.process.returncode}; see {agent.log}")  # fmt: skip
    return crawl


def _pin(cpu: int) -> Any:
    return lambda: os.sched_setaffinity(0, {cpu})


def _unique(agents: list[AgentProcess]) -> int:
    return sum(int(s[-1]["unique"]) if (s := a.read_samples()) else 0 for a in agents)


def _watch(crawl: Crawl, client: Any, seconds: float, unique: int | None) -> None:
    started = time.monotonic()
    last_progress = 0.0
    while time.monotonic() - started < WALL_S:
        time.sleep(POLL_S)
        if any(a.process.poll() is not None for a in crawl.agents):
            raise RuntimeError(f"{crawl.name}: an agent ended early; see its log")
        samples = [a.read_samples() for a in crawl.agents]
        known = sum(int(s[-1]["unique"]) if s else 0 for s in samples)
        sample = redis_sample(client, crawl.name, time.monotonic(), known)
        crawl.redis.append(sample)
        if crawl.joined is None:
            flags = client.hgetall(f"irl:{{{crawl.name}}}:idle")
            if len(flags) == len(crawl.agents):
                crawl.joined = sample
        clock = min((s[-1]["t"] if s else 0.0) for s in samples)
        if sample.t - last_progress >= 30:
            last_progress = sample.t
            pages = sum(int(s[-1]["pages"]) if s else 0 for s in samples)
            print(f"{crawl.name}: {clock:.0f} s, {pages} pages, {known} unique URLs, Redis "
                  f"{sample.used_memory / 2**20:.1f} MiB", file=sys.stderr)  # fmt: skip
        if clock >= WARMUP_S + seconds + 2 and (unique is None or known >= unique):
            return
    print(f"{crawl.name}: wall limit {WALL_S:g} s reached", file=sys.stderr)


def _stop(agents: list[AgentProcess]) -> None:
    for agent in agents:
        agent.process.send_signal(signal.SIGINT)
    for agent in agents:
        try:
            agent.process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            agent.process.kill()
            agent.process.wait()


def window(agent: AgentProcess, seconds: float) -> tuple[float, float]:
    """(pages, CPU seconds) of ``agent`` between WARMUP_S and WARMUP_S + seconds."""
    samples = [s for s in agent.read_samples() if s["event"] in ("open", "tick")]
    a = interpolate(samples, "t", WARMUP_S)
    b = interpolate(samples, "t", WARMUP_S + seconds)
    return b["pages"] - a["pages"], b["cpu"] - a["cpu"]


def scaling(one: Crawl, two: Crawl, seconds: float) -> None:
    single_pages, single_cpu = window(one.agents[0], seconds)
    single_rate = single_pages / seconds
    emit(BENCH_NAME, "pages_per_s", round(single_rate, 1), "pages/s", crawl="one")
    emit(BENCH_NAME, "agent_cores", round(single_cpu / seconds, 3), "cores", crawl="one")
    total = 0.0
    for agent in two.agents:
        pages, cpu = window(agent, seconds)
        total += pages
        emit(BENCH_NAME, "pages_per_s", round(pages / seconds, 1), "pages/s", crawl="two",
             agent=agent.name)  # fmt: skip
        emit(BENCH_NAME, "agent_cores", round(cpu / seconds, 3), "cores", crawl="two",
             agent=agent.name)  # fmt: skip
        emit(BENCH_NAME, "cpu_per_page_to_single_ratio",
             round((cpu / pages) / (single_cpu / single_pages), 3), "ratio",
             agent=agent.name)  # fmt: skip
    emit(BENCH_NAME, "pages_per_s", round(total / seconds, 1), "pages/s", crawl="two")
    emit(BENCH_NAME, "scaling_two_to_one", round(total / seconds / single_rate, 3), "ratio",
         bar=">= 1.6", window_s=seconds, warmup_s=WARMUP_S)  # fmt: skip


def pages(crawl: Crawl) -> float:
    return sum(a.stat("response_received_count") for a in crawl.agents)


def communication(crawl: Crawl) -> tuple[float, float]:
    """Emit the crawl's Redis commands and bytes per page; return (URLs sent per page,
    URLs the cache kept back per page)."""
    assert crawl.joined is not None, f"{crawl.name}: the agents never all joined"
    first, last = crawl.redis[0], crawl.redis[-1]
    crawled = pages(crawl)
    sent = sum(a.stat("irl/agent/urls_out") for a in crawl.agents)
    cached = sum(a.stat("irl/agent/urls_out_cached") for a in crawl.agents)
    emit(BENCH_NAME, "redis_commands_per_page", round((last.calls - first.calls) / crawled, 4),
         "commands/page", crawl=crawl.name, pages=crawled, bar="<= 0.05")  # fmt: skip
    by_command = {
        name: round((calls - first.by_command.get(name, 0)) / crawled, 4)
        for name, calls in sorted(last.by_command.items())
    }
    emit(BENCH_NAME, "redis_commands_per_page_by_command", by_command, "commands/page",
         crawl=crawl.name)  # fmt: skip
    emit(BENCH_NAME, "redis_bytes_per_page", round((last.net_bytes - first.net_bytes) / crawled),
         "bytes/page", crawl=crawl.name)  # fmt: skip
    emit(BENCH_NAME, "urls_sent_per_page", round(sent / crawled, 3), "urls/page",
         crawl=crawl.name, kept_back_by_cache=round(cached / crawled, 3))  # fmt: skip
    return sent / crawled, cached / crawled


MEMORY_PARTS = ("used_memory", "dataset", "clients", "streams", "entries", "ips")


def redis_memory(crawl: Crawl, unique: int) -> None:
    assert crawl.joined is not None
    base = crawl.joined.used_memory
    after = [s for s in crawl.redis if s.t >= crawl.joined.t]
    tenth = next((s for s in after if s.unique >= unique / 10), None)
    if tenth is None:
        raise RuntimeError(f"{crawl.name}: never reached 10% of {unique} URLs")
    peak = max(after[after.index(tenth) :], key=lambda s: s.used_memory)
    at_tenth = tenth.used_memory - base
    emit(BENCH_NAME, "redis_used_memory_at_joined", base, "bytes")
    emit(BENCH_NAME, "redis_memory_growth_at_tenth", at_tenth, "bytes", unique=tenth.unique)
    emit(BENCH_NAME, "redis_memory_growth_peak", peak.used_memory - base, "bytes",
         unique=peak.unique)  # fmt: skip
    emit(BENCH_NAME, "redis_memory_peak_to_tenth", round((peak.used_memory - base) / at_tenth, 3),
         "ratio", bar="<= 1.5", unique_urls=crawl.redis[-1].unique)  # fmt: skip
    rest = after[after.index(tenth) :]
    for label, sample in (("joined", crawl.joined), ("tenth", tenth), ("peak", peak)):
        emit(BENCH_NAME, "redis_memory_parts", {k: getattr(sample, k) for k in MEMORY_PARTS},
             "bytes", at=label, unique=sample.unique)  # fmt: skip
    with (RESULTS / f"agents-{crawl.name}" / "redis.jsonl").open("w") as out:
        for sample in crawl.redis:
            out.write(json.dumps({k: v for k, v in vars(sample).items() if k != "by_command"}))
            out.write("\n")
    emit(BENCH_NAME, "redis_dataset_growth", [tenth.dataset - crawl.joined.dataset,
         max(s.dataset for s in rest) - crawl.joined.dataset], "bytes at the tenth, peak after",
         median_used_memory_growth_after_tenth=sorted(s.used_memory - base for s in rest)[
             len(rest) // 2])  # fmt: skip


def reactor_lag(crawl: Crawl) -> None:
    for agent in crawl.agents:
        for key in ("lag_p99_ms", "lag_p999_ms", "lag_max_ms"):
            emit(BENCH_NAME, f"reactor_{key}", agent.stat(f"irl/reactor/{key}"), "ms",
                 crawl=crawl.name, agent=agent.name,
                 **({"bar": "<= 50"} if key == "lag_p999_ms" else {}))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, help=f"scaling window ({SCALING_S:g} s)")
    parser.add_argument("--unique", type=int, help=f"URLs of the two-agent crawl ({UNIQUE})")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    seconds = args.seconds or (QUICK_SCALING_S if args.quick else SCALING_S)
    unique = args.unique or (QUICK_UNIQUE if args.quick else UNIQUE)
    emit(BENCH_NAME, "setup", PARTITIONS, "partitions", profile=PROFILE, seed=SEED,
         window_s=seconds, unique=unique, cores=sorted(os.sched_getaffinity(0)))  # fmt: skip
    one = run_crawl("one", [1], SERVER_CPU, seconds, None, {})
    two = run_crawl("two", [0, 1], None, seconds, unique, {})
    nocache = run_crawl("nocache", [0, 1], None, seconds, None, {"IRL_EXCHANGE_CACHE": "0"})
    scaling(one, two, seconds)
    communication(one)
    sent, _ = communication(two)
    sent_without, _ = communication(nocache)
    emit(BENCH_NAME, "cache_cut", round(1 - sent / sent_without, 3), "share", bar=">= 0.30")
    redis_memory(two, unique)
    reactor_lag(two)
    return 0


if __name__ == "__main__":
    sys.exit(main())
