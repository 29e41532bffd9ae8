"""Crawl quality: what STAR does against spam farms, measured at the in-vitro server.

    python bench/quality.py                       # 100,000 pages per variant
    python bench/quality.py --pages 20000         # shorter
    python bench/quality.py --variants star,control

The issue's bars (one run, the in-vitro ``broad`` profile with spam farms and traps,
the same number of downloaded pages for every variant):

- share of page downloads on spam hosts: STAR <= 1/5 of the control's, <= 1/10 of
  breadth-first stock Scrapy's, and below 5%;
- pages crawled per PLD rise with the PLD's true in-degree: the Fig. 7(b) table (mean
  pages per PLD by in-degree bucket 1, 2-3, 4-7, ...) for every variant; STAR's
  Spearman rank correlation between in-degree and pages crawled higher than the
  control's and >= 0.6 (PLDs with in-degree >= 1);
- the 100 most-linked legitimate PLDs all reached, and STAR gives them at least 5x the
  median PLD's pages.

Variants
--------
``star``     ``scrapy crawl broad`` with the project's settings (the add-on, STAR on)
             and :data:`POLITENESS`; ``IRL_STAR_TOP_DOMAINS`` = ``--top`` (the paper
             ranked 0.03% of the PLDs it saw; the issue asks for about 0.1% of the PLDs
             a benchmark sees: the figures print the PLDs STAR saw and the share).
``control``  the same with ``IRL_STAR_ENABLED=False``: every PLD has the default budget,
             same scheduler, same politeness; it isolates STAR's effect from BEAST's
             budgets and politeness alone.
``bfo``      stock Scrapy breadth-first (``ADDONS={}``, DEPTH_PRIORITY=1, FIFO queues),
             the same spider, without a JOBDIR (in RAM: with one, Scrapy keeps a disk
             queue per host and stopped at 21,700 pages on "Too many open files").

Each variant crawls a fresh in-vitro web (seed 0) and is stopped by one SIGINT once
the server has served ``--pages`` page requests (robots.txt not counted; in-flight
requests end, so a few more are counted). All figures come from the server's request
log, whose ground truth (the ``spam`` flag, each host's PLD) is the web's own; a PLD's
true in-degree is :meth:`InVitroWeb.true_indegree` (distinct PLDs linking to it in the
whole web).

The population of the Fig. 7(b) table and of the rank correlation is every PLD of
true in-degree >= 1 the variant *discovered*: a page it downloaded is on the PLD or
links to it (the links the broad spider follows, recomputed from the web), with the
number of its pages downloaded (possibly 0), as the paper's figure averages over the
PLDs IRLbot knew. The correlation over the PLDs with at least one page downloaded is
printed too (``spearman_crawled``). "Top 100" are the 100 legitimate PLDs of highest
true in-degree whose home host resolves (:func:`leaders`); "reached" means at least one
request (robots.txt included: a PLD whose robots.txt forbids everything is reached, and
rightly left uncrawled); they are compared by their median pages with the population's
median.

The server logs are kept in ``bench/results/quality-<variant>.jsonl``;
``--from-logs`` recomputes the figures from them without crawling, and ``--first N``
with it takes each log up to its N-th page request (variants stopped at different
points, compared at the same number of pages).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from common import RESULTS, crawl_broad_web, emit

from irlscrapy import defaults
from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.profiles import BROAD
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import CrawlPolicy, followed_links

PAGES = 100_000
SEED = 0
TOP_DOMAINS = 100
#: B0, IRL_BEAST_BUDGET's default: every PLD's budget in ``control``, and in ``star``
#: every PLD's outside its top ranks.
DEFAULT_BUDGET = int(defaults.BY_NAME["IRL_BEAST_BUDGET"].default)
#: bench/crawl.py's irl politeness: budgets scale the delays down to the floors.
POLITENESS = {
    "IRL_HOST_DELAY": 4,
    "IRL_HOST_DELAY_MIN": 1,
    "IRL_IP_DELAY": 0.5,
    "IRL_IP_DELAY_MIN": 0.05,
}
VARIANTS = {
    "star": {},
    "control": {"IRL_STAR_ENABLED": "False"},
    "bfo": {
        "ADDONS": "{}",
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    },
}
LEADERS = 100


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


def discovered(records: list[dict[str, Any]], web: InVitroWeb) -> set[str]:
    """PLDs of the pages downloaded and of the links they carry (see the docstring)."""
    found: set[str] = set()
    for r in records:
        if r["path"] in ROBOTS_PATHS or r["status"] != 200 or not r["pld"]:
            continue
        found.add(r["pld"])
        url = request_url(r)
        assert url is not None  # a refused connection has no status 200
        reply = web.respond(r["host"], r["path"], scheme=r.get("scheme", "http"))
        for link in followed_links(url, reply, CrawlPolicy()):
            found.add(pld(url_host(link)))
    return found


def leaders(web: InVitroWeb, true_in: np.ndarray) -> list[str]:
    """The :data:`LEADERS` legitimate PLDs of highest true in-degree whose home host
    resolves (links into a PLD go to its home host; a PLD whose home host has no DNS
    answer cannot be reached by any crawler)."""
    legit = np.flatnonzero(true_in[: BROAD.legit_plds] >= 1)
    names = []
    for pid in legit[np.argsort(-true_in[legit], kind="stable")].tolist():
        home = web.host(web.host_name(pid, 0))
        if home is not None and home.dns in ("ok", "slow"):
            names.append(web.pld_name(pid))
            if len(names) == LEADERS:
                break
    return names


def figures(
    variant: str, records: list[dict[str, Any]], web: InVitroWeb, true_in: np.ndarray
) -> dict[str, Any]:
    pages = [r for r in records if r["path"] not in ROBOTS_PATHS and r["kind"] != "dns-error"]
    spam = sum(1 for r in pages if r["spam"])
    # Budgets (the one thing STAR changes) can only hold back a PLD that has more URLs
    # than its budget: how many spam PLDs got more pages than B0 shows whether they did.
    spam_per_pld = Counter(r["pld"] for r in pages if r["spam"])
    per_pld = Counter(r["pld"] for r in pages)
    ids = {name: web.pld_id(name) for name in discovered(records, web)}
    population = sorted(
        (name for name, pid in ids.items() if pid is not None and true_in[pid] >= 1),
        key=lambda name: ids[name] or 0,
    )
    degrees = np.array([true_in[ids[name]] for name in population])
    crawled = np.array([per_pld.get(name, 0) for name in population])
    table: dict[str, list[int]] = {}
    for degree, count in zip(degrees.tolist(), crawled.tolist(), strict=True):
        table.setdefault(bucket(degree), []).append(count)
    leader_names = leaders(web, true_in)
    contacted = {r["pld"] for r in records}
    leader_pages = [per_pld.get(name, 0) for name in leader_names]
    some = crawled > 0
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
        "fig7b": {k: (len(v), sum(v) / len(v)) for k, v in sorted(table.items(), key=_low)},
        "leaders_reached": sum(1 for name in leader_names if name in contacted),
        "leaders_not_reached": [n for n in leader_names if n not in contacted],
        "leaders_median_pages": float(np.median(leader_pages)),
        "median_pages": float(np.median(crawled)) if len(crawled) else 0.0,
    }


def _low(item: tuple[str, list[int]]) -> int:
    return int(item[0].split("-")[0])


def run(variant: str, pages: int, top: int) -> tuple[list[dict[str, Any]], str]:
    """Crawl; keep the server log and the crawl's log in bench/results."""
    settings: dict[str, Any] = {**POLITENESS, **VARIANTS[variant]}
    if variant == "star":
        settings["IRL_STAR_TOP_DOMAINS"] = top
    with tempfile.TemporaryDirectory(prefix=f"irlscrapy-bench-quality-{variant}-") as tmp:
        records, crawl_log = crawl_broad_web(
            Path(tmp), pages, settings, SEED, jobdir=variant != "bfo"
        )
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / f"quality-{variant}.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    (RESULTS / f"quality-{variant}.log").write_text(crawl_log)
    return records, crawl_log


def first_pages(records: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The requests that started up to the ``n``-th page request (robots.txt included),
    so that crawls stopped at different points compare at the same number of pages."""
    ordered = sorted(records, key=lambda r: r["t_start"])
    pages = 0
    for i, r in enumerate(ordered):
        if r["path"] not in ROBOTS_PATHS and r["kind"] != "dns-error":
            pages += 1
            if pages == n:
                return ordered[: i + 1]
    return ordered


def saved(variant: str) -> tuple[list[dict[str, Any]], str]:
    records = RESULTS / f"quality-{variant}.jsonl"
    if not records.exists():
        sys.exit(f"no saved log for {variant}: {records}")
    lines = records.read_text().splitlines()
    return [json.loads(line) for line in lines], (RESULTS / f"quality-{variant}.log").read_text()


def print_table(results: list[dict[str, Any]]) -> None:
    buckets = sorted({b for r in results for b in r["fig7b"]}, key=lambda b: int(b.split("-")[0]))
    head = "".join(f"{r['variant']:>22}" for r in results)
    print(f"# Fig. 7(b): mean pages per PLD (PLDs) by true in-degree\n# {'in-degree':>12}{head}")
    for b in buckets:
        cells = ""
        for r in results:
            n, mean = r["fig7b"].get(b, (0, float("nan")))
            cells += f"{mean:>14.2f} ({n:>5})"
        print(f"# {b:>12}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--top", type=int, default=TOP_DOMAINS, help="IRL_STAR_TOP_DOMAINS")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--from-logs", action="store_true", help="no crawl: the saved logs")
    parser.add_argument(
        "--first", type=int, default=0, help="with --from-logs: only each log's first N pages"
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {list(VARIANTS)}")
    web = InVitroWeb(BROAD, SEED)
    true_in = web.true_indegree()
    emit("quality", "setup", args.pages, "pages", top_domains=args.top, seed=SEED,
         politeness=POLITENESS, variants=variants)  # fmt: skip
    results = []
    for variant in variants:
        if args.from_logs:
            records, crawl_log = saved(variant)
            if args.first:
                records = first_pages(records, args.first)
        else:
            records, crawl_log = run(variant, args.pages, args.top)
        result = figures(variant, records, web, true_in)
        if variant == "star":
            result["star_plds_seen"] = _stat(crawl_log, "irl/star/plds")
            result["top_share_of_plds_seen"] = args.top / max(result["star_plds_seen"], 1)
        emit("quality", "variant", variant, "", **result)
        results.append(result)
    print_table(results)
    by = {r["variant"]: r for r in results}
    star = by.get("star")
    if star is None:
        return
    share = star["spam_share"]
    if "control" in by:
        emit("quality", "bar_spam_vs_control", share <= by["control"]["spam_share"] / 5, "met",
             star=share, control=by["control"]["spam_share"])  # fmt: skip
        emit("quality", "bar_spearman", star["spearman"] >= 0.6
             and star["spearman"] > by["control"]["spearman"], "met",
             star=star["spearman"], control=by["control"]["spearman"])  # fmt: skip
    if "bfo" in by:
        emit("quality", "bar_spam_vs_bfo", share <= by["bfo"]["spam_share"] / 10, "met",
             star=share, bfo=by["bfo"]["spam_share"])  # fmt: skip
    emit("quality", "bar_spam_below_5_percent", share < 0.05, "met", star=share)
    emit("quality", "bar_leaders", star["leaders_reached"] == LEADERS
         and star["leaders_median_pages"] >= 5 * star["median_pages"], "met",
         reached=star["leaders_reached"], leaders_median=star["leaders_median_pages"],
         median=star["median_pages"])  # fmt: skip


def _stat(log: str, name: str) -> int:
    found = re.findall(rf"'{re.escape(name)}': (\d+)", log)
    return int(found[-1]) if found else 0


if __name__ == "__main__":
    main()
