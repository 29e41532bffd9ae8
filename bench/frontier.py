"""The frontier alone, no network: RSS against unique discovered URLs, beside stock Scrapy's.

    python bench/frontier.py                 # until 10,000,000 unique URLs (URLSEEN_TARGET)
    python bench/frontier.py --urls 200000   # a smoke run
    python bench/frontier.py -s IRL_WORKBENCH_URLS=25000   # a setting on top (repeatable)

The issue's bar: *RSS <= 400 MB at 10 million unique discovered URLs (after URLseen),
with the RSS-vs-discovered curve printed beside stock Scrapy's*.

What runs
---------
The real ``IRLScheduler`` and its ``DRUMDupeFilter``, built by Scrapy
(``get_crawler`` with the add-on ``irlscrapy.Addon``, ``IRLScheduler.from_crawler``,
``open(spider)``) inside a running asyncio reactor, with the project's defaults except:
politeness delays 0 (``IRL_HOST_DELAY``, ``IRL_IP_DELAY`` and their floors), the address
guard opened for 127.0.0.0/8 (``IRL_ALLOW_PRIVATE_ADDRESSES``), and a state
directory under a temporary directory. ``crawler.engine`` is None: the scheduler's engine
waker has nothing to wake, which it tolerates. Everything else is the default: 64 MiB
for URLseen, a 100,000-URL workbench, 64 URLs per host, the 25,000-entry DNS cache,
robots.txt obeyed, Referer on.

- **DNS** is answered in process: the crawl's one ``DNSCache`` (``DNSCache.of(crawler)``)
  gets a :class:`LoopbackResolver` as its resolver, which answers every name at once
  with an address in 127.0.0.0/8 derived from the name (no TTL, so the cache's default
  TTL applies). The cache itself (RAM LRU, LevelDB spill) is the real one.
- **Pages**: each page fed is one ``irlscrapy.Links`` of :data:`LINKS_PER_PAGE` URLs of
  which 6 or 7 in turn (:data:`NEW_PER_PAGE` = 6.5 on average, IRLbot's L) are URLs never
  generated before; the others repeat earlier URLs chosen uniformly. URL number ``i`` is
  computed from ``i`` alone (so the driver holds no URL list): its PLD ``d<D>.com`` is
  drawn log-uniformly from 1..:data:`PLDS` (Zipf-like popularity, P(D) ~ 1/D), its host
  ``h<K>.d<D>.com`` uniformly among the PLD's ``ceil(HOSTS_TOP / D)`` hosts, so popular
  PLDs have many hosts; its path is ``/articles/<i in hex>/index.html`` (about 50 bytes
  a URL). The page's source and depth are those of the request just taken, if any.
- **Downloads**: after each page fed, ``next_request()`` is called until it yields a page
  request (at most :data:`TAKES_PER_PAGE` calls): one page taken per page fed. Every
  request taken "ends" at once: ``request_left_downloader`` is sent, and a robots.txt
  request gets its callback called with a 404 response (allow all), as the downloader
  would. So hosts are released immediately and their URLs flow. The page of a request
  taken is the next page fed (its source and depth); once its links are enqueued,
  ``page_done(request)`` is called, as ``PageDoneMiddleware`` would (robots.txt
  requests: after their callback).
- **STAR**: each page fed is also recorded by the crawl's ``StarMiddleware`` (its PLD
  and the PLDs of its first :data:`EXTERNAL_LINKS` links, the broad web's share of
  links to other PLDs), so STAR's two DRUMs and ranking are in the figures.
- The feed runs as one ``task.cooperate`` task (the scheduler's drain is another), one
  page per iteration, so the reactor stays free for URLseen merges finishing in their
  worker thread; a :class:`irlscrapy.report.reactorlag.ReactorLag` timer measures how
  late the reactor ran.

Figures
-------
Every time ``irl/urlseen/unique`` passes a multiple of :data:`REPORT_EVERY` (it moves in
steps: URLseen merges in generations of tens of millions of tuples), one ``point``
line: unique URLs, RSS (``psutil``: anonymous and file-backed, from /proc/self/status),
the peak RSS sampled every :data:`SAMPLE_SECONDS` since the previous point, stock
Scrapy's RSS at the same number of unique URLs extrapolated from BENCHMARKS.md section
2(d) (:data:`STOCK_RSS_AT_OPEN` + :data:`STOCK_BYTES_PER_URL` per URL), and our RSS as a
ratio to it. At the end: RSS and bytes per URL at the target, the marginal bytes per
URL (least-squares slope over the second half of the points), peak RSS, the bar's
verdict, pages/s of the driver, CPU per page on the reactor thread (without the
driver's own URL generation) against the performance model's 2 ms per page, and the
reactor-lag percentiles.
"""

from __future__ import annotations

import argparse
import gc
import logging
import math
import resource
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from common import ADDON_ON_LOOPBACK, emit, memory
from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler
from twisted.internet import defer, task

from irlscrapy.links import Links
from irlscrapy.middlewares.star import StarMiddleware
from irlscrapy.report.reactorlag import ReactorLag, percentile
from irlscrapy.scheduler.hosts.dns import DNSCache
from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.keys import ROBOTS_KEY

BENCH_NAME = "frontier"
URLSEEN_TARGET = 10_000_000  # unique discovered URLs (stat irl/urlseen/unique)
REPORT_EVERY = 500_000
LINKS_PER_PAGE = 60
#: Links of a page that STAR sees as links to other PLDs (the broad profile's 20%).
EXTERNAL_LINKS = 12
NEW_PER_PAGE = 6.5  # 6 and 7 in turn
PLDS = 200_000
HOSTS_TOP = 10_000  # hosts of the most popular PLD; PLD D has ceil(HOSTS_TOP / D)
SEED = 20070609
GEN_PAGES = 256  # pages whose URLs are generated in one numpy batch
TAKES_PER_PAGE = 8  # next_request() calls per page fed, robots.txt fetches included
SAMPLE_SECONDS = 1.0
PROGRESS_SECONDS = 60.0  # a "progress" line this often, whatever the unique count does
#: Stock Scrapy, BENCHMARKS.md section 2(d), variant (a) dfo, 600 s run: RSS at open
#: 90 MB, 2,898 bytes per unique URL (bfo 2,969; the 45-minute dfo run 2,818).
STOCK_RSS_AT_OPEN = 90_000_000
STOCK_BYTES_PER_URL = 2_898
RSS_BAR = 400_000_000  # bytes ("400 MB", as BENCHMARKS.md counts MB)
PAGE_BUDGET_S = 0.002  # DESIGN.md's performance model: 2 ms per page, everything included
REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

SETTINGS: dict[str, Any] = {
    **ADDON_ON_LOOPBACK,  # LoopbackResolver answers in 127.0.0.0/8
    "ROBOTSTXT_OBEY": True,
    "LOG_LEVEL": "WARNING",
}

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


class FrontierSpider(Spider):
    name = "frontier"


class IdleEngine:
    """Stands in for ``crawler.engine``: an engine that runs no spider. Scrapy 2.19 raises
    RuntimeError on reading ``Crawler.engine`` before a crawl starts, and the scheduler's
    waker (irlscrapy/internals.py, ``EngineWaker._nextcall``) and ``IRLScheduler._fatal``
    read it, expecting None; with this they find an engine with no slot and no spider,
    which both treat as "nothing to wake"."""

    _slot = None
    spider = None


class LoopbackResolver:
    """The DNSCache's resolver (HostResolver's two members): every name has an address
    in 127.0.0.0/8, at once."""

    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor
        self.queries = 0

    def close(self) -> None:
        pass  # nothing open

    def query(self, host: str) -> defer.Deferred[tuple[str, float | None]]:
        self.queries += 1
        h = zlib.crc32(host.encode())
        return defer.succeed((f"127.{h >> 16 & 255}.{h >> 8 & 255}.{h & 255 or 1}", None))


def splitmix64(x: np.ndarray) -> np.ndarray:
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def urls_of(ids: np.ndarray) -> list[str]:
    """URL number i, for each i (see the module docstring)."""
    h = splitmix64(ids.astype(np.uint64) ^ np.uint64(SEED))
    u = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    plds = np.minimum(np.exp(u * math.log(PLDS + 1)).astype(np.int64), PLDS)
    hosts = -(-HOSTS_TOP // plds)  # ceil
    k = (splitmix64(h) % hosts.astype(np.uint64)).astype(np.int64)
    return [
        f"http://h{k}.d{d}.com/articles/{i:x}/index.html"
        for i, k, d in zip(ids.tolist(), k.tolist(), plds.tolist(), strict=True)
    ]


class PageSource:
    """Synthetic pages: lists of LINKS_PER_PAGE URLs, 6.5 of them new on average."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.generated = 0  # URL numbers handed out: new URLs so far
        self.pages = 0
        self.seconds = 0.0  # CPU time spent generating (thread time)

    def batch(self, pages: int) -> list[list[str]]:
        t0 = time.thread_time()
        new = 6 + (np.arange(self.pages, self.pages + pages) % 2)  # 6, 7, 6, 7, ...
        firsts = self.generated + np.concatenate(([0], np.cumsum(new)[:-1]))
        ids = np.empty(pages * LINKS_PER_PAGE, dtype=np.int64)
        for p in range(pages):
            row = ids[p * LINKS_PER_PAGE : (p + 1) * LINKS_PER_PAGE]
            n_new, first = int(new[p]), int(firsts[p])
            row[:n_new] = np.arange(first, first + n_new)
            known = max(first, 1)  # URLs generated before this page (the first page: its own)
            row[n_new:] = self.rng.integers(0, known, LINKS_PER_PAGE - n_new)
        urls = urls_of(ids)
        self.generated += int(new.sum())
        self.pages += pages
        self.seconds += time.thread_time() - t0
        return [urls[p * LINKS_PER_PAGE : (p + 1) * LINKS_PER_PAGE] for p in range(pages)]


def stock_rss(unique: int) -> float:
    return STOCK_RSS_AT_OPEN + STOCK_BYTES_PER_URL * unique


class ErrorCounter(logging.Handler):
    """Counts ERROR records (the scheduler reports a failed merge or drain that way)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


class Driver:
    def __init__(self, target: int, reactor: Any, overrides: dict[str, str] | None = None) -> None:
        self.target = target
        self.reactor = reactor
        self.tmp = Path(tempfile.mkdtemp(prefix="irlscrapy-bench-frontier-"))
        self.overrides = dict(overrides or {})
        settings = {**SETTINGS, **self.overrides, "IRL_STATE_DIR": str(self.tmp / "state")}
        self.crawler = get_crawler(FrontierSpider, settings)
        self.crawler.engine = IdleEngine()  # type: ignore[assignment]
        self.resolver = LoopbackResolver(reactor)
        DNSCache.of(self.crawler).resolver = self.resolver
        self.scheduler = IRLScheduler.from_crawler(self.crawler)
        self.star = StarMiddleware.from_crawler(self.crawler)
        self.spider = FrontierSpider.from_crawler(self.crawler)
        self.stats = self.crawler.stats
        self.source = PageSource(SEED)
        self.lag = ReactorLag(self.stats, reactor)
        self.errors = ErrorCounter()
        self.proc = psutil.Process()
        self.points: list[dict[str, Any]] = []
        self.every = min(REPORT_EVERY, max(1, target // 10))
        self.next_report = self.every
        self.next_progress = PROGRESS_SECONDS
        self.taken = self.robots = self.starved = 0
        self.peak_since = 0  # the highest RSS sampled since the previous point
        self.peak = 0
        self.failure: str | None = None
        self.t0 = self.cpu0 = self.main_cpu0 = 0.0
        self.open_mem: dict[str, int] = {}

    # -- the run ---------------------------------------------------------------------
    def start(self) -> defer.Deferred[Any]:
        logging.getLogger().addHandler(self.errors)
        self.scheduler.open(self.spider)
        gc.collect()
        self.open_mem = memory()
        emit(
            BENCH_NAME,
            "setup",
            self.target,
            "unique urls",
            links_per_page=LINKS_PER_PAGE,
            new_per_page=NEW_PER_PAGE,
            plds=PLDS,
            hosts_top=HOSTS_TOP,
            seed=SEED,
            rss_at_open_bytes=self.open_mem["rss"],
            state_dir=str(self.tmp),
            settings=self.overrides,
            stock_rss_at_open_bytes=STOCK_RSS_AT_OPEN,
            stock_bytes_per_url=STOCK_BYTES_PER_URL,
        )
        print(
            f"# {'unique URLs':>12} {'generated':>11} {'pages':>10} {'RSS MB':>8} "
            f"{'anon MB':>8} {'file MB':>8} {'peak MB':>8} {'stock MB':>9} {'ratio':>7} "
            f"{'pages/s':>8}",
            flush=True,
        )
        self.t0 = time.monotonic()
        self.cpu0 = sum(self.proc.cpu_times()[:2])
        self.main_cpu0 = time.thread_time()
        self.lag.probe.start()
        sampler = task.LoopingCall(self.sample)
        sampler.start(SAMPLE_SECONDS)
        done = task.cooperate(self.feed()).whenDone()
        done.addBoth(lambda result: (sampler.stop(), self.lag.probe.stop(), result)[-1])
        return done

    def feed(self) -> Iterator[None]:
        take_from: Request | None = None
        while True:
            for urls in self.source.batch(GEN_PAGES):
                source = take_from.url if take_from is not None else "http://seed.example/"
                depth = take_from.meta.get("depth", 0) if take_from is not None else 0
                self.scheduler.enqueue_links(Links(source, urls, depth))
                # STAR sees the page as StarMiddleware would: its first EXTERNAL_LINKS
                # links stand for its links to other PLDs (the broad web's share)
                self.star.record(Response(source), urls[:EXTERNAL_LINKS])
                if take_from is not None:  # its links are handed over: as PageDoneMiddleware
                    self.scheduler.page_done(take_from)
                take_from = self.take()
                if self.errors.count:
                    self.failure = f"{self.errors.count} ERROR log records (see above)"
                    return
                unique = self.stats.get_value("irl/urlseen/unique", 0)
                while unique >= self.next_report:
                    self.point(unique)
                    self.next_report += self.every
                if unique >= self.target:
                    return
                yield None

    def take(self) -> Request | None:
        """Take requests until one is a page; each ends at once, as a download would."""
        for _ in range(TAKES_PER_PAGE):
            request = self.scheduler.next_request()
            if request is None:
                self.starved += 1
                return None
            self.crawler.signals.send_catch_log(
                signals.request_left_downloader, request=request, spider=self.spider
            )
            if ROBOTS_KEY in request.meta:
                self.robots += 1
                # (an async callback: a 404 runs it to its end at once)
                defer.ensureDeferred(
                    request.callback(Response(request.url, status=404, request=request))
                )
                self.scheduler.page_done(request)  # as PageDoneMiddleware would
                continue
            self.taken += 1
            return request
        return None

    def sample(self) -> None:
        rss = memory()["rss"]
        self.peak_since = max(self.peak_since, rss)
        self.peak = max(self.peak, rss)
        elapsed = time.monotonic() - self.t0
        if elapsed >= self.next_progress:
            self.next_progress += PROGRESS_SECONDS
            emit(
                BENCH_NAME,
                "progress",
                round(elapsed),
                "s",
                pages=self.source.pages,
                generated_urls=self.source.generated,
                unique_urls=self.stats.get_value("irl/urlseen/unique", 0),
                rss_bytes=rss,
                peak_rss_bytes=self.peak,
                **self.sizes(),
            )

    def sizes(self) -> dict[str, int]:
        """What the frontier holds in RAM, counted (for reading the curve)."""
        frontier = self.scheduler.frontier
        if frontier is None:
            return {}
        workbench = frontier.workbench
        return {
            "beast_urls": len(frontier.beast),
            "beast_domains": len(getattr(frontier.beast, "_domains", ())),
            "workbench_urls": len(workbench),
            "workbench_hosts": len(workbench.hosts),
            "workbench_ips": len(workbench.ips),
            "robots_hosts_in_ram": len(self.scheduler.hosts.robots),
            "dns_entries_in_ram": len(self.scheduler.hosts.dns),
            "urlseen_pending": self.scheduler.urlseen.pending,
        }

    def point(self, unique: int) -> None:
        mem = memory()
        peak = max(self.peak_since, mem["rss"])
        self.peak = max(self.peak, peak)
        self.peak_since = 0
        elapsed = time.monotonic() - self.t0
        pages = self.source.pages
        stock = stock_rss(unique)
        point = {
            "unique_urls": unique,
            "generated_urls": self.source.generated,
            "pages": pages,
            "seconds": round(elapsed, 1),
            "rss_bytes": mem["rss"],
            "rss_anon_bytes": mem["rss_anon"],
            "rss_file_bytes": mem["rss_file"],
            "peak_rss_bytes_since_last": peak,
            "stock_rss_bytes": round(stock),
            "rss_to_stock_ratio": round(mem["rss"] / stock, 4),
            **self.sizes(),
        }
        self.points.append(point)
        emit(
            BENCH_NAME,
            "point",
            unique,
            "unique urls",
            **{k: v for k, v in point.items() if k != "unique_urls"},
        )
        print(
            f"# {unique:>12,} {self.source.generated:>11,} {pages:>10,} "
            f"{mem['rss'] / 1e6:>8.1f} {mem['rss_anon'] / 1e6:>8.1f} "
            f"{mem['rss_file'] / 1e6:>8.1f} {peak / 1e6:>8.1f} {stock / 1e6:>9.1f} "
            f"{mem['rss'] / stock:>7.4f} {pages / max(elapsed, 1e-9):>8.0f}",
            flush=True,
        )

    # -- the end ---------------------------------------------------------------------
    def report(self) -> bool:
        """Print the final figures; True if the run reached its target without failure
        (whether the bar is met is a printed figure, not the exit status)."""
        elapsed = time.monotonic() - self.t0
        cpu = sum(self.proc.cpu_times()[:2]) - self.cpu0
        main_cpu = time.thread_time() - self.main_cpu0
        pages = self.source.pages
        unique = self.stats.get_value("irl/urlseen/unique", 0)
        mem = memory()
        self.peak = max(self.peak, mem["rss"])
        reached = unique >= self.target
        half = [p for p in self.points if p["unique_urls"] >= unique / 2]
        slope = float("nan")
        if len({p["unique_urls"] for p in half}) >= 2:
            xs = np.array([p["unique_urls"] for p in half], dtype=float)
            ys = np.array([p["rss_bytes"] for p in half], dtype=float)
            slope = float(np.polyfit(xs, ys, 1)[0])
        open_rss = self.open_mem["rss"]
        stock = stock_rss(unique)
        reactor_cpu = main_cpu - self.source.seconds
        stats = self.stats.get_stats()
        emit(
            BENCH_NAME,
            "run",
            "irl",
            "scheduler",
            reached_target=reached,
            failure=self.failure,
            pages=pages,
            generated_urls=self.source.generated,
            seconds=round(elapsed, 1),
            page_requests_taken=self.taken,
            robots_requests_taken=self.robots,
            next_request_none=self.starved,
            dns_queries=self.resolver.queries,
            urlseen_merges=stats.get("irl/urlseen/merges", 0),
            dupefilter_filtered=stats.get("dupefilter/filtered", 0),
            frontier_deferred=stats.get("irl/frontier/deferred", 0),
            dns_spilled=stats.get("irl/dns/spilled", 0),
            **self.sizes(),
        )
        figures: list[tuple[str, Any, str]] = [
            ("unique_urls", unique, "urls"),
            ("rss_bytes_at_end", mem["rss"], "bytes"),
            ("rss_anon_bytes_at_end", mem["rss_anon"], "bytes"),
            ("rss_file_bytes_at_end", mem["rss_file"], "bytes"),
            ("rss_bytes_at_open", open_rss, "bytes"),
            ("peak_rss_bytes", self.peak, "bytes"),
            ("vm_hwm_bytes", mem["hwm"], "bytes"),
            (
                "rss_bytes_per_unique_url",
                round((mem["rss"] - open_rss) / max(unique, 1), 1),
                "bytes",
            ),
            ("marginal_rss_bytes_per_unique_url", round(slope, 1), "bytes"),
            ("stock_rss_bytes_extrapolated", round(stock), "bytes"),
            ("rss_to_stock_ratio", round(mem["rss"] / stock, 4), "ratio"),
            (
                "bytes_per_url_to_stock_ratio",
                round((mem["rss"] - open_rss) / max(unique, 1) / STOCK_BYTES_PER_URL, 4),
                "ratio",
            ),
            ("rss_to_bar_ratio", round(mem["rss"] / RSS_BAR, 4), "ratio"),
            ("peak_rss_to_bar_ratio", round(self.peak / RSS_BAR, 4), "ratio"),
            ("pages_per_s", round(pages / max(elapsed, 1e-9), 1), "pages/s"),
            ("unique_urls_per_s", round(unique / max(elapsed, 1e-9), 1), "urls/s"),
            ("cpu_s_per_page", round(cpu / max(pages, 1), 7), "s/page"),
            ("reactor_cpu_s_per_page", round(reactor_cpu / max(pages, 1), 7), "s/page"),
            (
                "reactor_cpu_per_page_to_budget_ratio",
                round(reactor_cpu / max(pages, 1) / PAGE_BUDGET_S, 4),
                "ratio",
            ),
            (
                "driver_generation_cpu_s_per_page",
                round(self.source.seconds / max(pages, 1), 7),
                "s/page",
            ),
            ("worker_threads_cpu_s", round(cpu - main_cpu, 1), "s"),
        ]
        for q_name, q in (("p50", 50.0), ("p99", 99.0), ("p999", 99.9)):
            figures.append(
                (f"reactor_lag_{q_name}_ms", round(percentile(self.lag.hist, q) * 1e3, 2), "ms")
            )
        figures.append(("reactor_lag_max_ms", round(self.lag.max_lag * 1e3, 1), "ms"))
        for name, value, unit in figures:
            emit(BENCH_NAME, name, value, unit, unique_urls=unique)
        ok = reached and self.failure is None
        # The bar is set at URLSEEN_TARGET unique URLs; a smaller run is not judged.
        judged = self.target >= URLSEEN_TARGET
        met = ok and mem["rss"] <= RSS_BAR
        if judged:
            emit(
                BENCH_NAME,
                "bar_rss_400mb_at_10m",
                met,
                "bool",
                target=self.target,
                peak_within_bar=self.peak <= RSS_BAR,
            )
        verdict = ("met" if met else "NOT met") if judged else "not judged below 10 M URLs"
        print(
            f"# {unique:,} unique URLs in {elapsed:.0f} s ({pages:,} pages, "
            f"{pages / max(elapsed, 1e-9):.0f} pages/s): RSS {mem['rss'] / 1e6:.1f} MB "
            f"(peak {self.peak / 1e6:.1f} MB), {(mem['rss'] - open_rss) / max(unique, 1):.1f} "
            f"bytes/URL above open; stock extrapolated {stock / 1e6:.0f} MB "
            f"(ratio {mem['rss'] / stock:.4f}); bar {verdict}",
            flush=True,
        )
        return ok

    def close(self) -> defer.Deferred[Any]:
        closing = self.scheduler.close("finished") or defer.succeed(None)

        def cleanup(result: Any) -> Any:
            logging.getLogger().removeHandler(self.errors)
            shutil.rmtree(self.tmp, ignore_errors=True)
            return result

        return closing.addBoth(cleanup)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--urls",
        type=int,
        default=URLSEEN_TARGET,
        help=f"unique URLs to reach ({URLSEEN_TARGET:,})",
    )
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting on top of the driver's (e.g. IRL_WORKBENCH_URLS=25000)",
    )
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set)
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    install_reactor(REACTOR)
    from twisted.internet import reactor

    driver = Driver(args.urls, reactor, overrides)
    outcome: dict[str, bool] = {}

    def finish(result: Any) -> Any:
        if isinstance(result, Exception) or hasattr(result, "getTraceback"):
            driver.failure = driver.failure or str(getattr(result, "value", result))
            print(
                result.getTraceback() if hasattr(result, "getTraceback") else result,
                file=sys.stderr,
            )
        outcome["ok"] = driver.report()
        return driver.close()

    def run() -> None:
        d = driver.start()
        d.addBoth(finish)
        d.addErrback(lambda f: print(f.getTraceback(), file=sys.stderr))
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(run)
    reactor.run()
    print(
        f"# ru_maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB",
        flush=True,
    )
    return 0 if outcome.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
