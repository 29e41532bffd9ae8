"""The in-vitro DNS server, queried through a real twisted.names client over UDP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb

from .conftest import SEED

CLIENT = Path(__file__).with_name("dns_client.py")


def query(info: dict[str, Any], *names: str) -> dict[str, dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, str(CLIENT), info["dns"], *names],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


def host_with_dns(kind: str) -> str:
    web = InVitroWeb(TINY, SEED)
    for pid in range(web.total_plds):
        for k in range(web.hosts_in_pld(pid) or 3):
            host = web.host(web.host_name(pid, k))
            if host and host.dns == kind:
                return host.name
    raise AssertionError(f"no {kind} host in tiny")


def test_a_queries_answer_the_modelled_loopback_address(invitro: dict[str, Any]) -> None:
    web = InVitroWeb(TINY, SEED)
    names = [web.host_name(pid, 0) for pid in range(10)]
    names = [n for n in names if web.host(n).dns in ("ok", "slow")]  # type: ignore[union-attr]
    results = query(invitro, *names)
    for name in names:
        assert results[name]["ips"] == [web.host(name).ip]  # type: ignore[union-attr]
        assert results[name]["ips"][0].startswith("127.")
        assert results[name]["ttl"] == TINY.dns_ttl


def test_failures_and_delays_are_as_modelled(invitro: dict[str, Any]) -> None:
    nx, servfail = host_with_dns("nxdomain"), host_with_dns("servfail")
    timeout, slow = host_with_dns("timeout"), host_with_dns("slow")
    results = query(invitro, nx, "not.in.the.web.example", servfail, timeout, slow)
    assert results[nx]["error"] == "NXDOMAIN"
    assert results["not.in.the.web.example"]["error"] == "NXDOMAIN"
    assert results[servfail]["error"] == "SERVFAIL"
    assert results[timeout]["error"] == "timeout"
    assert results[slow]["error"] is None
    assert results[slow]["seconds"] >= TINY.dns_slow_delay * 0.95


def test_aaaa_queries_get_no_data(invitro: dict[str, Any]) -> None:
    name = InVitroWeb(TINY, SEED).seeds()[0].split("/")[2]
    results = query(invitro, f"AAAA:{name}")
    assert results[f"AAAA:{name}"] == {**results[f"AAAA:{name}"], "error": None, "records": 0}
