"""One page, however its seed spells its host, is fetched once: a crawl of the tiny web
seeded with one URL in five spellings (upper case, a trailing dot, the http default
port) fetches it once, and the links it leads to are canonical.

The tiny web's names resolve through its own DNS server (the crawl's IRL_DNS_SERVERS),
to loopback addresses, and its pages are fetched through its loopback proxy: nothing
leaves the machine, and no real public name is looked up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from irlscrapy.domains import canonical_authority
from irlscrapy.invitro.process import InVitroProcess

from .conftest import QUICK_IRL, ROOT, SEED, downloads, read_log

pytestmark = pytest.mark.e2e

#: The spellings of the tiny web's first seed, http://www.w0.com/, a crawl is seeded with.
SPELLINGS = (
    "http://WWW.W0.COM./",
    "http://www.w0.com./",
    "http://www.w0.com:80/",
    "http://Www.W0.Com.:80/",
    "http://www.w0.com/",
)


def test_a_seed_in_five_spellings_is_fetched_once_and_its_links_are_canonical(
    tmp_path: Path,
) -> None:
    log = tmp_path / "requests.jsonl"
    with InVitroProcess("tiny", SEED, log=log) as web:
        info = web.info
        assert info["seeds"][0] == SPELLINGS[-1]
        settings = [*(f"{k}={v}" for k, v in info["settings"].items()), *QUICK_IRL]
        settings += ["CLOSESPIDER_PAGECOUNT=40", "TELNETCONSOLE_ENABLED=0", "IRL_REPORT_DIR="]
        args = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "broad",
            "-a",
            "seeds=" + ",".join(SPELLINGS),
        ]
        for setting in settings:
            args += ["-s", setting]
        result = subprocess.run(
            args,
            cwd=ROOT,
            env={**os.environ, **info["env"]},
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'finish_reason': 'closespider_pagecount'" in result.stderr, result.stderr[-3000:]
    # The server logs a request's host lower-cased and without its port, the dot kept.
    roots = [r for r in read_log(log) if r["host"].rstrip(".") == "www.w0.com" and r["path"] == "/"]
    assert len(roots) == 1, roots
    assert roots[0]["host"] == "www.w0.com"
    fetched = downloads(log)
    assert len(fetched) > 5, fetched
    assert all(canonical_authority(url) == url for url in fetched), fetched
    # Only the four seeds were respelt: every link of the crawled pages was found
    # canonical, resolved against a canonical page URL (http://www.w0.com:80/ would
    # have led to http://www.w0.com:80/... links, each respelt in turn).
    respelt = re.findall(r"'irl/scheduler/respelt_urls': (\d+)", result.stderr)
    assert respelt == ["4"], respelt
