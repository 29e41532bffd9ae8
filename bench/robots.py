"""RAM of the robots state at crawl scale: a synthetic stream of robots.txt answers.

    python bench/robots.py                      # 1,000,000 hosts (the issue's bar)
    python bench/robots.py --hosts 100000       # a smoke run
    python bench/robots.py --baseline           # also the pre-cache design (a dict in RAM)

The issue's bar: *robots state RSS under 64 MB at 1 million hosts*.

What runs: the real :class:`irlscrapy.scheduler.hosts.robotscache.RobotsCache` with the
project's default settings (IRL_ROBOTS_RAM_HOSTS, IRL_ROBOTS_RAM_BODIES, TTL, retries)
on a LevelDB under a temporary directory. Host number ``i`` (``h<i>.d<i mod 200000>.com``)
answers, by ``i mod 20``: 12 in 20 a 200 with one of :data:`STOCK_BODIES` common bodies,
3 in 20 a 200 with a body of its own (a few Disallow lines naming the host), 3 in 20 a
404, 1 in 20 a 503, 1 in 20 no answer. After each answer the frontier's reads are
replayed: the host's own rules, and those of a host met earlier (host ``i // 2``, whose
record has left RAM by then, so the read goes to disk).

Also: a new host's lookup soon after its first, remembered absent, against its first,
which asks LevelDB (``new_host_lookup_again_us``).

Figures: RSS before the cache opens and after the stream (its difference is the robots
state's RAM: records and parsed rules in RAM, LevelDB's block cache and write buffer,
allocator slack; and, file-backed, the pages of LevelDB's memory-mapped tables that the
lookups touched), split into anonymous and file-backed growth, the bar's verdict, the
cache's RAM counts, its disk size, and the time per host as a ratio to a baseline in
the same run: the same stream into a plain dict (host -> rules, parsed rules shared by
body), which is what the scheduler kept before the robots cache. With ``--baseline``
that dict's RSS growth is measured too (in a child process, so the two do not share an
allocator).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, memory

from irlscrapy import defaults
from irlscrapy.scheduler.hosts.robots import RobotsRules, outcome_of, parse
from irlscrapy.scheduler.hosts.robotscache import RobotsCache

BAR_BYTES = 64 * 2**20
STOCK_BODIES = 50
UA = "irlscrapy-bench"


def answer(i: int) -> tuple[str, int | None, bytes]:
    """Host number ``i`` and its robots.txt answer (see the module docstring)."""
    host = f"h{i}.d{i % 200_000}.com"
    kind = i % 20
    if kind < 12:
        n = i % STOCK_BODIES
        return host, 200, b"User-agent: *\nDisallow: /stock%d/\nDisallow: /cgi-bin/\n" % n
    if kind < 15:
        own = host.encode()
        return host, 200, b"User-agent: *\nDisallow: /%s/a/\nDisallow: /%s/b/\n" % (own, own)
    if kind < 18:
        return host, 404, b"not found"
    return host, (503 if kind == 18 else None), b""


def default_cache() -> RobotsCache:
    """The robots cache as the project's defaults build it."""
    settings = {s.name: s.default for s in defaults.SETTINGS}
    return RobotsCache(
        ttl=settings["IRL_ROBOTS_TTL"],
        retry_delay=settings["IRL_ROBOTS_RETRY_DELAY"],
        retries=settings["IRL_ROBOTS_RETRIES"],
        ram_hosts=settings["IRL_ROBOTS_RAM_HOSTS"],
        ram_bodies=settings["IRL_ROBOTS_RAM_BODIES"],
        ram_bytes=settings["IRL_ROBOTS_RAM_BYTES"],
    )


def run_cache(hosts: int, directory: Path, progress: bool) -> dict[str, float]:
    cache = default_cache()
    before = memory()
    cache.open(directory)
    started = time.perf_counter()
    for i in range(hosts):
        host, status, body = answer(i)
        cache.learn(host, status, body, now=float(i))
        cache.lookup(host)
        earlier, _, _ = answer(i // 2)
        cache.lookup(earlier)
        if progress and i and i % 100_000 == 0:
            now = memory()
            print(
                f"# {i:>9,} hosts  robots state {(now['rss'] - before['rss']) / 2**20:6.1f} MB"
                f" (anonymous {(now['rss_anon'] - before['rss_anon']) / 2**20:6.1f} MB,"
                f" file-backed {(now['rss_file'] - before['rss_file']) / 2**20:6.1f} MB)",
                flush=True,
            )
    seconds = time.perf_counter() - started
    after = memory()
    in_ram, parsed = len(cache), len(cache._rules)
    cache.close()
    disk = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    return {
        "rss_before": before["rss"],
        "rss_after": after["rss"],
        "anon_grown": after["rss_anon"] - before["rss_anon"],
        "file_grown": after["rss_file"] - before["rss_file"],
        "seconds": seconds,
        "records_in_ram": in_ram,
        "parsed_in_ram": parsed,
        "disk_bytes": disk,
    }


def run_dict(hosts: int) -> dict[str, float]:
    """The design before the robots cache: host -> rules in a dict, parses shared by body."""
    before = memory()["rss"]
    robots: dict[str, RobotsRules | None] = {}
    shared: dict[bytes, RobotsRules] = {}
    started = time.perf_counter()
    for i in range(hosts):
        host, status, body = answer(i)
        rules: RobotsRules | None = None
        if outcome_of(status) == "parsed":
            digest = hashlib.blake2b(body, digest_size=16).digest()
            rules = shared.get(digest)
            if rules is None:
                rules = shared[digest] = parse(body)
        robots[host] = rules
        robots.get(host)
        robots.get(answer(i // 2)[0])
    seconds = time.perf_counter() - started
    return {"rss_before": before, "rss_after": memory()["rss"], "seconds": seconds}


def new_host_lookups(directory: Path, hosts: int = 100_000, window: int = 1000) -> None:
    """A new host is looked up again while its robots.txt is fetched (each of its URLs
    admitted meanwhile asks): its first lookup asks LevelDB, which has no record, and the
    host is remembered absent; an other lookup soon after does not ask (issue 40).
    Microseconds a lookup of each kind, ``window`` new hosts at a time, on a cache of the
    project's defaults holding ``2 * hosts`` records."""
    cache = default_cache()
    cache.open(directory)
    for i in range(2 * hosts):
        cache.learn(f"h{i}.known.example", 404, b"", 1.0)
    timed = {"first": 0.0, "again": 0.0}
    for start in range(0, hosts, window):
        new = [f"h{i}.new.example" for i in range(start, start + window)]
        for kind in timed:
            started = time.perf_counter()
            for host in new:
                cache.lookup(host)
            timed[kind] += time.perf_counter() - started
    cache.close()
    first, again = (timed[kind] / hosts * 1e6 for kind in ("first", "again"))
    emit(
        "robots",
        "new_host_lookup_again_us",
        round(again, 3),
        "us",
        first_lookup_us=round(first, 3),
        ratio=round(again / first, 3),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=1_000_000)
    parser.add_argument("--baseline", action="store_true", help="measure the dict's RSS too")
    parser.add_argument("--dict-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dict_only:
        figures = run_dict(args.hosts)
        print(f"{figures['rss_after'] - figures['rss_before']} {figures['seconds']}")
        return
    with tempfile.TemporaryDirectory(prefix="irlscrapy-bench-robots-") as tmp:
        cache = run_cache(args.hosts, Path(tmp), progress=True)
    state = cache["rss_after"] - cache["rss_before"]
    emit("robots", "robots_state_rss", state, "bytes", hosts=args.hosts, **cache)
    emit("robots", "bar_64mb", state < BAR_BYTES, "met", robots_state_mb=state / 2**20)
    # Time per host against the dict baseline, both in this process (same machine state).
    small = min(args.hosts, 200_000)
    with tempfile.TemporaryDirectory(prefix="irlscrapy-bench-robots-") as tmp:
        timed = run_cache(small, Path(tmp), progress=False)
    plain = run_dict(small)
    emit(
        "robots",
        "time_per_host_ratio",
        timed["seconds"] / plain["seconds"],
        "x the in-RAM dict",
        hosts=small,
        cache_us_per_host=timed["seconds"] / small * 1e6,
        dict_us_per_host=plain["seconds"] / small * 1e6,
    )
    with tempfile.TemporaryDirectory(prefix="irlscrapy-bench-robots-") as tmp:
        new_host_lookups(Path(tmp))
    if args.baseline:
        out = subprocess.run(
            [sys.executable, __file__, "--dict-only", "--hosts", str(args.hosts)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        grown = int(out[0])
        emit(
            "robots",
            "dict_rss",
            grown,
            "bytes",
            hosts=args.hosts,
            cache_to_dict_ratio=state / grown if grown else float("nan"),
        )


if __name__ == "__main__":
    main()
