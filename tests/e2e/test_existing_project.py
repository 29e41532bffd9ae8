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


def crawl(tmp: Path, name: str, root: str, extra_settings: str) -> tuple[Counter[str], str]:
    project = tmp / name
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    if extra_settings:
        with open(project / "shop" / "settings.py", "a", encoding="utf-8") as settings:
            settings.write(extra_settings)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "catalog",
            "-a",
            f"root={root}",
            "-O",
            "items.jsonl",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
    )
    assert proc.returncode == 0, (name, proc.stderr[-4000:])
    lines = (project / "items.jsonl").read_text().splitlines()
    items = [json.dumps(json.loads(line), sort_keys=True) for line in lines]
    return Counter(items), proc.stderr


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
