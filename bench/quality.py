"""Crawl quality: what STAR does against spam farms, measured at the in-vitro server.

    python bench/quality.py                          # the spam web, 100,000 pages a variant
    python bench/quality.py --pages 20000 --variants star,off
    python bench/quality.py --report                 # the figures from the saved state
    python bench/quality.py --calibrate              # breadth-first on the web's graph

**Long, and resumable.** The four variants at 100,000 pages took 45 minutes on a
2-core machine (stock Scrapy's the longest), and their figures 8 more; longer runs
take hours. Each crawls with a JOBDIR of its own under ``--state`` (default
``bench/results/quality-<profile>/<variant>/``), the in-vitro server's request log
beside it. Stopped at any point (Ctrl-C, a lost session), the same command resumes
every unfinished variant from its JOBDIR; a variant whose log holds ``--pages`` page
requests is done and is not crawled again. ``--fresh`` starts over.

Variants (issue 19), the same spider and web, stopped at the same number of page
downloads:

``star``      ``scrapy crawl broad`` as shipped (the add-on; ``IRL_BUDGETS = "star"``),
              ``IRL_STAR_TOP_DOMAINS`` = ``--top`` (about 0.1% of the PLDs STAR sees:
              the figures print the share);
``off``       the same with ``IRL_BUDGETS = "off"``: no per-PLD limit in a BEAST queue,
              a plain FIFO frontier with the same politeness; it isolates what budgets
              add (the control of the bars);
``constant``  ``IRL_BUDGETS = "constant"``: every PLD B0 (for information);
``bfo``       stock Scrapy breadth-first (``ADDONS={}``, DEPTH_PRIORITY=1, FIFO queues,
              ScrapyPriorityQueue, a JOBDIR too).

The bars (one run, ``--pages`` 100,000 or more):

- calibration: ``bfo``'s spam share is at least 30%;
- ``star``'s spam share is at most 1/10 of ``bfo``'s, at most 1/3 of ``off``'s, and
  below 5%;
- Fig. 7(b): ``star``'s mean pages per PLD rise with the true in-degree bucket,
  monotone from bucket 4-7 upwards allowing one inversion;
- Spearman's rank correlation of true in-degree and pages over the PLDs ``star``
  crawled (at least one page) is at least 0.5, and above ``off``'s;
- the 100 most-linked legitimate PLDs (:func:`leaders`) are all reached, and their
  median pages are at least 5x the median crawled PLD's.

Everything is measured from the server's request log against the web's own ground
truth: the spam flag of each host, each PLD's true in-degree (distinct PLDs linking to
it in the whole web, :meth:`InVitroWeb.true_indegree`). The population of the Fig. 7(b)
table and of ``spearman`` is every PLD of true in-degree >= 1 the variant *discovered*
(a page it downloaded is on the PLD or links to it), with its pages downloaded, 0
included, as the paper's figure averages over the PLDs IRLbot knew;
``spearman_crawled`` (the bar's) takes those with at least one page. Each page's depth
is its breadth-first distance from the seeds over the links of the pages the variant
downloaded; the calibration prints the spam share per depth.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
from collections import Counter, deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from common import RESULTS, crawl_broad_web, emit

from irlscrapy import defaults
from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.profiles import get_profile
from irlscrapy.invitro.routing import REFUSED
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import CrawlPolicy, crawl_levels, followed_links

PAGES = 100_000
PROFILE = "spam"
SEED = 0
#: IRL_STAR_TOP_DOMAINS of ``star``: about 0.1% of the PLDs a 100,000-page crawl of the
#: spam web sees (the figures print the share).
TOP_DOMAINS = 10
#: B0, IRL_BEAST_BUDGET's default: how many pages a budget can hold a spam PLD to.
DEFAULT_BUDGET = int(defaults.BY_NAME["IRL_BEAST_BUDGET"].default)
VARIANTS: dict[str, dict[str, Any]] = {
    "star": {"IRL_BUDGETS": "star"},
    "off": {"IRL_BUDGETS": "off"},
    "constant": {"IRL_BUDGETS": "constant"},
    "bfo": {
        "ADDONS": "{}",
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        # One queue per depth for the whole crawl: Scrapy's default since 2.13,
        # DownloaderAwarePriorityQueue, keeps one per host (round robin across hosts, not
        # breadth-first; and with a JOBDIR, a file per host until "Too many open files").
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
    },
}
LEADERS = 100
#: Table VIII's rows: the legitimate PLDs of highest true in-degree.
TABLE_ROWS = 10
#: One crawl process runs at most this long before it is stopped and resumed.
CRAWL_WALL_S = 3 * 3600


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (ties get their average rank)."""
    return float(np.corrcoef(_ranks(x), _ranks(y))[0, 1])


def _ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(len(values), dtype=np.float64)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


def bucket(in_degree: int) -> str:
    """Fig. 7(b)'s in-degree buckets: 1, 2-3, 4-7, 8-15, ..."""
    low = 1 << (int(in_degree).bit_length() - 1)
    return str(low) if low == 1 else f"{low}-{2 * low - 1}"


def _low(name: str) -> int:
    return int(name.split("-")[0])


def inversions(means: list[float]) -> int:
    """How many times a bucket's mean falls below the one before it."""
    return sum(1 for a, b in itertools.pairwise(means) if b < a)


def is_page(record: dict[str, Any]) -> bool:
    """A page request (robots.txt and DNS failures are not)."""
    return record["path"] not in ROBOTS_PATHS and record["kind"] != "dns-error"


def page_links(records: list[dict[str, Any]], web: InVitroWeb) -> dict[str, list[str]]:
    """The links the broad spider follows from each page downloaded (recomputed from
    the web), by the page's URL."""
    links: dict[str, list[str]] = {}
    for n, r in enumerate(records):
        if n % 20_000 == 0:
            print(f"# links of the pages downloaded: {n:,} of {len(records):,}", flush=True)
        if not is_page(r) or r["status"] not in (200, 301, 302):
            continue
        url = request_url(r)
        assert url is not None  # a refused connection has no status
        reply = web.respond(r["host"], r["path"], scheme=r.get("scheme", "http"))
        links[url] = followed_links(url, reply, CrawlPolicy())
    return links


def depths(seeds: Iterable[str], links: dict[str, list[str]]) -> dict[str, int]:
    """Breadth-first distance from the seeds of every URL reachable over ``links``."""
    depth = dict.fromkeys(seeds, 0)
    queue = deque(depth)
    while queue:
        url = queue.popleft()
        for nxt in links.get(url, ()):
            if nxt not in depth:
                depth[nxt] = depth[url] + 1
                queue.append(nxt)
    return depth


def leaders(web: InVitroWeb, true_in: np.ndarray, count: int = LEADERS) -> list[str]:
    """The ``count`` legitimate PLDs of highest true in-degree whose home host resolves
    (links into a PLD go to its home host; a PLD whose home host has no DNS answer
    cannot be reached by any crawler)."""
    legit_plds = web.profile.legit_plds
    legit = np.flatnonzero(true_in[:legit_plds] >= 1)
    names = []
    for pid in legit[np.argsort(-true_in[legit], kind="stable")].tolist():
        home = web.host(web.host_name(pid, 0))
        if home is not None and home.dns in ("ok", "slow"):
            names.append(web.pld_name(pid))
            if len(names) == count:
                break
    return names


def figures(
    variant: str, records: list[dict[str, Any]], web: InVitroWeb, true_in: np.ndarray
) -> dict[str, Any]:
    pages = [r for r in records if is_page(r)]
    spam = sum(1 for r in pages if r["spam"])
    # A budget can only hold back a PLD that has more URLs than its budget: how many
    # spam PLDs got more pages than B0 shows whether budgets had anything to do.
    spam_per_pld = Counter(r["pld"] for r in pages if r["spam"])
    per_pld = Counter(r["pld"] for r in pages)
    links = page_links(records, web)
    found = {r["pld"] for r in pages if r["status"] == 200 and r["pld"]}
    found.update(pld(url_host(link)) for targets in links.values() for link in targets)
    ids = {name: web.pld_id(name) for name in found}
    population = sorted(
        (name for name, pid in ids.items() if pid is not None and true_in[pid] >= 1),
        key=lambda name: ids[name] or 0,
    )
    degrees = np.array([true_in[ids[name]] for name in population])
    crawled = np.array([per_pld.get(name, 0) for name in population])
    table: dict[str, list[int]] = {}
    for degree, count in zip(degrees.tolist(), crawled.tolist(), strict=True):
        table.setdefault(bucket(degree), []).append(count)
    fig7b = {k: (len(table[k]), sum(table[k]) / len(table[k])) for k in sorted(table, key=_low)}
    rising = [mean for name, (_, mean) in fig7b.items() if _low(name) >= 4]
    leader_names = leaders(web, true_in)
    contacted = {r["pld"] for r in records}
    leader_pages = [per_pld.get(name, 0) for name in leader_names]
    some = crawled > 0
    depth_of = depths(web.seeds(), links)
    by_depth: dict[int, list[int]] = {}
    for r in pages:
        url = request_url(r)
        level = depth_of.get(url, -1) if url is not None else -1
        counts = by_depth.setdefault(level, [0, 0])
        counts[0] += 1
        counts[1] += int(r["spam"])
    return {
        "variant": variant,
        "pages": len(pages),
        "spam_pages": spam,
        "spam_share": spam / len(pages) if pages else float("nan"),
        "spam_plds": len(spam_per_pld),
        "spam_pld_max_pages": max(spam_per_pld.values(), default=0),
        "spam_plds_over_default_budget": sum(
            1 for count in spam_per_pld.values() if count > DEFAULT_BUDGET
        ),
        "plds": len(population),
        "plds_crawled": int(some.sum()),
        "spearman": spearman(degrees, crawled) if len(population) > 1 else float("nan"),
        "spearman_crawled": spearman(degrees[some], crawled[some])
        if some.sum() > 1
        else float("nan"),
        "fig7b": fig7b,
        "fig7b_inversions_from_4": inversions(rising),
        "leaders_reached": sum(1 for name in leader_names if name in contacted),
        "leaders_not_reached": [n for n in leader_names if n not in contacted],
        "leaders_median_pages": float(np.median(leader_pages)),
        "median_crawled_pages": float(np.median(crawled[some])) if some.any() else 0.0,
        "table8": [
            (name, int(true_in[web.pld_id(name) or 0]), per_pld.get(name, 0))
            for name in leader_names[:TABLE_ROWS]
        ],
        "depths": {
            str(level): {"pages": n, "spam_share": s / n}
            for level, (n, s) in sorted(by_depth.items())
        },
    }


def first_pages(records: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The requests that started up to the ``n``-th page request (robots.txt included),
    so that crawls stopped at different points compare at the same number of pages."""
    ordered = sorted(records, key=lambda r: r["t_start"])
    count = 0
    for i, r in enumerate(ordered):
        if is_page(r):
            count += 1
            if count == n:
                return ordered[: i + 1]
    return ordered


def served_pages(workdir: Path) -> int:
    """Page requests in a variant's server log so far."""
    log = workdir / "requests.jsonl"
    if not log.exists():
        return 0
    count = 0
    with open(log, "rb") as f:
        for line in f:
            if line.endswith(b"\n") and is_page(json.loads(line)):
                count += 1
    return count


def crawl(variant: str, workdir: Path, pages: int, top: int, profile: str) -> None:
    """Crawl ``variant`` until its server log holds ``pages`` page requests, resuming
    from its JOBDIR (a crawl that ended by itself before that is done too)."""
    workdir.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = dict(VARIANTS[variant])
    if variant != "bfo":
        settings["IRL_STAR_TOP_DOMAINS"] = top
    while (done := served_pages(workdir)) < pages:
        print(f"# {variant}: {done:,} of {pages:,} pages served; crawling", flush=True)
        before = done
        _, log = crawl_broad_web(
            workdir, pages, settings, SEED, jobdir=True, profile=profile, wall=CRAWL_WALL_S
        )
        if served_pages(workdir) == before:
            sys.exit(f"{variant}: the crawl served no page; its log:\n{log[-3000:]}")
        if "Spider closed (finished)" in log.rsplit("Spider opened", 1)[-1]:
            print(f"# {variant}: the crawl finished by itself", flush=True)
            break


def saved(workdir: Path, pages: int) -> tuple[list[dict[str, Any]], str]:
    log = workdir / "requests.jsonl"
    if not log.exists():
        sys.exit(f"no server log in {workdir}: crawl first")
    records = [json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")]
    crawl_log = workdir / "crawl.log"
    return first_pages(records, pages), crawl_log.read_text() if crawl_log.exists() else ""


def print_tables(results: list[dict[str, Any]]) -> None:
    buckets = sorted({b for r in results for b in r["fig7b"]}, key=_low)
    head = "".join(f"{r['variant']:>22}" for r in results)
    print(f"# Fig. 7(b): mean pages per PLD (PLDs) by true in-degree\n# {'in-degree':>12}{head}")
    for b in buckets:
        cells = ""
        for r in results:
            n, mean = r["fig7b"].get(b, (0, float("nan")))
            cells += f"{mean:>14.2f} ({n:>5})"
        print(f"# {b:>12}{cells}")
    print("# Table VIII: the most-linked legitimate PLDs, pages")
    print(f"# {'PLD':>20}{'in-degree':>10}{head}")
    for row, (name, degree, _) in enumerate(results[0]["table8"]):
        cells = "".join(f"{r['table8'][row][2]:>22,}" for r in results)
        print(f"# {name:>20}{degree:>10,}{cells}")
    levels = sorted({int(d) for r in results for d in r["depths"]})
    print(f"# Spam share by depth (pages)\n# {'depth':>12}{head}")
    for level in levels:
        cells = ""
        for r in results:
            d = r["depths"].get(str(level))
            cells += f"{d['spam_share']:>13.1%} ({d['pages']:>6})" if d else f"{'-':>22}"
        print(f"# {'unreached' if level < 0 else level:>12}{cells}")


def calibrate(web: InVitroWeb, pages: int) -> None:
    """Breadth-first on the web's own graph (no network, RFC 9309 robots, DNS failures
    left out): the spam share per depth a stock breadth-first crawler should see."""
    per_depth: Counter[int] = Counter()
    spam_depth: Counter[int] = Counter()
    total = spam = 0
    for depth, url, reply in crawl_levels(web, CrawlPolicy(robots="scrapy")):
        if reply is REFUSED:
            continue  # an https link to a host that serves none: no page
        host = web.host(url_host(url))
        assert host is not None
        total += 1
        per_depth[depth] += 1
        if host.spam:
            spam += 1
            spam_depth[depth] += 1
        if total >= pages:
            break
    emit("quality", "calibration_spam_share", spam / max(total, 1), "share", pages=total,
         profile=web.profile.name)  # fmt: skip
    for depth in sorted(per_depth):
        emit("quality", "calibration_depth", depth, "depth", pages=per_depth[depth],
             spam_share=spam_depth[depth] / per_depth[depth])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Long and resumable: each variant keeps a JOBDIR under --state; run the "
        "same command again to go on where it stopped.",
    )
    parser.add_argument("--pages", type=int, default=PAGES, help="page downloads per variant")
    parser.add_argument("--profile", default=PROFILE, help="in-vitro profile (spam)")
    parser.add_argument("--top", type=int, default=TOP_DOMAINS, help="IRL_STAR_TOP_DOMAINS")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--state", type=Path, help="state directory (bench/results/...)")
    parser.add_argument("--report", action="store_true", help="no crawl: the saved state")
    parser.add_argument("--fresh", action="store_true", help="delete the state first")
    parser.add_argument(
        "--calibrate", action="store_true", help="no crawl: breadth-first on the web's graph"
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {list(VARIANTS)}")
    web = InVitroWeb(get_profile(args.profile), SEED)
    if args.calibrate:
        calibrate(web, args.pages)
        return
    state = args.state or RESULTS / f"quality-{args.profile}"
    if args.fresh and state.exists():
        shutil.rmtree(state)
    emit("quality", "setup", args.pages, "pages", top_domains=args.top, seed=SEED,
         profile=args.profile, variants=variants, state=str(state))  # fmt: skip
    if not args.report:
        for variant in variants:
            crawl(variant, state / variant, args.pages, args.top, args.profile)
    true_in = web.true_indegree()
    results = []
    for variant in variants:
        records, crawl_log = saved(state / variant, args.pages)
        result = figures(variant, records, web, true_in)
        if variant != "bfo":
            result["star_plds_seen"] = _stat(crawl_log, "irl/star/plds")
            result["top_share_of_plds_seen"] = args.top / max(result["star_plds_seen"], 1)
        emit("quality", "variant", variant, "", **result)
        results.append(result)
    print_tables(results)
    bars(results)


def bars(results: list[dict[str, Any]]) -> None:
    by = {r["variant"]: r for r in results}
    if "bfo" in by:
        emit("quality", "bar_calibration", by["bfo"]["spam_share"] >= 0.30, "met",
             bfo=by["bfo"]["spam_share"])  # fmt: skip
    star = by.get("star")
    if star is None:
        return
    share = star["spam_share"]
    if "bfo" in by:
        emit("quality", "bar_spam_vs_bfo", share <= by["bfo"]["spam_share"] / 10, "met",
             star=share, bfo=by["bfo"]["spam_share"])  # fmt: skip
    if "off" in by:
        emit("quality", "bar_spam_vs_off", share <= by["off"]["spam_share"] / 3, "met",
             star=share, off=by["off"]["spam_share"])  # fmt: skip
        emit("quality", "bar_spearman", star["spearman_crawled"] >= 0.5
             and star["spearman_crawled"] > by["off"]["spearman_crawled"], "met",
             star=star["spearman_crawled"], off=by["off"]["spearman_crawled"])  # fmt: skip
    emit("quality", "bar_spam_below_5_percent", share < 0.05, "met", star=share)
    emit("quality", "bar_fig7b_rises", star["fig7b_inversions_from_4"] <= 1, "met",
         inversions=star["fig7b_inversions_from_4"])  # fmt: skip
    emit("quality", "bar_leaders", star["leaders_reached"] == LEADERS
         and star["leaders_median_pages"] >= 5 * star["median_crawled_pages"], "met",
         reached=star["leaders_reached"], leaders_median=star["leaders_median_pages"],
         median_crawled=star["median_crawled_pages"])  # fmt: skip


def _stat(log: str, name: str) -> int:
    found = re.findall(rf"'{re.escape(name)}': (\d+)", log)
    return int(found[-1]) if found else 0


if __name__ == "__main__":
    main()
