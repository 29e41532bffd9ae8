"""The frontier alone, no network: RSS against unique discovered URLs, to 10^8, resumable.

    python bench/frontier.py                        # to 10,000,000 unique URLs (URLSEEN_TARGET)
    python bench/frontier.py --urls 100000000       # to 10^8; rerun the same line to resume
    python bench/frontier.py --urls 200000 --state /tmp/f --fresh   # a smoke run
    python bench/frontier.py -s IRL_WORKBENCH_URLS=25000   # a setting on top (repeatable)

The issues' bars: *RSS <= 400 MB at 10 million unique discovered URLs (after URLseen)*
(4); *at 10 million with STAR on, RSS <= 350 MB and VmHWM <= 450 MB*, *at 100 million,
RSS <= 400 MB* (22).

What runs
---------
The real ``IRLScheduler`` and its ``DRUMDupeFilter``, built by Scrapy
(``get_crawler`` with the add-on ``irlscrapy.Addon``, ``IRLScheduler.from_crawler``,
``open(spider)``) inside a running asyncio reactor, with the project's defaults except:
politeness delays 0 (``IRL_HOST_DELAY``, ``IRL_IP_DELAY`` and their floors), the address
guard opened for 127.0.0.0/8 (``IRL_ALLOW_PRIVATE_ADDRESSES``), and the state directory
``<state>/irl`` (``IRL_STATE_DIR``; see *Resuming*). ``crawler.engine`` is an
:class:`IdleEngine`, whose slot takes the scheduler's wake-ups and holds no
request. Everything else is the default: 64 MiB for URLseen, a 100,000-URL
workbench, 64 URLs per host, the 25,000-entry DNS cache, robots.txt obeyed, Referer on,
STAR on, and the add-on's GC tuning (``GCTuning``: a freeze and rare full collections),
which a crawl applies when its spider opens and the driver applies after the open (with
CPython's own thresholds, full collections of 0.3 s came every few seconds at a
million URLs: the run's longest stalls).

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
  ``page_handled(request)`` is called, as ``PageDoneMiddleware`` would (robots.txt
  requests: after their callback), and the engine holds the request no more, so the
  next call marks the page done.
- **STAR**: each page fed is also recorded by the crawl's ``StarMiddleware`` (its PLD
  and the PLDs of its first :data:`EXTERNAL_LINKS` links, the broad web's share of
  links to other PLDs), so STAR's two DRUMs and ranking are in the figures.
- The feed runs as one ``task.cooperate`` task (the scheduler's drain is another), one
  page per iteration, so the reactor stays free for URLseen merges finishing in their
  worker thread; a :class:`irlscrapy.report.reactorlag.ReactorLag` timer measures how
  late the reactor ran.

Unique URLs
-----------
The count is URLseen's own (``DRUM.stored_keys``, its runs' record counts), read at open and
at the end of each delivery of URLseen's results (``Intake.drained``), when no merge
runs: then it equals the stat ``irl/urlseen/unique`` of an uninterrupted run (each key
stored was delivered once as unique), and unlike the stat it survives a restart (a
restart delivers unacknowledged batches again, which the stat would count twice). Like
the stat it moves in steps, one per merge.

Resuming
--------
``--state DIR`` (default :data:`DEFAULT_STATE`, outside the repository; one process at
a time: ``DIR/LOCK``) holds:

- ``DIR/irl``: the scheduler's state directory, which the IRL scheduler resumes from
  after any stop, a kill -9 included (URLseen's journal, BEAST, the admitted journal,
  STAR's stores);
- ``DIR/driver.json``: the driver's progress, written (to a temporary file, then renamed
  over) every :data:`CHECKPOINT_SECONDS`, at every row and at a clean stop: the pages
  fed, the page generator's position (its RNG state at the start of the current batch
  of :data:`GEN_PAGES` pages, and the pages of that batch fed), the rows so far, the
  whole run's sums and highs, and those of the interval since the last row;
- ``DIR/mmap-holder``: with ``--leveldb-no-mmap`` only, remade at each start.

A rerun with the same ``--state`` reprints the rows and continues the curve: the pages
fed after the last checkpoint are fed again (their links, already in URLseen's journal,
are duplicates then), and what the killed process did after it (its seconds, CPU, lag
ticks) is lost with them, so every rate counts only time in which the pages it counts
were fed, and never the time a process was not running or opened the state. Marks the
unique count passed meanwhile (the killed process's last merges, the open's) get no
row: the next row is at the next mark, over the pages fed since the last row. ``--urls``
may be raised on a resume (a 10^7 run kept with ``--keep-state`` goes on to 10^8); the
settings and the memory options must be the same. SIGINT or SIGTERM stops cleanly: the
checkpoint, then the scheduler's close (which waits for a merge in progress); a second
one exits at once (as a kill would). Once the target is reached and the figures are
written, the state directory is deleted (``--keep-state`` keeps it): the disk is shared.
Exit status: 0 when the target is reached, 1 on a failure, 2 when stopped short of it.

Figures
-------
A row each time the unique count passes a multiple of ``min(REPORT_EVERY, target / 10)``
(10^7 and 10^8 among them) and at the target, in the table, the ``point`` JSON lines
and the results file (``bench/results/frontier-<target>.json``, rewritten at every row):
unique URLs, RSS and its anonymous and file-backed parts (/proc/self/status), the
highest RSS, anonymous and file-backed RSS sampled every :data:`PROBE_SECONDS` since the
previous row (a thread, :class:`MemoryProbe`), VmHWM since the previous row (the
kernel's own peak; each row resets it through /proc/self/clear_refs) and overall,
reactor (main-thread) CPU seconds per page fed over the interval (without the driver's
URL generation), the reactor lag's p99.9 and maximum over the interval, the scheduler
state directory's disk bytes (``du``: allocated blocks) per unique URL, and the
frontier's parts' sizes (workbench, BEAST, robots and DNS caches, URLseen's pending
keys). When the RSS sampled passes ``--probe-mb`` (default :data:`PROBE_MB`), the probe
reads /proc/self/smaps and sums the resident pages by what maps them (each LevelDB's
tables, the heap, anonymous mappings by size, DRUM's result maps) and which merges
run: the row's ``peak`` holds the breakdown at the interval's highest such sample. At
the end, over the whole run (all resumes: time, CPU and pages summed, peaks as maxima):
the final figures, the reactor-lag percentiles (a percentile is read from a histogram
to within 6 %, and never printed above the maximum), and the bars' verdicts, judged at
the first row at or past 10^7 (VmHWM: over the rows up to it) and 10^8.

Memory options
--------------
Issue 22, part 2; each is kept in the state and must be the same on every resume:

- ``--trim-after-drain``: ``malloc_trim(0)`` on the reactor after each delivery of
  URLseen's results, beside the merge thread's trims before and after each merge (its
  count and seconds are figures; the seconds are in the reactor CPU).
- ``--mmap-threshold BYTES``: glibc's fixed mmap threshold (``M_MMAP_THRESHOLD``, which
  the merge thread pins when it starts) at BYTES instead of
  ``irlscrapy.storage.glibcheap.MMAP_THRESHOLD`` (128 KiB): allocations of BYTES or more, the
  merges' large arrays, get a mapping of their own, unmapped when freed.
- ``--arena-max N``: glibc's ``M_ARENA_MAX`` (fewer malloc arenas for the threads).
- ``--leveldb-no-mmap``: LevelDB reads its tables with pread instead of read-only maps:
  the driver first takes all of LevelDB's mmaps (1,000 on a 64-bit system, for the whole
  process) with a database of its own in ``DIR/mmap-holder``, of :data:`MMAP_HOLDERS`
  one-key tables (about 10 s, 5 MB of RSS until the first merge pages its maps out), so
  every table opened after it is read without a map.
- ``--one-merge-thread``: STAR's refreshes run in URLseen's merge thread, so the two
  never run at once.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import logging
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from common import ADDON_ON_LOOPBACK, RESULTS, disk_usage, emit, memory
from scrapy import Request, Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler
from twisted.internet import defer, task
from twisted.python.failure import Failure

from irlscrapy.exceptions import DirectoryLocked
from irlscrapy.links import Links
from irlscrapy.middlewares.star import StarMiddleware
from irlscrapy.report.reactorlag import ReactorLag, new_histogram, percentile
from irlscrapy.runtime.gctuning import GCTuning
from irlscrapy.scheduler.hosts.dns import DNSCache
from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.metakeys import ROBOTS_KEY
from irlscrapy.storage.dirlock import DirectoryLock
from irlscrapy.storage.jsonfile import replace_json

BENCH_NAME = "frontier"
URLSEEN_TARGET = 10_000_000  # unique discovered URLs (see "Unique URLs")
HUNDRED_MILLION = 100_000_000  # issue 22's second RSS bar
REPORT_EVERY = 1_000_000  # a row per this many unique URLs (target / 10 if less)
LINKS_PER_PAGE = 60
#: Links of a page that STAR sees as links to other PLDs (the broad profile's 20%).
EXTERNAL_LINKS = 12
NEW_PER_PAGE = 6.5  # 6 and 7 in turn
PLDS = 200_000
HOSTS_TOP = 10_000  # hosts of the most popular PLD; PLD D has ceil(HOSTS_TOP / D)
SEED = 20070609
GEN_PAGES = 256  # pages whose URLs are generated in one numpy batch
TAKES_PER_PAGE = 8  # next_request() calls per page fed, robots.txt fetches included
PROBE_SECONDS = 0.2  # the memory probe thread's period
PROBE_MB = 380  # RSS above which the probe reads smaps (MB, as BENCHMARKS.md counts)
SAMPLE_SECONDS = 1.0
PROGRESS_SECONDS = 60.0  # a "progress" line this often, whatever the unique count does
CHECKPOINT_SECONDS = 10.0  # the driver's progress written at least this often
DEFAULT_STATE = Path("/work/frontier-state")
CHECKPOINT_NAME = "driver.json"
CHECKPOINT_VERSION = 2
#: Stock Scrapy, BENCHMARKS.md section 2(d), variant (a) dfo, 600 s run: RSS at open
#: 90 MB, 2,898 bytes per unique URL (bfo 2,969; the 45-minute dfo run 2,818).
STOCK_RSS_AT_OPEN = 90_000_000
STOCK_BYTES_PER_URL = 2_898
RSS_BAR = 400_000_000  # bytes ("400 MB", as BENCHMARKS.md counts MB): issue 4, and 10^8
RSS_BAR_STAR = 350_000_000  # issue 22 at 10^7, STAR on
HWM_BAR_STAR = 450_000_000  # issue 22: VmHWM at 10^7, STAR on
PAGE_BUDGET_S = 0.002  # docs/architecture.md, section 6: 2 ms per page, everything included
REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1e6
MMAP_HOLDERS = 1_010  # LevelDB's mmap limit on a 64-bit system (env_posix.cc), and a few
LAG_QUANTILES = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))

SETTINGS: dict[str, Any] = {
    **ADDON_ON_LOOPBACK,  # LoopbackResolver answers in 127.0.0.0/8
    "ROBOTSTXT_OBEY": True,
    "LOG_LEVEL": "WARNING",
}

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


class FrontierSpider(Spider):
    name = "frontier"


class BenchSlot:
    """The engine's slot as the scheduler reads it: wake-ups go nowhere (the benchmark
    calls ``next_request()`` itself) and no request is held (each page's links are fed
    before its ``page_handled``, so its page is done on the next call)."""

    closing = None
    inprogress: frozenset[Request] = frozenset()

    @property
    def nextcall(self) -> BenchSlot:
        return self

    def schedule(self, delay: float = 0) -> None:
        pass


class IdleEngine:
    """Stands in for ``crawler.engine``: an engine that runs no spider and asks for no
    request (Scrapy 2.19 raises RuntimeError on reading ``Crawler.engine`` before a
    crawl starts; the scheduler's waker and the crawl's stop read it)."""

    _slot = BenchSlot()
    spider = None
    running = False


class LoopbackResolver:
    """The DNSCache's resolver (HostResolver's two members): every name has an address
    in 127.0.0.0/8, at once."""

    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor  # the DNSCache's clock
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
    """Synthetic pages: lists of LINKS_PER_PAGE URLs, 6.5 of them new on average. Its
    position (:meth:`position`) is a JSON object; :meth:`restore` goes back to one."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.generated = 0  # URL numbers handed out: new URLs so far
        self.pages = 0  # pages generated (whole batches)
        self.seconds = 0.0  # CPU time spent generating (thread time)

    def position(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "generated": self.generated,
            "pages": self.pages,
        }

    def restore(self, position: dict[str, Any]) -> None:
        self.rng.bit_generator.state = position["rng"]
        self.generated = position["generated"]
        self.pages = position["pages"]

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


def next_mark(every: int, target: int, after: int) -> int:
    """The first unique count above ``after`` at which a row is due: the next multiple
    of ``every``, or the target if that comes first. (From 10^7 on, ``every`` is
    REPORT_EVERY, of which 10^7 and 10^8, the bars' counts, are multiples.)"""
    mark = (after // every + 1) * every
    return min(mark, target) if after < target else mark


def lag_ms(hist: list[int], q: float, max_lag: float) -> float:
    """The q-th percentile of a lag histogram in ms, at most the exact maximum (a
    percentile is a bucket's middle, up to 6 % above the lags it holds)."""
    return round(min(percentile(hist, q), max_lag) * 1e3, 2)


def reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0: ``5`` to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


_DIGITS = re.compile(r"\d+")


def smaps_breakdown(state: Path) -> dict[str, Any]:
    """The process's resident pages by what maps them (/proc/self/smaps), in MB: each
    LevelDB's tables (``ldb <dir>``), other files of the state directory (digits of
    their names as N), the heap, anonymous mappings of 32 MiB or more (glibc's thread
    arenas reserve 64 MiB; merge arrays mapped on their own are usually smaller), 1-32
    MiB and under 1 MiB, and the rest (libraries, stacks); plus the five anonymous
    mappings with the most resident pages, as (size MB, resident MB)."""
    sums: dict[str, int] = {}
    anon: list[tuple[int, int]] = []
    prefix = str(state) + "/"
    key, size = "", 0
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                if line[0] in "0123456789abcdef":
                    fields = line.split(maxsplit=5)
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    size = end - start
                    path = fields[5].rstrip("\n") if len(fields) == 6 else ""
                    if not path:
                        key = (
                            "anon >=32MiB maps"
                            if size >= 32 << 20
                            else "anon 1-32MiB maps"
                            if size >= 1 << 20
                            else "anon <1MiB maps"
                        )
                    elif path == "[heap]":
                        key = "heap"
                    elif path.startswith(prefix):
                        rel = path[len(prefix) :]
                        if rel.endswith(".ldb"):
                            key = "ldb " + rel.rsplit("/", 1)[0]
                        else:
                            key = "state " + _DIGITS.sub("N", rel)
                    else:
                        key = "other"
                elif line.startswith("Rss:"):
                    kb = int(line.split()[1])
                    sums[key] = sums.get(key, 0) + kb
                    if key.startswith("anon"):
                        anon.append((size, kb))
    except OSError:
        return {}
    anon.sort(key=lambda a: -a[1])
    return {
        "rss_mb_by_mapping": {
            k: round(v * 1024 / MB, 1) for k, v in sorted(sums.items(), key=lambda kv: -kv[1])
        },
        "top_anon_maps_mb": [(round(s / MB, 1), round(kb * 1024 / MB, 1)) for s, kb in anon[:5]],
    }


class MemoryProbe(threading.Thread):
    """Reads RSS (/proc/self/statm) every PROBE_SECONDS: the interval's highest RSS,
    anonymous and file-backed RSS; above ``threshold`` bytes, at each new high of the
    interval, also the breakdown of /proc/self/smaps and what runs (``flags()``)."""

    def __init__(self, state: Path, threshold: int, flags: Any) -> None:
        super().__init__(name="frontier-memory-probe", daemon=True)
        self.state = state
        self.threshold = threshold
        self.flags = flags
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.rss = self.anon = self.file = 0
        self.peak: dict[str, Any] | None = None

    def run(self) -> None:
        while not self.stopped.wait(PROBE_SECONDS):
            try:
                with open("/proc/self/statm") as f:
                    fields = f.read().split()
            except OSError:
                continue
            rss, shared = int(fields[1]) * PAGE, int(fields[2]) * PAGE
            with self.lock:
                self.rss = max(self.rss, rss)
                self.anon = max(self.anon, rss - shared)
                self.file = max(self.file, shared)
                probe = rss >= self.threshold and (
                    self.peak is None or rss > self.peak["rss_bytes"] + (2 << 20)
                )
            if probe:
                peak = {
                    "rss_bytes": rss,
                    "anon_bytes": rss - shared,
                    "file_bytes": shared,
                    "running": self.flags(),
                    **smaps_breakdown(self.state),
                }
                with self.lock:
                    if self.peak is None or rss > self.peak["rss_bytes"]:
                        self.peak = peak

    def take(self, end_interval: bool) -> dict[str, Any]:
        """The highs read since the previous call, and the breakdown at the interval's
        highest RSS read (kept until the interval ends: smaps is read again only above
        it)."""
        with self.lock:
            out = {"rss": self.rss, "anon": self.anon, "file": self.file, "peak": self.peak}
            self.rss = self.anon = self.file = 0
            if end_interval:
                self.peak = None
        return out


class ErrorCounter(logging.Handler):
    """Counts ERROR records (the scheduler reports a failed merge or drain that way)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


# -- memory options (issue 22, part 2) -------------------------------------------------
_M_ARENA_MAX = -8  # mallopt parameter numbers, glibc's malloc.h


def hold_leveldb_mmaps(path: Path) -> Any:
    """Take LevelDB's read-only mmaps (1,000 on a 64-bit system, one per table open,
    shared by every database of the process: the limit is the default ``Env``'s) with a
    database at ``path`` of :data:`MMAP_HOLDERS` tables of one key each, all open; every
    table opened afterwards is read with pread. Each key is flushed to a table of its
    own (``compact_range`` over it writes the memtable out; a table overlapping nothing
    goes to level 2, where no compaction merges such small tables), and the table cache
    keeps them all open (it is 16 LRU shards that fill unevenly: a cache barely larger
    than the tables closed a few, which gave their maps back). Returns the database:
    keep it open. Exits if a table opened afterwards is still mapped."""
    import plyvel

    shutil.rmtree(path, ignore_errors=True)
    db = plyvel.DB(
        str(path),
        create_if_missing=True,
        max_open_files=4 * MMAP_HOLDERS,  # the table cache (above)
        lru_cache_size=8 << 10,
        write_buffer_size=64 << 10,
    )
    for i in range(MMAP_HOLDERS + 1):  # the last one: the check
        key = b"%06d" % i
        db.put(key, b"v")
        db.compact_range(start=key, stop=key)
        if i == MMAP_HOLDERS - 1:
            for _ in db.iterator(fill_cache=False):  # every table opened, and mapped
                pass
            held = table_maps()
    db.get(b"%06d" % MMAP_HOLDERS)  # opens the last table
    if table_maps() > held:
        raise SystemExit(f"--leveldb-no-mmap: {held} maps held, and LevelDB still maps")
    print(f"# LevelDB's mmaps held: {held} table maps", flush=True)
    return db


def table_maps() -> int:
    """The process's mappings of LevelDB tables."""
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if line.rstrip("\n").endswith(".ldb"))


def apply_options(options: dict[str, Any], state: Path) -> list[Any]:
    """Set up the memory options before the scheduler is built; what to keep open."""
    kept: list[Any] = []  # databases to close at the end
    if options.get("mmap_threshold"):
        import irlscrapy.storage.glibcheap as glibcheap

        glibcheap.MMAP_THRESHOLD = int(options["mmap_threshold"])
    if options.get("arena_max"):
        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, int(options["arena_max"]))
    if options.get("leveldb_no_mmap"):
        kept.append(hold_leveldb_mmaps(state / "mmap-holder"))
    return kept


class Checkpoint:
    """The driver's progress, ``<state>/driver.json`` (see "Resuming")."""

    def __init__(self, state: Path) -> None:
        self.path = state / CHECKPOINT_NAME

    def load(self) -> dict[str, Any] | None:
        try:
            with open(self.path) as f:
                data: dict[str, Any] = json.load(f)
        except FileNotFoundError:
            return None
        if data.get("version") != CHECKPOINT_VERSION:
            raise SystemExit(
                f"{self.path}: a checkpoint of another version of this driver; "
                "give --fresh to start over"
            )
        return data

    def save(self, data: dict[str, Any]) -> None:
        replace_json(self.path, data)


def new_totals() -> dict[str, Any]:
    """The whole run's sums and highs (all processes; see "Resuming")."""
    return {
        "seconds": 0.0,  # feeding: from after the scheduler's open to the last checkpoint
        "reactor_cpu": 0.0,  # main-thread CPU seconds, the driver's URL generation excluded
        "process_cpu": 0.0,  # all threads' CPU seconds (user + system)
        "generation_cpu": 0.0,  # the driver's URL generation
        "taken": 0,  # page requests taken
        "robots": 0,  # robots.txt requests taken
        "starved": 0,  # next_request() calls that returned None
        "dns_queries": 0,
        "trims": 0,  # --trim-after-drain's malloc_trim calls, and their seconds
        "trim_seconds": 0.0,
        "hwm": 0,  # VmHWM
        "rss": 0,  # the highest RSS sampled
        "lag_hist": new_histogram(),
        "lag_max": 0.0,  # seconds
    }


def new_interval() -> dict[str, Any]:
    """The sums and highs since the previous row (the open interval)."""
    return {
        "pages": 0,
        "seconds": 0.0,
        "reactor_cpu": 0.0,
        "process_cpu": 0.0,
        "hwm": 0,
        "rss": 0,
        "anon": 0,
        "file": 0,
        "lag_hist": new_histogram(),
        "lag_max": 0.0,
        "peak": None,  # MemoryProbe's breakdown at the highest RSS it read, if any
    }


class Driver:
    """Feeds the scheduler, keeps the rows and the checkpoint.

    Accounting: :meth:`fold` adds what this process did since the previous fold (the
    *anchor*: clock, CPU times, pages fed, lag ticks, memory highs) to ``totals`` (the
    whole run) and ``interval`` (since the last row); it runs at every row and every
    checkpoint, and the checkpoint saves both, so the figures after a resume are those
    of one run that skipped what the killed process did after its last checkpoint."""

    def __init__(
        self,
        target: int,
        reactor: Any,
        state: Path,
        overrides: dict[str, str],
        options: dict[str, Any],
        probe_mb: float,
        results: Path,
        keep_state: bool,
    ) -> None:
        self.target = target
        self.state = state
        self.results = results
        self.keep_state = keep_state
        self.checkpoint_file = Checkpoint(state)
        saved = self.checkpoint_file.load()
        if saved is None and (state / "irl").exists():
            raise SystemExit(
                f"{state}/irl holds a scheduler state but no {CHECKPOINT_NAME}: "
                "give --fresh to start over"
            )
        if saved is not None:
            if saved["settings"] != overrides:
                raise SystemExit(f"{state} was run with -s {saved['settings']}, not {overrides}")
            if saved["options"] != options:
                raise SystemExit(
                    f"{state} was run with the options {saved['options']}, not {options}"
                )
        self.resumed = saved is not None
        self.overrides = overrides
        self.options = options
        self.kept = apply_options(options, state)
        settings = {**SETTINGS, **overrides, "IRL_STATE_DIR": str(state / "irl")}
        self.crawler = get_crawler(FrontierSpider, settings)
        self.crawler.engine = IdleEngine()  # type: ignore[assignment]
        self.resolver = LoopbackResolver(reactor)
        DNSCache.of(self.crawler).resolver = self.resolver
        self.scheduler = IRLScheduler.from_crawler(self.crawler)
        if options.get("one_merge_thread") and self.scheduler.indegree is not None:
            self.scheduler.indegree._in_thread = self.scheduler.urlseen._in_thread
        self.star = StarMiddleware.from_crawler(self.crawler)
        self.spider = FrontierSpider.from_crawler(self.crawler)
        #: the add-on's GC tuning, applied when the spider opens (crawler.engine is idle
        #: here, so no spider_opened is sent: the driver applies it after open)
        try:
            self.gc_tuning: GCTuning | None = GCTuning.from_crawler(self.crawler)
        except NotConfigured:  # (-s IRL_GC_FREEZE=False -s IRL_GC_FULL_EVERY=0)
            self.gc_tuning = None
        self.stats = self.crawler.stats
        self.source = PageSource(SEED)
        self.lag = ReactorLag(self.stats, reactor)
        self.errors = ErrorCounter()
        self.proc = psutil.Process()
        self.every = min(REPORT_EVERY, max(1, target // 10))
        self.probe = MemoryProbe(state / "irl", int(probe_mb * MB), self.running)
        self.failure: str | None = None
        self.reached = False
        self.stopping = 0  # signals received
        self.unique = 0  # URLseen's stored keys (see "Unique URLs")
        self.anchor: dict[str, float] = {}
        self.last_checkpoint = 0.0
        self.t0 = 0.0  # this process's feed started (monotonic)
        self.next_progress = PROGRESS_SECONDS
        # -- carried across resumes (the checkpoint) ---------------------------------
        self.rows: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []  # one per process, with its open
        self.fed = 0  # pages fed, all runs
        self.batch_position: dict[str, Any] = self.source.position()
        self.fed_in_batch = 0
        self.totals = new_totals()
        self.interval = new_interval()
        if saved is not None:
            self.rows = saved["rows"]
            self.runs = saved["runs"]
            self.fed = saved["fed"]
            self.batch_position = saved["batch_position"]
            self.fed_in_batch = saved["fed_in_batch"]
            self.totals = saved["totals"]
            self.interval = saved["interval"]
        self.source.restore(self.batch_position)
        self.next_report = 0  # the unique count of the next row (set at the open)

    # -- what runs, for the probe -------------------------------------------------------
    def running(self) -> dict[str, bool]:
        urlseen, indegree = self.scheduler.urlseen, self.scheduler.indegree
        return {
            "urlseen_merge": urlseen._merge is not None,
            "urlseen_delivery": self.scheduler.intake.merging and urlseen._merge is None,
            "star_refresh": indegree is not None and indegree._refreshing is not None,
        }

    # -- the run ---------------------------------------------------------------------
    def start(self) -> defer.Deferred[Any]:
        logging.getLogger().addHandler(self.errors)
        print(
            f"# {'resuming' if self.resumed else 'starting'} in {self.state} "
            f"({f'from {self.fed:,} pages fed' if self.resumed else 'new'}); "
            "opening the scheduler's state ...",
            flush=True,
        )
        self._watch_drains()  # (before open: the open starts a delivery)
        t = time.monotonic()
        self.scheduler.open(self.spider)
        open_seconds = time.monotonic() - t
        if self.gc_tuning is not None:
            self.gc_tuning.spider_opened(self.spider)  # as the crawl's extension does then
        gc.collect()
        open_rss = memory()["rss"]
        drum = self.scheduler.urlseen.drum
        self.unique = drum.stored_keys if drum is not None else 0
        # Marks passed while no process fed pages (the merges a killed process finished
        # after its last checkpoint, the open's) get no row: the next row is at the next
        # mark, its interval that of the pages fed since the last row, in both processes.
        self.next_report = (
            next_mark(self.every, self.target, self.unique)
            if self.unique < self.target
            else self.target
        )
        self.runs.append(
            {
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "pid": os.getpid(),
                "fed_at_start": self.fed,
                "unique_at_open": self.unique,
                "open_seconds": round(open_seconds, 1),
                "rss_at_open_bytes": open_rss,
            }
        )
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
            state_dir=str(self.state),
            settings=self.overrides,
            options=self.options,
            **self.runs[-1],
            run=len(self.runs),
            stock_rss_at_open_bytes=STOCK_RSS_AT_OPEN,
            stock_bytes_per_url=STOCK_BYTES_PER_URL,
        )
        self.print_header()
        for row in self.rows:
            self.print_row(row, note=" (earlier run)")
        self.t0 = self.last_checkpoint = time.monotonic()
        self.anchor = self.now()
        self.lag.probe.start()
        self.probe.start()
        sampler = task.LoopingCall(self.sample)
        sampler.start(SAMPLE_SECONDS)
        done = task.cooperate(self.feed()).whenDone()
        done.addBoth(lambda result: (sampler.stop(), self.lag.probe.stop(), result)[-1])
        return done

    def _watch_drains(self) -> None:
        """Read URLseen's key count at the end of each delivery of its results, when no
        merge runs (see "Unique URLs"); with --trim-after-drain, also give the heap
        back to the OS there, on the reactor."""
        from irlscrapy.storage.glibcheap import release_free_memory

        intake = self.scheduler.intake
        drained = intake.drained
        trim = bool(self.options.get("trim_after_drain"))

        def watched(result: Any) -> None:
            drum = self.scheduler.urlseen.drum
            if drum is not None:
                self.unique = drum.stored_keys
            if trim:
                t = time.perf_counter()
                release_free_memory()
                self.totals["trim_seconds"] += time.perf_counter() - t
                self.totals["trims"] += 1
            drained(result)

        intake.drained = watched  # type: ignore[method-assign]

    def now(self) -> dict[str, float]:
        """This process's counters, for :meth:`fold`."""
        return {
            "t": time.monotonic(),
            "main": time.thread_time(),  # (called on the reactor thread only)
            "generation": self.source.seconds,
            "process": sum(self.proc.cpu_times()[:2]),
            "fed": self.fed,
            "dns": self.resolver.queries,
        }

    def fold(self, end_interval: bool = False) -> None:
        """Add what this process did since the anchor to the totals and the interval,
        with the memory and lag highs; the anchor moves to now."""
        now, a, t, iv = self.now(), self.anchor, self.totals, self.interval
        generation = now["generation"] - a["generation"]
        for name, value in (
            ("seconds", now["t"] - a["t"]),
            ("reactor_cpu", now["main"] - a["main"] - generation),
            ("process_cpu", now["process"] - a["process"]),
        ):
            t[name] += value
            iv[name] += value
        t["generation_cpu"] += generation
        t["dns_queries"] += int(now["dns"] - a["dns"])
        iv["pages"] += int(now["fed"] - a["fed"])
        self.anchor = now
        hist, self.lag.hist = self.lag.hist, new_histogram()
        lag_max, self.lag.max_lag = self.lag.max_lag, 0.0
        mem, highs = memory(), self.probe.take(end_interval)
        for acc in (t, iv):
            acc["lag_hist"] = [a + b for a, b in zip(acc["lag_hist"], hist, strict=True)]
            acc["lag_max"] = max(acc["lag_max"], lag_max)
            acc["hwm"] = max(acc["hwm"], mem["hwm"])
            acc["rss"] = max(acc["rss"], highs["rss"], mem["rss"])
        iv["anon"] = max(iv["anon"], highs["anon"], mem["rss_anon"])
        iv["file"] = max(iv["file"], highs["file"], mem["rss_file"])
        peak = highs["peak"]
        if peak is not None and (iv["peak"] is None or peak["rss_bytes"] > iv["peak"]["rss_bytes"]):
            iv["peak"] = peak

    def feed(self) -> Iterator[None]:
        take_from: Request | None = None
        skip = self.fed_in_batch
        while True:
            self.batch_position = self.source.position()
            pages = self.source.batch(GEN_PAGES)
            for k in range(skip, len(pages)):
                urls = pages[k]
                source = take_from.url if take_from is not None else "http://seed.example/"
                depth = take_from.meta.get("depth", 0) if take_from is not None else 0
                self.scheduler.enqueue_links(Links(source, urls, depth))
                # STAR sees the page as StarMiddleware would: its first EXTERNAL_LINKS
                # links stand for its links to other PLDs (the broad web's share)
                self.star.record(Response(source), urls[:EXTERNAL_LINKS])
                if take_from is not None:  # its links are handed over: as PageDoneMiddleware
                    self.scheduler.page_handled(take_from)
                self.fed += 1
                self.fed_in_batch = k + 1
                take_from = self.take()
                if self.errors.count:
                    self.failure = f"{self.errors.count} ERROR log records (see above)"
                    return
                if self.unique >= self.next_report:
                    self.point()
                if self.unique >= self.target:
                    self.reached = True
                    return
                if self.stopping:
                    return
                if time.monotonic() - self.last_checkpoint >= CHECKPOINT_SECONDS:
                    self.save_checkpoint()
                yield None
            skip = 0
            self.fed_in_batch = 0

    def take(self) -> Request | None:
        """Take requests until one is a page; each ends at once, as a download would."""
        for _ in range(TAKES_PER_PAGE):
            request = self.scheduler.next_request()
            if request is None:
                self.totals["starved"] += 1
                return None
            self.crawler.signals.send_catch_log(
                signals.request_left_downloader, request=request, spider=self.spider
            )
            if ROBOTS_KEY in request.meta:
                self.totals["robots"] += 1
                # (an async callback: a 404 runs it to its end at once)
                defer.ensureDeferred(
                    request.callback(Response(request.url, status=404, request=request))
                )
                self.scheduler.page_handled(request)  # as PageDoneMiddleware would
                continue
            self.totals["taken"] += 1
            return request
        return None

    def sample(self) -> None:
        elapsed = time.monotonic() - self.t0
        if elapsed >= self.next_progress:
            self.next_progress += PROGRESS_SECONDS
            mem = memory()
            emit(
                BENCH_NAME,
                "progress",
                round(elapsed),
                "s",
                pages=self.fed,
                unique_urls=self.unique,
                next_row_at=self.next_report,
                rss_bytes=mem["rss"],
                rss_anon_bytes=mem["rss_anon"],
                rss_file_bytes=mem["rss_file"],
                hwm_since_row_bytes=mem["hwm"],
                **self.sizes(),
                **self.running(),
            )

    def sizes(self) -> dict[str, int]:
        """What the frontier holds in RAM, counted from its parts (for reading the curve)."""
        frontier = self.scheduler.frontier
        if frontier is None:
            return {}
        workbench = frontier.workbench
        return {
            "beast_urls": len(frontier.beast),
            "workbench_urls": len(workbench),
            "workbench_hosts": len(workbench.hosts),
            "workbench_ips": len(workbench.ips),
            "robots_hosts_in_ram": len(self.scheduler.hosts.robots),
            "dns_entries_in_ram": len(self.scheduler.hosts.dns),
            "urlseen_pending": self.scheduler.urlseen.pending,
        }

    def point(self) -> None:
        """A row: the interval ends here."""
        self.fold(end_interval=True)
        unique, iv, mem = self.unique, self.interval, memory()
        allocated, apparent = disk_usage(self.state / "irl")
        pages = max(iv["pages"], 1)
        row = {
            "unique_urls": unique,
            "mark": self.next_report,
            "pages": self.fed,
            "generated_urls": self.source.generated,
            "seconds": round(self.totals["seconds"], 1),
            "rss_bytes": mem["rss"],
            "rss_anon_bytes": mem["rss_anon"],
            "rss_file_bytes": mem["rss_file"],
            "peak_rss_bytes_since_last": iv["rss"],
            "peak_anon_bytes_since_last": iv["anon"],
            "peak_file_bytes_since_last": iv["file"],
            "vm_hwm_bytes_since_last": iv["hwm"],
            "vm_hwm_bytes_overall": self.totals["hwm"],
            "reactor_cpu_s_per_page": round(iv["reactor_cpu"] / pages, 7),
            "process_cpu_s_per_page": round(iv["process_cpu"] / pages, 7),
            "pages_per_s": round(iv["pages"] / max(iv["seconds"], 1e-9), 1),
            "reactor_lag_p999_ms": lag_ms(iv["lag_hist"], 99.9, iv["lag_max"]),
            "reactor_lag_max_ms": round(iv["lag_max"] * 1e3, 2),
            "disk_bytes": allocated,
            "disk_apparent_bytes": apparent,
            "disk_bytes_per_url": round(allocated / max(unique, 1), 1),
            "stock_rss_bytes": round(stock_rss(unique)),
            "rss_to_stock_ratio": round(mem["rss"] / stock_rss(unique), 4),
            "unique_stat_this_run": self.stats.get_value("irl/urlseen/unique", 0),
            "run": len(self.runs),
            **self.sizes(),
            "peak": iv["peak"],
        }
        self.rows.append(row)
        self.print_row(row)
        emit(
            BENCH_NAME,
            "point",
            unique,
            "unique urls",
            **{k: v for k, v in row.items() if k != "unique_urls"},
        )
        self.next_report = next_mark(self.every, self.target, unique)
        self.interval = new_interval()
        reset_hwm()  # the next interval's VmHWM starts from the RSS now
        self.save_checkpoint()
        self.write_results(final=None)

    def print_header(self) -> None:
        print(
            f"# {'unique URLs':>12} {'pages':>10} {'RSS MB':>7} {'anon':>6} {'file':>6} "
            f"{'peakRSS':>7} {'pk anon':>7} {'pk file':>7} {'HWM':>6} {'HWM all':>7} "
            f"{'cpu ms/pg':>9} {'pages/s':>7} {'lag999':>6} {'disk B/URL':>10} "
            f"{'workbench':>9}",
            flush=True,
        )

    def print_row(self, row: dict[str, Any], note: str = "") -> None:
        print(
            f"# {row['unique_urls']:>12,} {row['pages']:>10,} {row['rss_bytes'] / MB:>7.1f} "
            f"{row['rss_anon_bytes'] / MB:>6.1f} {row['rss_file_bytes'] / MB:>6.1f} "
            f"{row['peak_rss_bytes_since_last'] / MB:>7.1f} "
            f"{row['peak_anon_bytes_since_last'] / MB:>7.1f} "
            f"{row['peak_file_bytes_since_last'] / MB:>7.1f} "
            f"{row['vm_hwm_bytes_since_last'] / MB:>6.1f} "
            f"{row['vm_hwm_bytes_overall'] / MB:>7.1f} "
            f"{row['reactor_cpu_s_per_page'] * 1e3:>9.3f} {row['pages_per_s']:>7.0f} "
            f"{row['reactor_lag_p999_ms']:>6.0f} {row['disk_bytes_per_url']:>10.1f} "
            f"{row.get('workbench_urls', 0):>9,}{note}",
            flush=True,
        )

    # -- the checkpoint ----------------------------------------------------------------
    def save_checkpoint(self) -> None:
        self.fold()
        self.checkpoint_file.save(
            {
                "version": CHECKPOINT_VERSION,
                "target": self.target,
                "settings": self.overrides,
                "options": self.options,
                "fed": self.fed,
                "batch_position": self.batch_position,
                "fed_in_batch": self.fed_in_batch,
                "rows": self.rows,
                "runs": self.runs,
                "totals": self.totals,
                "interval": self.interval,
            }
        )
        self.last_checkpoint = time.monotonic()

    # -- the end ---------------------------------------------------------------------
    def final_figures(self) -> list[tuple[str, Any, str]]:
        """The whole run's figures, as (name, value, unit)."""
        self.save_checkpoint()  # (folds the last of this process in)
        t, unique, mem = self.totals, self.unique, memory()
        pages = max(self.fed, 1)
        seconds = max(t["seconds"], 1e-9)
        open_rss = self.runs[0]["rss_at_open_bytes"]
        figures: list[tuple[str, Any, str]] = [
            ("unique_urls", unique, "urls"),
            ("pages", self.fed, "pages"),
            ("generated_urls", self.source.generated, "urls"),
            ("seconds", round(t["seconds"], 1), "s"),
            ("runs", len(self.runs), "processes"),
            ("rss_bytes_at_end", mem["rss"], "bytes"),
            ("rss_anon_bytes_at_end", mem["rss_anon"], "bytes"),
            ("rss_file_bytes_at_end", mem["rss_file"], "bytes"),
            ("rss_bytes_at_first_open", open_rss, "bytes"),
            ("peak_rss_bytes", t["rss"], "bytes"),
            ("vm_hwm_bytes", t["hwm"], "bytes"),
            (
                "rss_bytes_per_unique_url",
                round((mem["rss"] - open_rss) / max(unique, 1), 1),
                "bytes",
            ),
        ]
        half = [r for r in self.rows if r["unique_urls"] >= unique / 2]
        if len({r["unique_urls"] for r in half}) >= 2:
            xs = np.array([r["unique_urls"] for r in half], dtype=float)
            ys = np.array([r["rss_bytes"] for r in half], dtype=float)
            slope = float(np.polyfit(xs, ys, 1)[0])
            figures.append(("marginal_rss_bytes_per_unique_url", round(slope, 1), "bytes"))
        figures += [
            ("stock_rss_bytes_extrapolated", round(stock_rss(unique)), "bytes"),
            ("rss_to_stock_ratio", round(mem["rss"] / stock_rss(unique), 4), "ratio"),
            ("pages_per_s", round(self.fed / seconds, 1), "pages/s"),
            ("reactor_cpu_s_per_page", round(t["reactor_cpu"] / pages, 7), "s/page"),
            (
                "reactor_cpu_per_page_to_budget_ratio",
                round(t["reactor_cpu"] / pages / PAGE_BUDGET_S, 4),
                "ratio",
            ),
            ("process_cpu_s_per_page", round(t["process_cpu"] / pages, 7), "s/page"),
            ("driver_generation_cpu_s_per_page", round(t["generation_cpu"] / pages, 7), "s/page"),
        ]
        if self.rows:  # (the last row is at the end: the target is a row)
            figures.append(("disk_bytes_per_url", self.rows[-1]["disk_bytes_per_url"], "bytes"))
        figures += [
            ("page_requests_taken", t["taken"], "requests"),
            ("robots_requests_taken", t["robots"], "requests"),
            ("next_request_none", t["starved"], "calls"),
            ("dns_queries", t["dns_queries"], "queries"),
            ("trims_after_drain", t["trims"], "calls"),
            ("trim_after_drain_seconds", round(t["trim_seconds"], 3), "s"),
        ]
        for q_name, q in LAG_QUANTILES:
            figures.append(
                (f"reactor_lag_{q_name}_ms", lag_ms(t["lag_hist"], q, t["lag_max"]), "ms")
            )
        figures.append(("reactor_lag_max_ms", round(t["lag_max"] * 1e3, 2), "ms"))
        # The bars are judged at the first row at or past their count (the row at the
        # mark itself, unless a resume skipped it), VmHWM over the rows up to it.
        at_10m = next(
            (i for i, r in enumerate(self.rows) if r["unique_urls"] >= URLSEEN_TARGET), None
        )
        if at_10m is not None:
            row = self.rows[at_10m]
            hwm = max(r["vm_hwm_bytes_since_last"] for r in self.rows[: at_10m + 1])
            figures += [
                ("unique_urls_at_10m_row", row["unique_urls"], "urls"),
                ("rss_bytes_at_10m", row["rss_bytes"], "bytes"),
                ("vm_hwm_bytes_to_10m", hwm, "bytes"),
                ("bar_rss_400mb_at_10m", row["rss_bytes"] <= RSS_BAR, "bool"),
                ("bar_rss_350mb_at_10m_star", row["rss_bytes"] <= RSS_BAR_STAR, "bool"),
                ("bar_hwm_450mb_to_10m_star", hwm <= HWM_BAR_STAR, "bool"),
            ]
        row = next((r for r in self.rows if r["unique_urls"] >= HUNDRED_MILLION), None)
        if row is not None:
            figures += [
                ("unique_urls_at_100m_row", row["unique_urls"], "urls"),
                ("rss_bytes_at_100m", row["rss_bytes"], "bytes"),
                ("bar_rss_400mb_at_100m", row["rss_bytes"] <= RSS_BAR, "bool"),
            ]
        return figures

    def write_results(self, final: dict[str, Any] | None) -> None:
        self.results.parent.mkdir(parents=True, exist_ok=True)
        replace_json(
            self.results,
            {
                "bench": BENCH_NAME,
                "target": self.target,
                "state": str(self.state),
                "settings": self.overrides,
                "options": self.options,
                "complete": final is not None,
                "runs": self.runs,
                "rows": self.rows,
                "final": final,
            },
        )

    def report(self) -> bool:
        """Print the final figures; True if the run reached its target without failure
        (whether a bar is met is a printed figure, not the exit status)."""
        figures = self.final_figures()
        for name, value, unit in figures:
            emit(BENCH_NAME, name, value, unit, unique_urls=self.unique)
        emit(BENCH_NAME, "failure", self.failure, "", unique_urls=self.unique)
        final = {name: value for name, value, _ in figures}
        self.write_results({**final, "failure": self.failure})
        bars = ", ".join(
            f"{k[4:]} {'met' if v else 'NOT met'}" for k, v in final.items() if k.startswith("bar_")
        )
        print(
            f"# {self.unique:,} unique URLs in {final['seconds']:.0f} s of feeding "
            f"({self.fed:,} pages, {final['pages_per_s']:.0f} pages/s, {len(self.runs)} "
            f"process(es)): RSS {final['rss_bytes_at_end'] / MB:.1f} MB (anon "
            f"{final['rss_anon_bytes_at_end'] / MB:.1f}, file "
            f"{final['rss_file_bytes_at_end'] / MB:.1f}), peak sampled "
            f"{final['peak_rss_bytes'] / MB:.1f} MB, VmHWM {final['vm_hwm_bytes'] / MB:.1f} "
            f"MB; reactor CPU {final['reactor_cpu_s_per_page'] * 1e3:.3f} ms/page; disk "
            f"{final.get('disk_bytes_per_url', 0):.1f} B/URL; bars: {bars or 'none judged'}; "
            f"results in {self.results}",
            flush=True,
        )
        return self.failure is None and self.reached

    def close(self, reason: str) -> defer.Deferred[Any]:
        print(f"# closing the scheduler ({reason}) ...", flush=True)
        closing = self.scheduler.close(reason) or defer.succeed(None)

        def cleanup(result: Any) -> Any:
            logging.getLogger().removeHandler(self.errors)
            self.probe.stopped.set()
            for db in self.kept:
                db.close()
            if self.reached and not self.keep_state:
                shutil.rmtree(self.state, ignore_errors=True)
                print(f"# state {self.state} deleted (its figures are recorded)", flush=True)
            else:
                print(
                    f"# state kept in {self.state}: rerun with the same --state to go on",
                    flush=True,
                )
            return result

        return closing.addBoth(cleanup)


MEMORY_OPTIONS = (
    "trim_after_drain",
    "mmap_threshold",
    "arena_max",
    "leveldb_no_mmap",
    "one_merge_thread",
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="bench/frontier.py's docstring says what runs, what the state directory "
        "holds, how a resume counts and what each figure is.",
    )
    parser.add_argument(
        "--urls",
        type=int,
        default=URLSEEN_TARGET,
        help=f"unique URLs to reach ({URLSEEN_TARGET:,}); may be raised on a resume",
    )
    parser.add_argument(
        "--state",
        type=Path,
        default=DEFAULT_STATE,
        help=f"the state directory, resumed from if it holds a run ({DEFAULT_STATE})",
    )
    parser.add_argument("--fresh", action="store_true", help="empty --state first: start a new run")
    parser.add_argument(
        "--keep-state",
        action="store_true",
        help="keep --state once the target is reached (to resume it to a larger --urls)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="the results file, rewritten at every row (bench/results/frontier-<urls>.json)",
    )
    parser.add_argument(
        "--probe-mb",
        type=float,
        default=PROBE_MB,
        help=f"RSS above which smaps is read at each new high ({PROBE_MB} MB)",
    )
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting on top of the driver's (e.g. IRL_WORKBENCH_URLS=25000)",
    )
    group = parser.add_argument_group(
        "memory options (issue 22 part 2; the same on every resume of a state)"
    )
    group.add_argument(
        "--trim-after-drain",
        action="store_true",
        help="malloc_trim(0) on the reactor after each delivery of URLseen's results",
    )
    group.add_argument(
        "--mmap-threshold",
        type=int,
        metavar="BYTES",
        help="glibc's fixed mmap threshold (the project pins 128 KiB)",
    )
    group.add_argument("--arena-max", type=int, metavar="N", help="glibc's M_ARENA_MAX")
    group.add_argument(
        "--leveldb-no-mmap",
        action="store_true",
        help="LevelDB reads its tables with pread: the driver holds its 1,000 mmaps first",
    )
    group.add_argument(
        "--one-merge-thread",
        action="store_true",
        help="STAR's refreshes run in URLseen's merge thread",
    )
    args = parser.parse_args()
    if args.urls < 1:
        parser.error("--urls: at least 1")
    try:
        overrides = dict(item.split("=", 1) for item in args.set)
    except ValueError:
        parser.error("-s takes NAME=VALUE")
    options = {name: value for name in MEMORY_OPTIONS if (value := getattr(args, name))}
    state = args.state.resolve()
    lock = DirectoryLock(state, "the frontier benchmark's state")
    try:
        lock.acquire()  # (creates the directory)
    except DirectoryLocked as e:
        parser.exit(1, f"{e}\n")
    if args.fresh:
        for child in state.iterdir():
            if child.name != lock.path.name:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    results = args.results or RESULTS / f"frontier-{args.urls}.json"
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    install_reactor(REACTOR)
    from twisted.internet import reactor

    driver = Driver(
        args.urls, reactor, state, overrides, options, args.probe_mb, results, args.keep_state
    )
    status = {"code": 1}

    def stop(signum: int, frame: Any) -> None:
        driver.stopping += 1
        if driver.stopping > 1:
            print("# second signal: exiting now (the state resumes as after a kill)", flush=True)
            os._exit(128 + signum)
        print(f"# signal {signum}: stopping cleanly (again to exit at once)", flush=True)

    def finish(result: Any) -> Any:
        if isinstance(result, Failure):
            driver.failure = driver.failure or str(result.value)
            print(result.getTraceback(), file=sys.stderr)
        if driver.reached or driver.failure is not None:
            status["code"] = 0 if driver.report() else 1
            return driver.close("finished")
        driver.save_checkpoint()
        driver.write_results(final=None)
        status["code"] = 2
        print(f"# stopped at {driver.unique:,} unique URLs, {driver.fed:,} pages fed", flush=True)
        return driver.close("shutdown")

    def run() -> None:
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            d = driver.start()
        except Exception:
            logging.exception("the run could not start")
            reactor.stop()
            return
        d.addBoth(finish)
        d.addErrback(lambda f: print(f.getTraceback(), file=sys.stderr))
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(run)
    with contextlib.suppress(KeyboardInterrupt):
        reactor.run(installSignalHandlers=False)
    lock.release()
    return status["code"]


if __name__ == "__main__":
    sys.exit(main())
