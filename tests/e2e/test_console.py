"""The status console during a real crawl of the tiny web: its controls (pause, resume,
stop, each a POST with the token) checked against the in-vitro server's request log,
and the page itself in a real headless Chromium (tests/e2e/chromium.py): it loads with
no console errors, its figures update, its links keep the token, its buttons pause and
resume the crawl. Stopped from the console, the crawl closes as on Ctrl-C, and the
report it writes loads in Chromium with every image present."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.tinyweb import assert_never_idle_with_work

from .chromium import Page, chromium
from .conftest import ROOT, read_log, tiny_crawl_args
from .test_report import dumped_stats
from .test_status_endpoint import TOKEN, free_port, get, wait_for_a_page

pytestmark = pytest.mark.e2e

#: The bar: a pause holds the crawl at zero new requests this long.
PAUSE_SECONDS = 10.0
#: After the pause, for fetches in flight to end before the quiet window starts.
SETTLE_SECONDS = 2.0


def post(url: str, token: str | None = TOKEN) -> tuple[int, dict[str, Any] | bytes]:
    request = urllib.request.Request(url, method="POST", data=b"")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@dataclass
class Crawl:
    process: subprocess.Popen[str]
    base: str
    log: Path
    report_dir: Path
    pauses: int = 0  # pauses (each resumed) the tests made
    paused_seconds: float = 0.0  # at least, in all

    def requests_since(self, moment: float) -> list[dict[str, Any]]:
        """The in-vitro server's requests that arrived after ``moment`` (time.time())."""
        return [r for r in read_log(self.log) if r["t_start"] > moment]

    def wait_for_requests_since(self, moment: float, seconds: float = 20) -> int:
        deadline = time.monotonic() + seconds
        while not (new := self.requests_since(moment)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return len(new)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A crawl of the tiny web at its own pace (a minute or more) with the console on."""
    work = tmp_path_factory.mktemp("console")
    log, report_dir = work / "requests.jsonl", work / "report"
    port = free_port()
    args = tiny_crawl_args(
        log,
        f"IRL_STATUS_PORT={port}",
        f"IRL_STATUS_TOKEN={TOKEN}",
        f"IRL_REPORT_DIR={report_dir}",
        "CLOSESPIDER_TIMEOUT=400",  # a safety net: the tests stop it sooner
    )
    process = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    crawl = Crawl(process, f"http://127.0.0.1:{port}", log, report_dir)
    try:
        wait_for_a_page(process, crawl.base)
        yield crawl
    finally:
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=120)


def test_controls_are_refused_without_the_token(crawl: Crawl) -> None:
    before = time.time()
    for token in (None, "wrong"):
        for action in ("pause", "stop"):
            assert post(f"{crawl.base}/{action}", token=token)[0] == 401
    assert get(f"{crawl.base}/pause")[0] == 404  # a GET does nothing
    assert post(f"{crawl.base}/reboot")[0] == 404
    assert crawl.wait_for_requests_since(before) > 0  # still crawling
    _, _, body = get(f"{crawl.base}/status.json")
    assert json.loads(body)["console"] == {
        "controls": True,
        "paused": False,
        "paused_seconds": 0,
        "stopping": False,
    }


def test_pause_holds_the_crawl_at_zero_new_requests_and_resume_brings_it_back(
    crawl: Crawl,
) -> None:
    assert post(f"{crawl.base}/pause") == (
        200,
        {"action": "pause", "result": "paused", "paused": True},
    )
    time.sleep(SETTLE_SECONDS)
    quiet_from = time.time()
    time.sleep(PAUSE_SECONDS)
    assert json.loads(get(f"{crawl.base}/status.json")[2])["console"]["paused"] is True
    assert post(f"{crawl.base}/pause")[1]["result"] == "already paused"
    time.sleep(0.5)  # the server's log is written as requests arrive
    assert crawl.requests_since(quiet_from) == []
    crawl.pauses += 1
    crawl.paused_seconds += SETTLE_SECONDS + PAUSE_SECONDS
    resumed_at = time.time()
    assert post(f"{crawl.base}/resume")[1] == {
        "action": "resume",
        "result": "resumed",
        "paused": False,
    }
    assert crawl.wait_for_requests_since(resumed_at, seconds=10) > 0
    # the crawl goes on: the give-up timer did not count the pause (a finite crawl
    # that took the pause for silence would park its work and close)
    time.sleep(3)
    assert crawl.process.poll() is None
    assert crawl.wait_for_requests_since(time.time() - 1, seconds=10) > 0


def test_the_console_in_chromium(crawl: Crawl, tmp_path: Path) -> None:
    with chromium(tmp_path / "profile") as page:
        for domain in ("Runtime", "Log", "Page"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url=f"{crawl.base}/?token={TOKEN}")
        assert page.wait_for(
            "document.readyState === 'complete' && !!document.getElementById('progress')"
        )
        # its links and forms keep the token
        links = page.evaluate(
            "[...document.querySelectorAll('a[href]')].map(a => a.href)"
            ".concat([...document.querySelectorAll('form')].map(f => f.action))"
        )
        assert len(links) == 5, links
        assert all(f"token={TOKEN}" in link for link in links), links
        for part in ("progress", "rate", "frontier", "hosts", "ips", "job", "settings", "figures"):
            assert page.evaluate(f"!!document.getElementById('{part}')"), part
        # its figures update (the page fetches itself every few seconds)
        first = page.evaluate("document.getElementById('progress').textContent")
        assert page.wait_for(
            f"document.getElementById('progress').textContent !== {json.dumps(first)}", 15
        )
        shot = page.call("Page.captureScreenshot", captureBeyondViewport=True)["data"]
        (tmp_path / "console.png").write_bytes(base64.b64decode(shot))  # to look at
        # the buttons pause and resume the crawl
        page.evaluate("document.getElementById('pause').click()")
        assert page.wait_for("document.getElementById('said').textContent === 'paused'")
        assert page.wait_for(
            "document.getElementById('state').textContent.startsWith('paused')", 10
        )
        assert page.evaluate(
            "['pause', 'resume'].map(id => document.getElementById(id).disabled)"
        ) == [True, False]  # the button that would do nothing is disabled
        time.sleep(SETTLE_SECONDS)
        quiet_from = time.time()
        time.sleep(3)
        assert crawl.requests_since(quiet_from) == []
        crawl.pauses += 1
        crawl.paused_seconds += SETTLE_SECONDS + 3
        resumed_at = time.time()
        page.evaluate("document.getElementById('resume').click()")
        assert page.wait_for("document.getElementById('said').textContent === 'resumed'")
        assert crawl.wait_for_requests_since(resumed_at, seconds=10) > 0
        assert _console_errors(page) == []


def test_stop_closes_the_crawl_as_ctrl_c_and_the_report_loads(crawl: Crawl, tmp_path: Path) -> None:
    assert post(f"{crawl.base}/stop")[1] == {
        "action": "stop",
        "result": "stopping",
        "paused": False,
    }
    _, stderr = crawl.process.communicate(timeout=120)
    assert crawl.process.returncode == 0, stderr[-3000:]
    assert stderr.count("console: crawl paused by 127.0.0.1") == crawl.pauses
    assert stderr.count("console: crawl resumed by 127.0.0.1 after") == crawl.pauses
    assert "console: crawl stopped by 127.0.0.1; closing gracefully" in stderr
    stats = dumped_stats(stderr)
    assert stats["finish_reason"] == "shutdown"
    assert stats.get("irl/console/paused", 0) == stats.get("irl/console/resumed", 0)
    assert stats.get("irl/console/paused", 0) == crawl.pauses
    assert stats["irl/console/stopped"] == 1
    assert stats.get("irl/console/paused_seconds", 0) >= crawl.paused_seconds
    assert_never_idle_with_work(stderr)  # a paused crawl is not idle with work
    report = crawl.report_dir / "report.html"
    assert "irl/console/stopped" in report.read_text()  # the report's stats table
    with chromium(tmp_path / "profile") as page:
        page.call("Runtime.enable")
        page.call("Log.enable")
        page.call("Page.navigate", url=report.as_uri())
        assert page.wait_for("document.readyState === 'complete'")
        images = page.evaluate(
            "[...document.images]"
            ".map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])"
        )
        assert len(images) >= 4, images
        assert [src for src, shown in images if not shown] == []
        assert _console_errors(page) == []


def _console_errors(page: Page) -> list[Any]:
    """Exceptions, console.error calls and error log entries the page has had."""
    page.evaluate("1")  # collect the events that arrived since the last call
    return [
        (method, params)
        for method, params in page.events
        if method == "Runtime.exceptionThrown"
        or (method == "Runtime.consoleAPICalled" and params.get("type") == "error")
        or (method == "Log.entryAdded" and params["entry"].get("level") == "error")
    ]
