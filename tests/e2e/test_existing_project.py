"""An existing Scrapy project gains the IRL components by one line in its settings.py
and yields the same multiset of items.

``existing_project/`` is an ordinary project (scrapy.cfg, settings.py, item pipelines,
a spider yielding Requests with meta, cb_kwargs, an errback and priorities). It is
copied twice to a temporary directory; one copy gets the README's block appended to its
settings.py. Both crawl the same EchoWeb (a page tree with robots.txt, an off-site link,
a 404 and a disallowed path) with ``scrapy crawl catalog -O items.jsonl``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .contract_spiders import EchoWeb

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).with_name("existing_project")
#: What the README tells a project to add (politeness shortened for a test: EchoWeb
#: answers in microseconds, and it is on 127.0.0.1, which the address guard refuses
#: unless allowed).
ADDON_BLOCK = """
# irlscrapy: the IRL scheduler, DRUM dupefilter, STAR and politeness, in one line
ADDONS = {"irlscrapy.Addon": 0}
JOBDIR = "crawls/catalog"
IRL_HOST_DELAY = 0.05
IRL_HOST_DELAY_MIN = 0.05
IRL_IP_DELAY = 0.01
IRL_IP_DELAY_MIN = 0.01
IRL_ALLOW_PRIVATE_ADDRESSES = "127.0.0.0/8"
"""
CRAWL_TIMEOUT = 120


def run_spider(
    tmp: Path, name: str, extra_settings: str, spider: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl SPIDER -a ARG ... -O items.jsonl`` in a copy of the project, with
    ``extra_settings`` appended to its settings.py."""
    project = tmp / name
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    if extra_settings:
        with open(project / "shop" / "settings.py", "a", encoding="utf-8") as settings:
            settings.write(extra_settings)
    command = [sys.executable, "-m", "scrapy", "crawl", spider, "-O", "items.jsonl"]
    for arg in args:
        command += ["-a", arg]
    return subprocess.run(
        command, cwd=project, capture_output=True, text=True, timeout=CRAWL_TIMEOUT
    )


def items_of(tmp: Path, name: str) -> Counter[str]:
    lines = (tmp / name / "items.jsonl").read_text().splitlines()
    return Counter(json.dumps(json.loads(line), sort_keys=True) for line in lines)


def crawl(tmp: Path, name: str, root: str, extra_settings: str) -> tuple[Counter[str], str]:
    proc = run_spider(tmp, name, extra_settings, "catalog", f"root={root}")
    assert proc.returncode == 0, (name, proc.stderr[-4000:])
    return items_of(tmp, name), proc.stderr


def test_the_addon_yields_the_same_items_as_stock_scrapy(tmp_path: Path) -> None:
    with EchoWeb() as stock_web, EchoWeb() as irl_web, ThreadPoolExecutor(2) as pool:
        stock_run = pool.submit(crawl, tmp_path, "stock", stock_web.start_url, "")
        irl_run = pool.submit(crawl, tmp_path, "irl", irl_web.start_url, ADDON_BLOCK)
        stock, _ = stock_run.result()
        irl, irl_log = irl_run.result()
    assert "irlscrapy.scheduler.irl.IRLScheduler" in irl_log  # the add-on took effect
    assert (tmp_path / "irl" / "crawls" / "catalog" / "urlseen").is_dir()
    kinds = Counter(json.loads(item).get("error", "page") for item in stock.elements())
    # what the fixture exercises: pages, a 404 (HttpError), robots.txt refusals
    assert kinds["page"] >= 10 and kinds["HttpError"] == 1 and kinds["IgnoreRequest"] >= 1
    assert irl == stock, {"only stock": stock - irl, "only irl": irl - stock}


def schemes_items(
    tmp: Path, extra_settings: str
) -> tuple[list[dict[str, Any]], Counter[str], dict[str, str]]:
    """The schemes spider's items with the add-on (as dicts), the multiset of its items
    minus stock Scrapy's and stock's minus its (both empty when they agree; the servers'
    origins are written WEB), and the logs of both runs."""
    page = tmp / "page.html"
    page.write_text("<html><title>on disk</title></html>")
    with EchoWeb() as stock_web, EchoWeb() as irl_web, ThreadPoolExecutor(2) as pool:
        runs = {
            name: pool.submit(
                run_spider,
                tmp,
                name,
                block + extra_settings,
                "schemes",
                f"root={web.start_url}",
                f"page_file={page}",
            )
            for name, block, web in (("stock", "", stock_web), ("irl", ADDON_BLOCK, irl_web))
        }
        procs = {name: run.result() for name, run in runs.items()}
        origins = {
            name: web.start_url.split("/t/")[0]
            for name, web in (("stock", stock_web), ("irl", irl_web))
        }
    for name, proc in procs.items():
        assert proc.returncode == 0, (name, proc.stderr[-4000:])
    stock, irl = (
        Counter(item.replace(origins[name], "WEB") for item in items_of(tmp, name).elements())
        for name in ("stock", "irl")
    )
    assert "IRLScheduler" in procs["irl"].stderr
    logs = {name: proc.stderr for name, proc in procs.items()}
    return [json.loads(item) for item in irl.elements()], (irl - stock) + (stock - irl), logs


def test_requests_of_other_schemes_arrive_as_with_stock_scrapy(tmp_path: Path) -> None:
    """data: and file: start URLs reach their callbacks (no DNS, robots.txt or host
    politeness for them), a duplicate data: URL is filtered, an unknown scheme reaches
    its errback as NotSupported, and a page's download_slot is its host, as in stock. With
    a JOBDIR and SCHEDULER_DEBUG, the request no disk queue can store is counted and
    logged once, as stock Scrapy does."""
    jobdir = 'JOBDIR = "crawls/schemes"\nSCHEDULER_DEBUG = True\n'
    seen, differ, logs = schemes_items(tmp_path, jobdir)
    assert {"url": "foo://bar/", "error": "NotSupported", "path_length": 0} in seen
    assert sum(item.get("body") == "hello" for item in seen) == 1
    assert any(item.get("body", "").startswith("<html><title>on disk") for item in seen)
    assert any(item.get("download_slot") == "localhost" for item in seen)
    assert not differ, differ
    for name, log in logs.items():
        assert "'scheduler/unserializable': 1," in log, (name, log[-3000:])
        assert log.count("Unable to serialize request: <GET data:,kept-in-RAM>") == 1, name


def test_scrapys_base_dupefilter_turns_dedup_off(tmp_path: Path) -> None:
    """DUPEFILTER_CLASS = BaseDupeFilter: every request is new, as in stock Scrapy (the
    duplicate data: URL arrives twice, and so does the root page its first link names)."""
    no_dedup = 'DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"\nDEPTH_LIMIT = 1\n'
    seen, differ, _ = schemes_items(tmp_path, no_dedup)
    assert sum(item.get("body") == "hello" for item in seen) == 2
    assert not differ, differ


def test_download_slots_of_the_project_on_one_host_run_side_by_side(tmp_path: Path) -> None:
    """Requests of one host in two DOWNLOAD_SLOTS of the project's, one slow and one
    fast: the fast slot's chain is not held behind the slow slot's delay, with the
    add-on as in stock Scrapy (it took 3 x the slow delay while each request held the
    host through its slot's delay)."""
    with EchoWeb() as web:
        proc = run_spider(tmp_path, "irl", ADDON_BLOCK, "slots", f"root={web.start_url}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    items = [json.loads(item) for item in items_of(tmp_path, "irl").elements()]
    at = {(item["slot"], item["n"]): item["at"] for item in items}
    assert len(at) == 8, sorted(at)
    fast = at["fast", 3] - at["fast", 0]
    slow = at["slow", 3] - at["slow", 0]
    assert slow >= 3 * 1.5 - 0.1, (slow, fast)  # the slow slot's own delay holds
    assert fast < 1.5, (slow, fast)  # three fast fetches, no slow delay between them


def test_a_close_by_pagecount_logs_no_error(tmp_path: Path) -> None:
    """CLOSESPIDER_PAGECOUNT stops the crawl while URLseen may be merging: the close
    neither logs an ERROR nor closes the spider a second time."""
    with EchoWeb() as web:
        proc = run_spider(
            tmp_path,
            "irl",
            ADDON_BLOCK + "CLOSESPIDER_PAGECOUNT = 3\n",
            "catalog",
            f"root={web.start_url}",
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "'finish_reason': 'closespider_pagecount'" in proc.stderr
    assert "] ERROR:" not in proc.stderr, proc.stderr[-4000:]
    assert "log_count/ERROR" not in proc.stderr


def test_reactorless_mode_is_refused_at_start(tmp_path: Path) -> None:
    proc = run_spider(
        tmp_path, "irl", ADDON_BLOCK + "TWISTED_REACTOR_ENABLED = False\n", "catalog", "root="
    )
    assert proc.returncode != 0
    assert "irlscrapy needs a Twisted reactor" in proc.stderr
