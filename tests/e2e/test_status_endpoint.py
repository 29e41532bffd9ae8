"""The status endpoint during a real crawl of the tiny web: JSON, Prometheus text (read
back with prometheus-client's own parser), the HTML page and its links, the token,
loopback only; a port in use refuses the crawl in one line; a crawl closes without
warnings."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families
from scrapy import Spider
from scrapy.utils.test import get_crawler

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.report.figures import COUNTERS, GAUGES
from irlscrapy.report.status import StatusServer

from .conftest import QUICK_IRL, ROOT, crawl_tiny, read_log, tiny_crawl_args

pytestmark = pytest.mark.e2e

TOKEN = "s3cret-token"
WAIT_SECONDS = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_a_page(process: subprocess.Popen[str], base: str) -> None:
    """Wait until the endpoint at ``base`` of the crawl ``process`` counts a page; fail
    with the crawl's log if it ends first, or after WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            status, _, body = get(f"{base}/status.json")
            if status == 200 and json.loads(body)["figures"]["pages"] > 0:
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            _, err = process.communicate(timeout=30)
            pytest.fail(f"the endpoint never showed a page; crawl log:\n{err[-3000:]}")
        time.sleep(0.2)


def get(url: str, token: str | None = TOKEN) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A tiny crawl with the endpoint on; yields (process, base URL) while it runs."""
    log = tmp_path_factory.mktemp("status") / "requests.jsonl"
    port = free_port()
    args = tiny_crawl_args(log, *QUICK_IRL, f"IRL_STATUS_PORT={port}", f"IRL_STATUS_TOKEN={TOKEN}")
    process = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_a_page(process, base)
        yield process, base
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_json_has_every_figure_of_the_irl_crawl(crawl: Any) -> None:
    _, base = crawl
    status, content_type, body = get(f"{base}/status.json")
    assert status == 200 and content_type == "application/json"
    answer = json.loads(body)
    assert answer["spider"] == "broad"
    figures = answer["figures"]
    assert set(figures) == set(COUNTERS) | set(GAUGES)
    assert figures["pages"] > 0 and figures["rss_bytes"] > 10 * 2**20
    assert 1 <= figures["fetch_cap"] <= 64
    assert figures["workbench_ips"] >= figures["ips_due"] >= 0
    assert isinstance(answer["pages_per_second_history"], list)


def test_metrics_parse_as_prometheus_text(crawl: Any) -> None:
    _, base = crawl
    status, content_type, body = get(f"{base}/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert families["irlscrapy_pages"].type == "counter"
    assert families["irlscrapy_workbench_urls"].type == "gauge"
    pages = [s for s in families["irlscrapy_pages"].samples if s.name == "irlscrapy_pages_total"]
    assert pages and pages[0].value > 0
    assert {f"irlscrapy_{name}" for name in GAUGES} <= set(families)


def test_html_page_refreshes_itself_and_shows_the_figures(crawl: Any) -> None:
    _, base = crawl
    status, content_type, body = get(f"{base}/")
    page = body.decode()
    assert status == 200 and content_type.startswith("text/html")
    assert 'http-equiv="refresh"' in page and "workbench_hosts" in page
    assert get(f"{base}/nothing")[0] == 404


def test_the_pages_links_keep_the_token_a_browser_opened_it_with(crawl: Any) -> None:
    _, base = crawl
    status, _, body = get(f"{base}/?token={TOKEN}", token=None)
    assert status == 200
    links = re.findall(r'<a href="([^"]+)"', body.decode())
    assert len(links) == 2, links
    for link in links:
        url = urllib.parse.urljoin(f"{base}/?token={TOKEN}", link.replace("&amp;", "&"))
        status, content_type, _ = get(url, token=None)  # as a browser follows it
        assert status == 200, (link, status)
        assert content_type.startswith(("application/json", "text/plain")), content_type
    # a client that sends the header gets no token written into the page
    assert TOKEN not in get(f"{base}/")[2].decode()


def test_the_token_is_required(crawl: Any) -> None:
    _, base = crawl
    assert get(f"{base}/status.json", token=None)[0] == 401
    assert get(f"{base}/status.json", token="wrong")[0] == 401
    assert get(f"{base}/metrics?token={TOKEN}", token=None)[0] == 200


def test_it_listens_on_loopback_only(crawl: Any) -> None:
    process, base = crawl
    port = int(base.rsplit(":", 1)[1])
    listening = [
        c.laddr
        for c in psutil.Process(process.pid).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
    ]
    assert [addr.ip for addr in listening] == ["127.0.0.1"]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::", "example.com"])
def test_non_loopback_hosts_are_refused(host: str) -> None:
    crawler = get_crawler(Spider, {"IRL_STATUS_PORT": 8999, "IRL_STATUS_HOST": host})
    with pytest.raises(ConfigurationError, match="loopback"):
        StatusServer.from_crawler(crawler)


def test_the_port_must_be_a_port() -> None:
    with pytest.raises(ConfigurationError, match="not a TCP port"):
        StatusServer.from_crawler(get_crawler(Spider, {"IRL_STATUS_PORT": 70000}))


def test_a_port_in_use_refuses_the_crawl_in_one_line(tmp_path: Any) -> None:
    """Another process on the port: exit 1, one ERROR line naming the setting, nothing
    fetched (the port is bound before the crawl opens anything)."""
    log = tmp_path / "requests.jsonl"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = crawl_tiny(log, *QUICK_IRL, f"IRL_STATUS_PORT={port}")
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, errors
    assert f"IRL_STATUS_PORT={port}" in errors[0] and "Address already in use" in errors[0]
    assert read_log(log) == []


def test_a_crawl_with_the_endpoint_closes_without_a_warning(tmp_path: Any) -> None:
    result = crawl_tiny(
        tmp_path / "requests.jsonl",
        *QUICK_IRL,
        f"IRL_STATUS_PORT={free_port()}",
        "CLOSESPIDER_PAGECOUNT=20",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "status endpoint: http://127.0.0.1:" in result.stderr
    assert "'finish_reason': 'closespider_pagecount'" in result.stderr
    for alarm in ("Warning", "Traceback"):
        assert alarm not in result.stderr, [
            line for line in result.stderr.splitlines() if alarm in line
        ]
