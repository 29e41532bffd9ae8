"""Stock Scrapy crawling the in-vitro ``broad`` web: throughput, CPU and memory baselines.

    python bench/crawl.py [--pages N] [--quick]      # throughput: variants a, b, c, d
    python bench/crawl.py --no-stock [--rounds R]    # throughput: irl (d) and its replay
    python bench/crawl.py --memory [--quick]         # memory curve: variants a, b
    python bench/crawl.py --warc [--rounds R]        # the IRL crawl without and with WARC

Every variant gets a fresh in-vitro web (``InVitroProcess``, profile broad, seed 0)
pinned to core :data:`SERVER_CPU`; the crawler is a separate process pinned to core
:data:`CRAWLER_CPU`, reaching the web through ``http_proxy`` (all other proxy variables
are removed from its environment, so nothing can leave loopback).

Variants
--------
``dfo``   a. ``scrapy crawl broad`` with the project's settings/broad.py minus its
          add-on (``ADDONS={}``: Scrapy's stock scheduler) and Scrapy's defaults for
          everything else: LIFO queues, i.e. depth-first order.
``bfo``   b. the same in breadth-first order: DEPTH_PRIORITY=1 and FIFO queues.
``irl``   d. ``scrapy crawl broad`` with the project's settings as shipped: the IRL
          scheduler (add-on), politeness binding with tau_h = 4 s and tau_s = 0.5 s
          (:data:`IRL_SETTINGS`), reactor lag measured (stats ``irl/reactor/*``). Its
          samples also say whether a host was due (``due``). It writes the URL of every
          response it downloads (``bench/replay.py``'s FetchLog).
``replay`` the floor of issue 22's bar: the irl run's downloads replayed through the
          same spider callback and Scrapy components, without the frontier
          (``bench/replay.py``). It runs right after irl, in every mode; the ratio of
          irl to it is what the frontier costs.
``fetch`` c. the fetch-only floor (issue 4's, kept for the stock variants):
          ``bench/fetchonly.py`` downloads the first pages of ``irlscrapy invitro
          urls --profile broad --seed 0`` with a callback that does nothing, on
          Scrapy's defaults plus the same CONCURRENT_REQUESTS (64), DOWNLOAD_TIMEOUT,
          LOG_LEVEL and DOWNLOAD_MAXSIZE as the broad crawl, and the reactor-lag
          timer (:data:`REACTOR_LAG`), whose figures are the floor's lag.
``warc``  e. ``irl`` with WARC files and content dedup on (:data:`WARC_SETTINGS`; the
          files go to a scratch directory, measured, then deleted). ``--warc`` runs
          ``irl`` and ``warc`` alternately, :data:`WARC_ROUNDS` times each, and reports
          each round's ``warc``/``irl`` pages/s ratio (issue 7's bar: >= 0.85).

Each stops through CLOSESPIDER_PAGECOUNT at the same page budget (:data:`PAGES`
responses; the fetch floor's list is :data:`FETCH_LIST_MARGIN` longer so that it too
stops on the budget, not by running dry; the replay's list is what irl downloaded until
it stopped: the budget and the downloads in flight then). ``bench/sampler.py`` writes
the crawler's state every second to ``bench/results/crawl-VARIANT.jsonl``; rates are
taken at the moment the budget was reached (interpolated between samples), so the
seconds the engine spends closing (waiting for downloads in flight) are not counted.

Memory mode runs a and b without a page budget until the dupefilter has seen
:data:`MEMORY_UNIQUE` URLs or RSS reaches :data:`MEMORY_RSS` (the sampler closes the
spider) or :data:`MEMORY_WALL_S` passes (one SIGINT), and reports RSS per unique URL.

Figures: pages/s, HTML pages/s, links/s, crawler CPU seconds per page (all threads and
the kernel; its kernel part and its reactor thread's part beside it), peak RSS, the
server's CPU share (near 1.0 would mean the server, not the crawler, set the pace) and a
downsampled time series ``[t, pages, unique URLs, RSS]``; headline ratios are each stock
variant's pages/s and CPU per page against the fetch-only floor of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import replay
from common import BENCH, PROXY_VARIABLES, REPO, RESULTS, emit, page_urls

from irlscrapy.invitro.process import InVitroProcess

PROFILE = "broad"
SEED = 0
PAGES = 20_000
QUICK_PAGES = 1_000
SERVER_CPU = 0
CRAWLER_CPU = 1
SAMPLE_SECONDS = 1.0
FETCH_LIST_MARGIN = 1.10
MEMORY_UNIQUE = 1_000_000
QUICK_MEMORY_UNIQUE = 50_000
MEMORY_RSS = 8 * 2**30
#: Wall-clock limits per variant; past them the crawler gets one SIGINT (graceful stop).
CRAWL_WALL_S = 480
MEMORY_WALL_S = 600
STOP_GRACE_S = 90
SERIES_POINTS = 40
BENCH_NAME = "crawl"

BFO_SETTINGS = {
    "DEPTH_PRIORITY": "1",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
}
STOCK_SETTINGS = {"ADDONS": "{}"}
IRL_SETTINGS = {
    "IRL_HOST_DELAY": "4",
    "IRL_HOST_DELAY_MIN": "1",
    "IRL_IP_DELAY": "0.5",
    "IRL_IP_DELAY_MIN": "0.05",
    "IRL_REACTOR_LAG_STATS": "1",
}
WARC_DIR = RESULTS / "warc-scratch"
#: The bar's configuration: WARC files and content dedup (the optional CDXJ index is off,
#: as by default).
WARC_SETTINGS = {"IRL_WARC_DIR": str(WARC_DIR), "IRL_CONTENTSEEN_ENABLED": "1"}
WARC_ROUNDS = 2
SAMPLER = "sampler.Sampler"
#: The reactor-lag extension; the floor runs it too, as the lag a crawl that does no
#: work of its own shows on the same machine.
REACTOR_LAG = "irlscrapy.report.reactorlag.ReactorLag"


@dataclass
class Run:
    variant: str
    samples: list[dict[str, Any]]
    server_cpu_share: float  # server CPU seconds / crawler process wall seconds
    returncode: int
    log: Path


def project_extensions() -> dict[str, int]:
    """The project settings' EXTENSIONS, which ``-s EXTENSIONS=`` would otherwise replace."""
    return dict(runpy.run_path(str(REPO / "settings" / "broad.py"))["EXTENSIONS"])


def crawler_env(info: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    env.update(info["env"])
    if not env.get("http_proxy", "").startswith("http://127."):
        raise RuntimeError(f"in-vitro web gave no loopback http_proxy: {info['env']}")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH), env.get("PYTHONPATH")]))
    return env


def sampler_settings(sample_file: Path, extensions: dict[str, int]) -> list[str]:
    ext = {**extensions, SAMPLER: 600}
    return [
        "-s",
        f"EXTENSIONS={json.dumps(ext)}",
        "-s",
        f"BENCH_SAMPLER_FILE={sample_file}",
        "-s",
        f"BENCH_SAMPLER_INTERVAL={SAMPLE_SECONDS}",
    ]


def run_variant(
    variant: str, make_cmd: Callable[[dict[str, Any], Path], list[str]], wall_limit: float
) -> Run:
    RESULTS.mkdir(exist_ok=True)
    sample_file = RESULTS / f"crawl-{variant}.jsonl"
    log = RESULTS / f"crawl-{variant}.log"
    sample_file.unlink(missing_ok=True)
    with (
        InVitroProcess(profile=PROFILE, seed=SEED, cpu=SERVER_CPU) as server,
        open(log, "w", encoding="utf-8") as log_file,
    ):
        assert server.pid is not None
        server_proc = psutil.Process(server.pid)
        cmd = make_cmd(server.info, sample_file)
        server_cpu0 = sum(server_proc.cpu_times()[:2])
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=crawler_env(server.info),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=lambda: os.sched_setaffinity(0, {CRAWLER_CPU}),
        )
        try:
            proc.wait(wall_limit)
        except subprocess.TimeoutExpired:
            print(f"{variant}: wall limit {wall_limit} s reached; sending SIGINT", file=sys.stderr)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        wall = time.monotonic() - started
        server_cpu = sum(server_proc.cpu_times()[:2]) - server_cpu0
    samples = []
    if sample_file.exists():
        samples = [json.loads(line) for line in sample_file.read_text().splitlines() if line]
    if not samples:
        raise RuntimeError(f"{variant}: the sampler wrote nothing; see {log}")
    return Run(variant, samples, server_cpu / wall, proc.returncode, log)


def interpolate(samples: list[dict[str, Any]], key: str, target: float) -> dict[str, float]:
    """Every numeric field of the samples, linearly interpolated where ``key`` == target;
    the last sample if the run never got there."""
    prev = samples[0]
    for s in samples[1:]:
        if s[key] >= target:
            span = s[key] - prev[key]
            f = (target - prev[key]) / span if span else 1.0
            return {
                k: prev[k] + f * (s[k] - prev[k])
                for k in s
                if isinstance(s[k], int | float) and not isinstance(s[k], bool)
            }
        prev = s
    return {k: v for k, v in samples[-1].items() if isinstance(v, int | float)}


def series(samples: list[dict[str, Any]]) -> list[list[float]]:
    """At most SERIES_POINTS samples, evenly spaced, as [t, pages, unique, rss]."""
    step = max(1, len(samples) // SERIES_POINTS)
    picked = samples[::step]
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    return [[round(s["t"], 1), s["pages"], s["unique"], s["rss"]] for s in picked]


def tenth_rates(samples: list[dict[str, Any]], budget: int) -> dict[str, float]:
    """pages/s and CPU s/page over the first and the last tenth of the page budget: a
    rate that falls while the frontier grows shows as last < first."""
    out = {}
    for name, lo, hi in (("first_tenth", 0.0, 0.1), ("last_tenth", 0.9, 1.0)):
        a = interpolate(samples, "pages", budget * lo) if lo else samples[0]
        b = interpolate(samples, "pages", budget * hi)
        pages = max(b["pages"] - a["pages"], 1e-9)
        out[f"pages_per_s_{name}"] = pages / max(b["t"] - a["t"], 1e-9)
        out[f"cpu_s_per_page_{name}"] = (b["cpu"] - a["cpu"]) / pages
    return out


def throughput_figures(run: Run, budget: int) -> dict[str, float]:
    s = run.samples
    first = s[0]
    at = interpolate(s, "pages", budget)
    reached = s[-1]["pages"] >= budget
    pages = budget if reached else s[-1]["pages"]
    t = max(at["t"], 1e-9)
    cpu = at["cpu"] - first["cpu"]
    figures = {
        "pages_per_s": pages / t,
        "html_pages_per_s": at["html"] / t,
        "links_per_s": at["links"] / t,
        "cpu_s_per_page": cpu / max(pages, 1),
        # its parts: the kernel's, and the reactor thread's (the rest: other threads)
        "cpu_system_s_per_page": (at["cpu_system"] - first["cpu_system"]) / max(pages, 1),
        "cpu_reactor_s_per_page": (at["cpu_reactor"] - first["cpu_reactor"]) / max(pages, 1),
        "crawler_cpu_share": cpu / t,
        "peak_rss_bytes": max(x["rss"] for x in s),
        "unique_urls": at["unique"],
        "seconds_to_budget": t,
        "seconds_incl_close": s[-1]["t"],
        **tenth_rates(s, budget),
    }
    reason = next((x.get("reason") for x in s if x["event"] == "close"), None)
    emit(
        BENCH_NAME,
        "run",
        run.variant,
        "variant",
        pages=pages,
        reached_budget=reached,
        close_reason=reason,
        returncode=run.returncode,
        server_cpu_share=round(run.server_cpu_share, 3),
        log=str(run.log.relative_to(REPO)),
    )
    units = {
        "pages_per_s": "pages/s",
        "html_pages_per_s": "pages/s",
        "links_per_s": "links/s",
        "cpu_s_per_page": "s/page",
        "crawler_cpu_share": "cores",
        "peak_rss_bytes": "bytes",
        "unique_urls": "urls",
        "seconds_to_budget": "s",
        "seconds_incl_close": "s",
    }
    for name, value in figures.items():
        unit = units.get(name) or ("s/page" if name.startswith("cpu") else "pages/s")
        emit(
            BENCH_NAME, name, round(value, 6 if unit == "s/page" else 1), unit, variant=run.variant
        )
    emit(
        BENCH_NAME, "series", series(s), "[t_s, pages, unique_urls, rss_bytes]", variant=run.variant
    )
    return figures


def memory_figures(run: Run, limit: int) -> dict[str, float]:
    s = run.samples
    first, last = s[0], s[-1]
    top = max(s, key=lambda x: x["unique"])
    at = interpolate(s, "unique", limit)
    reason = next((x.get("reason") for x in s if x["event"] == "close"), None)
    # marginal cost: least-squares slope of RSS on unique URLs over the second half
    half = [x for x in s if x["unique"] >= top["unique"] / 2 and x["event"] != "close"]
    slope = float("nan")
    if len(half) >= 3:
        n = len(half)
        mx = sum(x["unique"] for x in half) / n
        my = sum(x["rss"] for x in half) / n
        sxx = sum((x["unique"] - mx) ** 2 for x in half)
        if sxx:
            slope = sum((x["unique"] - mx) * (x["rss"] - my) for x in half) / sxx
    emit(
        BENCH_NAME,
        "memory_run",
        run.variant,
        "variant",
        close_reason=reason,
        returncode=run.returncode,
        unique_urls=top["unique"],
        pages=top["pages"],
        seconds=round(last["t"], 1),
        reached_limit=top["unique"] >= limit,
        server_cpu_share=round(run.server_cpu_share, 3),
        log=str(run.log.relative_to(REPO)),
    )
    rss_limit = at["rss"] if top["unique"] >= limit else top["rss"]
    unique = min(limit, top["unique"])
    figures = {
        "rss_bytes_per_unique_url": (rss_limit - first["rss"]) / max(unique, 1),
        "marginal_rss_bytes_per_unique_url": slope,
        "rss_bytes_at_limit": rss_limit,
        "rss_bytes_at_open": first["rss"],
        "peak_rss_bytes": max(x["rss"] for x in s),
        "scheduled_at_limit": at["scheduled"],
    }
    if top["unique"] < limit:  # stopped early (wall clock): a straight line to the limit
        figures["rss_bytes_at_limit_extrapolated"] = first["rss"] + slope * limit
    for name, value in figures.items():
        emit(
            BENCH_NAME,
            name,
            round(value, 1),
            "bytes" if "rss" in name else "requests",
            variant=run.variant,
            unique_urls=unique,
        )
    emit(
        BENCH_NAME,
        "memory_series",
        series(s),
        "[t_s, pages, unique_urls, rss_bytes]",
        variant=run.variant,
    )
    return figures


#: Samples before this many seconds do not count for the due share (issue 40's bar: the
#: seeds' DNS and robots.txt come first).
DUE_AFTER_S = 2.0


def irl_figures(run: Run, budget: int) -> None:
    """The IRL run's own bars: a host due in >= 99% of samples taken while it crawled
    (after DUE_AFTER_S, before the page budget; not while it closes); reactor lag p99.9."""
    ticks = [
        s
        for s in run.samples
        if s["event"] == "tick" and "due" in s and s["t"] >= DUE_AFTER_S and s["pages"] < budget
    ]
    if ticks:
        emit(
            BENCH_NAME,
            "irl_due_sample_share",
            round(sum(s["due"] for s in ticks) / len(ticks), 4),
            "share",
            samples=len(ticks),
        )
    lag_figures(run, "irl")


def lag_figures(run: Run, prefix: str) -> None:
    """The reactor-lag stats (ReactorLag) the run's log dumped."""
    log = run.log.read_text(errors="replace")
    for key in ("lag_p50_ms", "lag_p99_ms", "lag_p999_ms", "lag_max_ms"):
        found = re.search(rf"'irl/reactor/{key}': ([0-9.]+)", log)
        if found:
            emit(BENCH_NAME, f"{prefix}_reactor_{key}", float(found.group(1)), "ms")


def broad_cmd(
    extra: list[str], extensions: dict[str, int] | None = None
) -> Callable[[dict[str, Any], Path], list[str]]:
    """``scrapy crawl broad`` on the in-vitro web with ``extra`` settings; EXTENSIONS: the
    project's and the sampler, and ``extensions``."""

    def make(info: dict[str, Any], sample_file: Path) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "broad",
            "-a",
            "seeds=" + ",".join(info["seeds"]),
        ]
        for name, value in info["settings"].items():  # what -a seeds=invitro would set
            cmd += ["-s", f"{name}={value}"]
        ext = {**project_extensions(), **(extensions or {})}
        return cmd + sampler_settings(sample_file, ext) + extra

    return make


def fetch_cmd(url_file: Path, budget: int) -> Callable[[dict[str, Any], Path], list[str]]:
    def make(info: dict[str, Any], sample_file: Path) -> list[str]:
        return [
            sys.executable,
            str(BENCH / "fetchonly.py"),
            str(url_file),
            "-s",
            f"CLOSESPIDER_PAGECOUNT={budget}",
            "-s",
            "IRL_REACTOR_LAG_STATS=True",
            *sampler_settings(sample_file, {REACTOR_LAG: 0}),
        ]

    return make


def as_args(settings: dict[str, str]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


def bfo_settings() -> list[str]:
    return as_args({**STOCK_SETTINGS, **BFO_SETTINGS})


def throughput(budget: int, stock: bool = True, round_: int = 0) -> float:
    """One run of each variant; return the IRL crawl's pages/s ratio to the floor."""
    emit(
        BENCH_NAME,
        "setup",
        budget,
        "pages",
        profile=PROFILE,
        seed=SEED,
        server_cpu=SERVER_CPU,
        crawler_cpu=CRAWLER_CPU,
        sample_seconds=SAMPLE_SECONDS,
        round=round_,
    )
    RESULTS.mkdir(exist_ok=True)
    page_budget = ["-s", f"CLOSESPIDER_PAGECOUNT={budget}"]
    fetched = RESULTS / "irl-fetched.txt"
    irl_settings = as_args({**IRL_SETTINGS, replay.LOG_SETTING: str(fetched)})
    runs = {
        "irl": run_variant(
            "irl",
            broad_cmd(page_budget + irl_settings, {replay.FETCH_LOG_EXTENSION: 0}),
            CRAWL_WALL_S,
        ),
        "replay": run_variant(
            "replay",
            broad_cmd(
                page_budget + as_args(replay.replay_settings(fetched)), replay.REPLAY_EXTENSIONS
            ),
            CRAWL_WALL_S,
        ),
    }
    if stock:
        url_file = RESULTS / "fetch-urls.txt"
        pages = page_urls(PROFILE, SEED, int(budget * FETCH_LIST_MARGIN))
        url_file.write_text("\n".join(pages) + "\n")
        runs["fetch"] = run_variant("fetch", fetch_cmd(url_file, budget), CRAWL_WALL_S)
        runs["dfo"] = run_variant(
            "dfo", broad_cmd(page_budget + as_args(STOCK_SETTINGS)), CRAWL_WALL_S
        )
        runs["bfo"] = run_variant("bfo", broad_cmd(page_budget + bfo_settings()), CRAWL_WALL_S)
    figures = {name: throughput_figures(run, budget) for name, run in runs.items()}
    # (figure, the variant's figure, the floor's)
    ratios = (
        ("pages_per_s_to_floor_ratio", "pages_per_s", "pages_per_s"),
        ("html_pages_per_s_to_floor_ratio", "html_pages_per_s", "pages_per_s"),
        ("cpu_per_page_to_floor_ratio", "cpu_s_per_page", "cpu_s_per_page"),
    )
    # the replay (irl's own downloads, no frontier) for every variant; the fetch-only
    # floor (page URLs only, a callback that does nothing) for the stock variants too
    for floor_name in [n for n in ("replay", "fetch") if n in runs]:
        floor = figures[floor_name]
        for name in [n for n in runs if n not in ("replay", "fetch")]:
            for figure, key, floor_key in ratios:
                ratio = round(figures[name][key] / floor[floor_key], 3)
                emit(
                    BENCH_NAME, figure, ratio, "ratio", variant=name, floor=floor_name, round=round_
                )
        lag_figures(runs[floor_name], floor_name)
    irl_figures(runs["irl"], budget)
    # What the frontier costs per page, all threads and the kernel beside the reactor's
    for key in ("cpu_s_per_page", "cpu_reactor_s_per_page", "cpu_system_s_per_page"):
        irl_cpu, replay_cpu = figures["irl"][key], figures["replay"][key]
        emit(
            BENCH_NAME,
            f"irl_minus_replay_{key}",
            round(irl_cpu - replay_cpu, 6),
            "s/page",
            irl=round(irl_cpu, 6),
            replay=round(replay_cpu, 6),
            round=round_,
        )
    irl_ratio = figures["irl"]["pages_per_s"] / figures["replay"]["pages_per_s"]
    if not stock:
        return irl_ratio
    for name in ("dfo", "bfo"):
        emit(
            BENCH_NAME,
            "irl_to_stock_pages_per_s_ratio",
            round(figures["irl"]["pages_per_s"] / figures[name]["pages_per_s"], 3),
            "ratio",
            variant=name,
        )
    emit(
        BENCH_NAME,
        "bfo_to_dfo_pages_per_s_ratio",
        round(figures["bfo"]["pages_per_s"] / figures["dfo"]["pages_per_s"], 3),
        "ratio",
    )
    return irl_ratio


def throughput_rounds(budget: int, stock: bool, rounds: int) -> None:
    """``rounds`` runs of the floor and the IRL crawl (and the stock variants), each
    pair back to back, and the median of their pages/s ratios: on a shared machine one
    pair's floor alone moves by a factor of up to 1.9 between runs."""
    ratios = [throughput(budget, stock, round_) for round_ in range(1, rounds + 1)]
    if rounds > 1:
        emit(
            BENCH_NAME,
            "irl_pages_per_s_to_floor_ratio_median",
            round(statistics.median(ratios), 3),
            "ratio",
            rounds=[round(r, 3) for r in ratios],
        )


def memory(limit: int, wall_s: float, variants: list[str]) -> None:
    emit(
        BENCH_NAME,
        "memory_setup",
        limit,
        "unique urls",
        rss_limit_bytes=MEMORY_RSS,
        wall_limit_s=wall_s,
        profile=PROFILE,
        seed=SEED,
    )
    stop = [
        "-s",
        f"BENCH_SAMPLER_STOP_UNIQUE={limit}",
        "-s",
        f"BENCH_SAMPLER_STOP_RSS={MEMORY_RSS}",
    ]
    extra = {"dfo": as_args(STOCK_SETTINGS), "bfo": bfo_settings()}
    figures = {
        name: memory_figures(
            run_variant(f"mem-{name}", broad_cmd(stop + extra[name]), wall_s), limit
        )
        for name in variants
    }
    if len(figures) == 2:
        emit(
            BENCH_NAME,
            "dfo_to_bfo_rss_per_unique_url_ratio",
            round(
                figures["dfo"]["rss_bytes_per_unique_url"]
                / figures["bfo"]["rss_bytes_per_unique_url"],
                3,
            ),
            "ratio",
        )


def warc(budget: int, rounds: int) -> None:
    """``irl`` and ``warc`` alternately; each round's pages/s ratio, and the archive."""
    import shutil

    emit(BENCH_NAME, "setup", budget, "pages", profile=PROFILE, seed=SEED, rounds=rounds)
    page_budget = ["-s", f"CLOSESPIDER_PAGECOUNT={budget}"]
    for round_ in range(1, rounds + 1):
        shutil.rmtree(WARC_DIR, ignore_errors=True)
        irl = throughput_figures(
            run_variant("irl", broad_cmd(page_budget + as_args(IRL_SETTINGS)), CRAWL_WALL_S),
            budget,
        )
        warc_run = run_variant(
            "warc",
            broad_cmd(page_budget + as_args({**IRL_SETTINGS, **WARC_SETTINGS})),
            CRAWL_WALL_S,
        )
        archived = throughput_figures(warc_run, budget)
        ratio = archived["pages_per_s"] / irl["pages_per_s"]
        emit(BENCH_NAME, "warc_to_irl_pages_per_s_ratio", round(ratio, 3), "ratio", round=round_)
        log = warc_run.log.read_text(errors="replace")
        stats = {
            key: int(found.group(1))
            for key in ("irl/warc/records", "irl/warc/revisits", "irl/warc/bytes", "irl/warc/files")
            if (found := re.search(rf"'{key}': ([0-9]+)", log))
        }
        size = sum(p.stat().st_size for p in WARC_DIR.glob("*.warc.gz"))
        emit(BENCH_NAME, "warc_files", stats, "stats", round=round_, bytes_on_disk=size)
        lag_figures(warc_run, f"warc_round{round_}")
        shutil.rmtree(WARC_DIR, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=PAGES, help=f"page budget ({PAGES})")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK_PAGES} pages, or {QUICK_MEMORY_UNIQUE} URLs",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help=f"memory curve up to {MEMORY_UNIQUE} unique URLs instead",
    )
    parser.add_argument(
        "--wall",
        type=float,
        default=MEMORY_WALL_S,
        help=f"memory mode: seconds per variant before SIGINT ({MEMORY_WALL_S})",
    )
    parser.add_argument(
        "--no-stock",
        action="store_true",
        help="throughput: the floor and the IRL crawl only (no stock variants)",
    )
    parser.add_argument(
        "--variant",
        choices=("dfo", "bfo"),
        action="append",
        help="memory mode: only these variants (default both)",
    )
    parser.add_argument(
        "--warc",
        action="store_true",
        help="the IRL crawl without and with WARC files + content dedup, alternately",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        help=f"throughput: rounds, with the median ratio (1); --warc: rounds ({WARC_ROUNDS})",
    )
    args = parser.parse_args()
    if args.warc:
        warc(QUICK_PAGES if args.quick else args.pages, args.rounds or WARC_ROUNDS)
    elif args.memory:
        memory(
            QUICK_MEMORY_UNIQUE if args.quick else MEMORY_UNIQUE,
            args.wall,
            args.variant or ["dfo", "bfo"],
        )
    else:
        budget = QUICK_PAGES if args.quick else args.pages
        throughput_rounds(budget, not args.no_stock, args.rounds or 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
