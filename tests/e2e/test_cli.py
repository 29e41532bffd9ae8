"""The irlscrapy command line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.serve import TEST_WEB_SETTINGS
from irlscrapy.invitro.web import InVitroWeb


def irlscrapy(*args: str) -> list[str]:
    return [sys.executable, "-m", "irlscrapy", *args]


def test_serve_prints_one_json_line_serves_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with subprocess.Popen(
        irlscrapy("invitro", "serve", "--profile", "tiny", "--seed", "4", "--log", str(log)),
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            info = json.loads(proc.stdout.readline())
            assert info["proxy"].startswith("http://127.0.0.1:")
            assert info["dns"].startswith("127.0.0.1:")
            assert info["seeds"] == InVitroWeb(TINY, 4).seeds()
            assert info["env"] == {"http_proxy": info["proxy"], "https_proxy": info["proxy"]}
            assert info["settings"] == {
                "IRL_DNS_SERVERS": info["dns"],
                "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
                **TEST_WEB_SETTINGS["tiny"],
            }
            # A test web's own settings shorten timeouts, back-off, retirement: no more.
            assert set(TEST_WEB_SETTINGS["tiny"]) <= {
                "DOWNLOAD_TIMEOUT",
                "IRL_HEALTH_BACKOFF_BASE",
                "IRL_HEALTH_BACKOFF_MAX",
                "IRL_HEALTH_RETIRE_DELAY",
                "IRL_CRAWL_GIVE_UP_AFTER",
            }
            proxy = urllib.request.ProxyHandler({"http": info["proxy"]})
            with urllib.request.build_opener(proxy).open(info["seeds"][0], timeout=10) as resp:
                assert resp.status == 200
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
        assert proc.stdout.read() == ""  # nothing after the JSON line
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["path"] == "/" and record["status"] == 200  # flushed on SIGTERM


def test_urls_lists_html_pages_breadth_first() -> None:
    out = subprocess.run(
        irlscrapy("invitro", "urls", "--profile", "tiny", "--count", "25"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(out) == 25 and len(set(out)) == 25
    assert out[:3] == InVitroWeb(TINY, 0).seeds()


def test_bad_arguments_exit_2_with_a_message() -> None:
    result = subprocess.run(
        irlscrapy("invitro", "serve", "--profile", "nope"), capture_output=True, text=True
    )
    assert result.returncode == 2 and "invalid choice: 'nope'" in result.stderr
