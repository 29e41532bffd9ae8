"""Crawl quality: what STAR does against spam farms, measured at the in-vitro server.

    python bench/quality.py                          # the spam web, 20,000 and 100,000 pages
    python bench/quality.py --pages 1000000 --variants star      # resumable; hours
    python bench/quality.py --seed 1 --variants star,constant    # another web of the profile
    python bench/quality.py --report                 # the figures from the saved state
    python bench/quality.py --calibrate              # breadth-first on the web's graph
    python bench/quality.py --standing               # the farms' ranks by other scores

**Long, and resumable.** Four variants at 100,000 pages take about an hour on a 2-core
machine (stock Scrapy's the longest), and their figures some minutes more; 1,000,000
pages take hours a variant. Each crawls with a JOBDIR of its own under ``--state``
(default ``bench/results/quality-<profile>-<seed>/<variant>/``), the in-vitro server's
request log beside it. Stopped at any point (Ctrl-C, a lost session), the same command
resumes every unfinished variant from its JOBDIR; a variant whose log holds the largest
of ``--pages`` page requests is done and is not crawled again. ``--fresh`` starts over.
The figures are read at every size of ``--pages`` from the same crawls (the requests up
to the n-th page).

Variants, the same spider and web, stopped at the same number of page downloads; every
IRL variant is ``scrapy crawl broad`` with the project's settings and the defaults, only
``IRL_BUDGET_MODE`` varied (issue 37):

``star``        as shipped (``IRL_BUDGET_MODE = "star"``, the ``share`` budget function);
``star-paper``  labelled, not the headline: ``IRL_BUDGET_FUNCTION = "paper"``, the
                paper's fixed top 10,000 (the default before issue 37);
``star-share-0.001``  labelled, not the headline: ``IRL_STAR_TOP_SHARE = 0.001``, nine
                times the paper's share (what more raised PLDs do to the spam);
``off``         ``IRL_BUDGET_MODE = "off"``: no per-PLD limit in a BEAST queue, a plain FIFO
                frontier with the same politeness;
``constant``    ``IRL_BUDGET_MODE = "constant"``: every PLD B0;
``bfo``         stock Scrapy breadth-first (``ADDONS={}``, DEPTH_PRIORITY=1, FIFO queues,
                ScrapyPriorityQueue, a JOBDIR too).

The bars (issue 37; :func:`bars`):

- calibration, 100,000 pages: ``bfo``'s spam share is at least 30%;
- 100,000 pages: ``star``'s spam share at most 1/10 of ``bfo``'s and 1/2 of
  ``constant``'s; 20,000 pages: at most ``constant``'s; 1,000,000 pages: below 5%;
- 100,000 pages: the ten most-linked legitimate PLDs get at least 1.3x the pages under
  ``star`` that they get under ``constant``;
- Fig. 7(b): over the buckets of at least 20 legitimate PLDs, ``star``'s mean pages per
  PLD rise with the true in-degree bucket, with at most one inversion; Spearman's rank
  correlation of true in-degree and pages over the PLDs ``star`` crawled (at least one
  page) is at least 0.5.

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
from irlscrapy.invitro.replies import REFUSED
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import CrawlPolicy, crawl_levels, followed_links

#: Sizes the figures and bars are read at (a 1,000,000-page run: ``--pages``).
SIZES = (20_000, 100_000)
PROFILE = "spam"
SEED = 0
#: B0, IRL_BUDGET_DEFAULT's default: how many pages a budget can hold a spam PLD to.
DEFAULT_BUDGET = int(defaults.BY_NAME["IRL_BUDGET_DEFAULT"].default)
VARIANTS: dict[str, dict[str, Any]] = {
    "star": {},
    "star-paper": {"IRL_BUDGET_FUNCTION": "paper"},
    "star-share-0.001": {"IRL_STAR_TOP_SHARE": 0.001},
    "off": {"IRL_BUDGET_MODE": "off"},
    "constant": {"IRL_BUDGET_MODE": "constant"},
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
#: Fig. 7(b)'s bar reads the buckets that hold at least this many legitimate PLDs.
FIG7B_MIN_LEGIT = 20
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
    variant: str,
    records: list[dict[str, Any]],
    web: InVitroWeb,
    true_in: np.ndarray,
    all_links: dict[str, list[str]],
) -> dict[str, Any]:
    """The figures of one variant's first pages (``records``); ``all_links``: the links
    of every page the variant downloaded (:func:`page_links`), a superset."""
    pages = [r for r in records if is_page(r)]
    spam = sum(1 for r in pages if r["spam"])
    # A budget can only hold back a PLD that has more URLs than its budget: how many
    # spam PLDs got more pages than B0 shows whether budgets had anything to do.
    spam_per_pld = Counter(r["pld"] for r in pages if r["spam"])
    per_pld = Counter(r["pld"] for r in pages)
    urls = {request_url(r) for r in pages}
    links = {url: targets for url, targets in all_links.items() if url in urls}
    found = {r["pld"] for r in pages if r["status"] == 200 and r["pld"]}
    found.update(pld(url_host(link)) for targets in links.values() for link in targets)
    ids = {name: web.pld_id(name) for name in found}
    population = sorted(
        (name for name, pid in ids.items() if pid is not None and true_in[pid] >= 1),
        key=lambda name: ids[name] or 0,
    )
    degrees = np.array([true_in[ids[name]] for name in population])
    crawled = np.array([per_pld.get(name, 0) for name in population])
    legit = np.array([(ids[name] or 0) < web.profile.legit_plds for name in population])
    table: dict[str, list[int]] = {}
    legit_in: Counter[str] = Counter()
    for degree, count, is_legit in zip(
        degrees.tolist(), crawled.tolist(), legit.tolist(), strict=True
    ):
        table.setdefault(bucket(degree), []).append(count)
        legit_in[bucket(degree)] += is_legit
    fig7b = {
        k: (len(table[k]), sum(table[k]) / len(table[k]), legit_in[k])
        for k in sorted(table, key=_low)
    }
    rising = [mean for _, mean, n_legit in fig7b.values() if n_legit >= FIG7B_MIN_LEGIT]
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
        "fig7b_inversions": inversions(rising),
        "leaders_reached": sum(1 for name in leader_names if name in contacted),
        "leaders_not_reached": [n for n in leader_names if n not in contacted],
        "leaders_median_pages": float(np.median(leader_pages)),
        "median_crawled_pages": float(np.median(crawled[some])) if some.any() else 0.0,
        "table8": [
            (name, int(true_in[web.pld_id(name) or 0]), per_pld.get(name, 0))
            for name in leader_names[:TABLE_ROWS]
        ],
        "top10_pages": sum(per_pld.get(name, 0) for name in leader_names[:TABLE_ROWS]),
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


def crawl(variant: str, workdir: Path, pages: int, profile: str, seed: int) -> None:
    """Crawl ``variant`` until its server log holds ``pages`` page requests, resuming
    from its JOBDIR (a crawl that ended by itself before that is done too)."""
    workdir.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = dict(VARIANTS[variant])
    while (done := served_pages(workdir)) < pages:
        print(f"# {variant}: {done:,} of {pages:,} pages served; crawling", flush=True)
        before = done
        _, log = crawl_broad_web(
            workdir, pages, settings, seed, jobdir=True, profile=profile, wall=CRAWL_WALL_S
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
            n, mean, _ = r["fig7b"].get(b, (0, float("nan"), 0))
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


def standing(web: InVitroWeb) -> None:
    """Issue 37, item 2, on the web's own PLD graph: the farm PLDs' in-degree ranks when a
    linking PLD counts once (STAR), by its own standing, or by PageRank."""
    n, legit_plds = web.total_plds, web.profile.legit_plds
    pairs = [(pid, target) for pid in range(n) for target in web.out_plds(pid)]
    source, target = (np.array(column) for column in zip(*pairs, strict=True))
    degree = np.bincount(target, minlength=n).astype(np.float64)
    out = np.bincount(source, minlength=n).astype(np.float64)
    rank = np.full(n, 1.0 / n)
    for _ in range(50):
        rank = 0.15 / n + 0.85 * np.bincount(
            target, weights=rank[source] / out[source], minlength=n
        )
    scores = {
        "in-degree (each linking PLD once)": degree,
        "linking PLDs weighed by log2(1 + in-degree)": np.bincount(
            target, weights=np.log2(1 + degree[source]), minlength=n
        ),
        "linking PLDs of in-degree >= 5 only": np.bincount(
            target, weights=(degree[source] >= 5).astype(np.float64), minlength=n
        ),
        "PageRank (damping 0.85)": rank,
    }
    for name, score in scores.items():
        order = np.empty(n, dtype=np.int64)
        order[np.argsort(-score, kind="stable")] = np.arange(1, n + 1)
        farms = order[legit_plds:]
        emit("quality", "farm_rank", int(np.median(farms)), "median rank", score=name,
             best=int(farms.min()), worst=int(farms.max()), plds=n)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Long and resumable: each variant keeps a JOBDIR under --state; run the "
        "same command again to go on where it stopped.",
    )
    parser.add_argument(
        "--pages",
        type=lambda text: sorted(int(n) for n in text.split(",")),
        default=list(SIZES),
        help="page downloads to report at, comma-separated; each variant crawls to the "
        f"largest (default {','.join(map(str, SIZES))})",
    )
    parser.add_argument("--profile", default=PROFILE, help="in-vitro profile (spam)")
    parser.add_argument("--seed", type=int, default=SEED, help="the web's seed (0)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--state", type=Path, help="state directory (bench/results/...)")
    parser.add_argument("--report", action="store_true", help="no crawl: the saved state")
    parser.add_argument("--fresh", action="store_true", help="delete the state first")
    parser.add_argument(
        "--calibrate", action="store_true", help="no crawl: breadth-first on the web's graph"
    )
    parser.add_argument(
        "--standing", action="store_true", help="no crawl: the farms' ranks by other scores"
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {list(VARIANTS)}")
    web = InVitroWeb(get_profile(args.profile), args.seed)
    if args.calibrate:
        calibrate(web, args.pages[-1])
        return
    if args.standing:
        standing(web)
        return
    state = args.state or RESULTS / f"quality-{args.profile}-{args.seed}"
    if args.fresh and state.exists():
        shutil.rmtree(state)
    emit("quality", "setup", args.pages[-1], "pages", seed=args.seed, sizes=args.pages,
         profile=args.profile, variants=variants, state=str(state))  # fmt: skip
    if not args.report:
        for variant in variants:
            crawl(variant, state / variant, args.pages[-1], args.profile, args.seed)
    true_in = web.true_indegree()
    by_size: dict[int, list[dict[str, Any]]] = {size: [] for size in args.pages}
    for variant in variants:
        records, crawl_log = saved(state / variant, args.pages[-1])
        links = page_links(records, web)
        for size in args.pages:
            first = first_pages(records, size)
            if sum(1 for r in first if is_page(r)) < size:
                print(f"# {variant}: fewer than {size:,} pages crawled; not reported")
                continue
            result = figures(variant, first, web, true_in, links)
            result["size"] = size
            if variant != "bfo" and size == args.pages[-1]:
                result["star_plds_seen"] = _stat(crawl_log, "irl/star/plds")
            emit("quality", "variant", variant, "", **result)
            by_size[size].append(result)
    for size, results in by_size.items():
        if results:
            print(f"# ---- at {size:,} pages ----")
            print_tables(results)
            bars(results, size)


def bars(results: list[dict[str, Any]], size: int) -> None:
    """Issue 37's bars that apply at ``size`` pages, for the variants crawled."""
    by = {r["variant"]: r for r in results}
    star, constant, bfo = by.get("star"), by.get("constant"), by.get("bfo")
    if bfo is not None and size >= 100_000:
        emit("quality", "bar_calibration", bfo["spam_share"] >= 0.30, "met", size=size,
             bfo=bfo["spam_share"])  # fmt: skip
    if star is None:
        return
    share = star["spam_share"]
    if size >= 1_000_000:
        emit("quality", "bar_spam_below_5_percent", share < 0.05, "met", size=size, star=share)
    if constant is not None and size < 100_000:
        emit("quality", "bar_spam_vs_constant", share <= constant["spam_share"], "met",
             size=size, star=share, constant=constant["spam_share"])  # fmt: skip
    if size < 100_000:
        return
    if bfo is not None:
        emit("quality", "bar_spam_vs_bfo", share <= bfo["spam_share"] / 10, "met", size=size,
             star=share, bfo=bfo["spam_share"])  # fmt: skip
    if constant is not None:
        emit("quality", "bar_spam_vs_constant", share <= constant["spam_share"] / 2, "met",
             size=size, star=share, constant=constant["spam_share"])  # fmt: skip
        emit("quality", "bar_top10_vs_constant", star["top10_pages"]
             >= 1.3 * constant["top10_pages"], "met", size=size, star=star["top10_pages"],
             constant=constant["top10_pages"])  # fmt: skip
    emit("quality", "bar_fig7b_rises", star["fig7b_inversions"] <= 1, "met", size=size,
         inversions=star["fig7b_inversions"])  # fmt: skip
    emit("quality", "bar_spearman", star["spearman_crawled"] >= 0.5, "met", size=size,
         star=star["spearman_crawled"])  # fmt: skip


def _stat(log: str, name: str) -> int:
    found = re.findall(rf"'{re.escape(name)}': (\d+)", log)
    return int(found[-1]) if found else 0


if __name__ == "__main__":
    main()
