"""The address guard on a real crawl: hosts outside the allowed networks are never
contacted, also when a redirect points at them.

The tiny web's hosts live on 127.0.1.0 upwards, all of which the default guard refuses
(the in-vitro preset allows 127.0.0.0/8; every other crawl test shows it still
crawls). Here the crawl allows only 127.0.1.0/29: the hosts on the first eight IPs are
crawled; every other host is refused at DNS time, with its URLs, and the server never
sees a request for it.
"""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import request_url
from irlscrapy.oracle.groundtruth import split_url
from irlscrapy.spiders.extract import absolute_url

from .conftest import QUICK_IRL, SEED, crawl_tiny, read_log, side_by_side

ALLOWED = ipaddress.ip_network("127.0.1.0/29")


@side_by_side(seconds=25)
def crawl(work: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The crawl, side by side with the others (conftest.side_by_side)."""
    log = work / "requests.jsonl"
    result = crawl_tiny(log, *QUICK_IRL, f"IRL_ALLOW_PRIVATE_ADDRESSES={ALLOWED}")
    return result, log


def test_no_request_reaches_a_refused_address(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, log = crawl
    assert result.returncode == 0, result.stderr[-3000:]
    records = [r for r in read_log(log) if r["kind"] != "dns-error"]
    assert len(records) > 50, "the allowed hosts are crawled"
    outside = [r for r in records if ipaddress.ip_address(r["ip"]) not in ALLOWED]
    assert not outside, outside[:5]
    assert "'irl/guard/refused_lookups'" in result.stderr
    assert "address guard: " in result.stderr  # one log line per refused host


def test_a_redirect_to_a_refused_address_is_not_followed(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    web = InVitroWeb(TINY, SEED)
    refused_targets = []
    for r in read_log(crawl[1]):
        url = request_url(r)
        if r["status"] not in (301, 302, 303, 307, 308) or url is None:
            continue
        location = web.respond(r["host"], r["path"], scheme=r["scheme"]).location
        target = absolute_url(url, location or "")
        if target is None:
            continue
        host = web.host(split_url(target)[0])
        if host is not None and ipaddress.ip_address(host.ip) not in ALLOWED:
            refused_targets.append(target)
    assert refused_targets, "the crawl met no redirect to a refused address"
    requested = {request_url(r) for r in read_log(crawl[1])}
    assert not requested & set(refused_targets)
