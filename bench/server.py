"""Throughput of the in-vitro HTTP server alone, on the ``broad`` profile.

    python bench/server.py [--quick]

The server (:class:`irlscrapy.invitro.process.InVitroProcess`, one process, one reactor)
is pinned to core :data:`SERVER_CPU`; ``wrk`` (one thread, :data:`CONNECTIONS` keep-alive
connections) is pinned to core :data:`LOADGEN_CPU` and sends proxy requests
(``GET http://host/path HTTP/1.1``) cycling through a list of URLs
(``bench/wrk_urls.lua``).

Workloads, each run :data:`ROUNDS` times for :data:`DURATION_S` seconds, interleaved:

``tiny``       robots.txt of "allow" hosts (25-byte body): the same-run baseline, the
               cost of the protocol and request handling with almost no page generation
``page``       the first :data:`URL_COUNT` HTML pages a breadth-first crawl downloads
               (``irlscrapy invitro urls --profile broad --seed 0 --policy scrapy``)
``page_gzip``  the same with ``Accept-Encoding: gzip``, as Scrapy sends it (the web
               gzips the replies of some hosts)

Pages of "slow" servers are left out of the page list: their reply waits a fixed delay
on purpose, which costs the server no CPU but would stall a wrk connection.

Figures (medians over rounds): responses/s of each workload, the ratios page/tiny and
page_gzip/tiny, pages/s against the 2,000 pages/s bar, mean body and wire bytes per
page, and the CPU utilisation of server and load generator (a server that is not near
100 % was not the bottleneck, so its figure is a lower bound).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from common import BENCH, emit, median, page_urls

from irlscrapy.invitro.process import InVitroProcess
from irlscrapy.invitro.profiles import get_profile
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import split_url

PROFILE = "broad"
SEED = 0
URL_COUNT = 20_000
SERVER_CPU = 0
LOADGEN_CPU = 1
#: Enough keep-alive connections to keep one reactor busy even on 25-byte replies (at 64
#: the tiny workload left the server a third idle: each wakeup served too few requests).
CONNECTIONS = 256
DURATION_S = 10
WARMUP_S = 3
ROUNDS = 3
QUICK_DURATION_S = 2
QUICK_ROUNDS = 1
#: The foundation issue's bar: the server must serve this many pages/s on one core.
BAR_PAGES_PER_S = 2_000
WRK_TIMEOUT = "10s"
LUA = BENCH / "wrk_urls.lua"
BENCH_NAME = "server"


@dataclass
class Lists:
    pages: list[str]  # page URLs whose reply is not delayed on purpose
    delayed: int  # page URLs left out because their reply is delayed
    tiny: list[str]  # robots.txt URLs of "allow" hosts among the pages' hosts
    plain_bytes: float  # mean body bytes of a page
    gzip_bytes: float  # mean body bytes of a page when the client accepts gzip


def build_lists(web: InVitroWeb, urls: list[str]) -> Lists:
    """Page list without delayed replies, the tiny list, and body sizes (no network)."""
    pages, delayed = [], 0
    plain_bytes = gzip_bytes = 0
    tiny: dict[str, None] = {}
    for url in urls:
        host_name, path = split_url(url)
        reply = web.respond(host_name, path)
        if reply.delay > 0:
            delayed += 1
            continue
        pages.append(url)
        plain_bytes += len(reply.body)
        gzip_bytes += len(web.respond(host_name, path, accept_gzip=True).body)
        host = web.host(host_name)
        if host is not None and host.robots == "allow" and not host.chunked:
            tiny[f"http://{host_name}/robots.txt"] = None
    return Lists(pages, delayed, list(tiny), plain_bytes / len(pages), gzip_bytes / len(pages))


def run_wrk(
    wrk: str, proxy: str, url_file: Path, gzip: bool, seconds: int, server: psutil.Process
) -> dict[str, float]:
    cmd = [
        "taskset",
        "-c",
        str(LOADGEN_CPU),
        wrk,
        "-t1",
        f"-c{CONNECTIONS}",
        f"-d{seconds}s",
        f"--timeout={WRK_TIMEOUT}",
        "-s",
        str(LUA),
        proxy,
        "--",
        str(url_file),
    ]
    if gzip:
        cmd.append("gzip")
    cpu0 = sum(server.cpu_times()[:2])
    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu1 = sum(server.cpu_times()[:2])
    m = re.search(r"^WRKJSON (.*)$", out.stdout, re.M)
    if not m:
        raise RuntimeError(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    r = json.loads(m.group(1))
    wall = r["duration_us"] / 1e6
    loadgen_cpu = (child1.ru_utime - child0.ru_utime) + (child1.ru_stime - child0.ru_stime)
    errors = sum(v for k, v in r.items() if k.startswith("errors_"))
    return {
        "rate": r["requests"] / wall,
        "requests": r["requests"],
        "errors": errors,
        "wire_bytes": r["bytes"] / max(r["requests"], 1),
        "server_cpu": (cpu1 - cpu0) / wall,
        "loadgen_cpu": loadgen_cpu / wall,
        "p50_ms": r["latency_p50_us"] / 1e3,
        "p99_ms": r["latency_p99_us"] / 1e3,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args()
    duration = QUICK_DURATION_S if args.quick else DURATION_S
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    wrk = shutil.which("wrk")
    if wrk is None:
        print("bench/server.py needs wrk on PATH (apt-get install -y wrk)", file=sys.stderr)
        return 2

    web = InVitroWeb(get_profile(PROFILE), SEED)
    lists = build_lists(web, page_urls(PROFILE, SEED, URL_COUNT))
    emit(
        BENCH_NAME,
        "page_list",
        len(lists.pages),
        "urls",
        delayed_left_out=lists.delayed,
        tiny_urls=len(lists.tiny),
        profile=PROFILE,
        seed=SEED,
    )
    emit(BENCH_NAME, "mean_body_bytes_per_page", round(lists.plain_bytes), "bytes")
    emit(BENCH_NAME, "mean_body_bytes_per_page_gzip", round(lists.gzip_bytes), "bytes")

    workloads = {"tiny": ("tiny", False), "page": ("pages", False), "page_gzip": ("pages", True)}
    results: dict[str, list[dict[str, float]]] = {w: [] for w in workloads}
    with (
        tempfile.TemporaryDirectory(prefix="irl-bench-server-") as tmp,
        InVitroProcess(profile=PROFILE, seed=SEED, cpu=SERVER_CPU) as server,
    ):
        files = {}
        for name, urls in (("tiny", lists.tiny), ("pages", lists.pages)):
            files[name] = Path(tmp, f"{name}.txt")
            files[name].write_text("\n".join(urls) + "\n")
        proxy = server.info["proxy"]
        proc = psutil.Process(server.pid)
        emit(
            BENCH_NAME,
            "setup",
            proxy,
            "url",
            server_cpu=sorted(os.sched_getaffinity(proc.pid)),
            loadgen_cpu=LOADGEN_CPU,
            connections=CONNECTIONS,
            duration_s=duration,
            rounds=rounds,
        )
        run_wrk(wrk, proxy, files["pages"], False, WARMUP_S, proc)  # warm caches and JIT-free paths
        order = list(workloads)
        for r in range(rounds):
            for name in order[r % 3 :] + order[: r % 3]:  # rotate so drift hits all alike
                source, gzip = workloads[name]
                results[name].append(run_wrk(wrk, proxy, files[source], gzip, duration, proc))
                time.sleep(0.5)

    for name, runs in results.items():
        emit(
            BENCH_NAME,
            f"{name}_responses_per_s",
            round(median([x["rate"] for x in runs]), 1),
            "responses/s",
            rounds=[round(x["rate"], 1) for x in runs],
            errors=sum(x["errors"] for x in runs),
            wire_bytes_per_response=round(median([x["wire_bytes"] for x in runs])),
            server_cpu_utilisation=round(median([x["server_cpu"] for x in runs]), 3),
            loadgen_cpu_utilisation=round(median([x["loadgen_cpu"] for x in runs]), 3),
            latency_p50_ms=round(median([x["p50_ms"] for x in runs]), 2),
            latency_p99_ms=round(median([x["p99_ms"] for x in runs]), 2),
        )
    for name in ("page", "page_gzip"):
        pairs = zip(results[name], results["tiny"], strict=True)
        ratios = [p["rate"] / t["rate"] for p, t in pairs]
        emit(
            BENCH_NAME,
            f"{name}_to_tiny_ratio",
            round(median(ratios), 3),
            "ratio",
            rounds=[round(x, 3) for x in ratios],
        )
        rate = median([x["rate"] for x in results[name]])
        emit(
            BENCH_NAME,
            f"{name}_to_bar_ratio",
            round(rate / BAR_PAGES_PER_S, 3),
            "ratio",
            bar_pages_per_s=BAR_PAGES_PER_S,
            meets_bar=rate >= BAR_PAGES_PER_S,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
