"""irlscrapy's adapter to Scrapy's private parts (irlscrapy/runtime/internals.py) still fits.

These fail loudly when a Scrapy upgrade moves what the adapter touches. Each check runs
in a child process: building an engine or a download handler installs a reactor.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from twisted.internet import task

from irlscrapy.runtime.internals import EngineWaker

#: A child's lines before it builds the HTTP download handler (which needs a reactor).
HANDLER_PROLOGUE = (
    "from scrapy.utils.reactor import install_reactor\n"
    "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
    "from scrapy import Spider\n"
    "from scrapy.utils.test import get_crawler\n"
    "from irlscrapy.runtime.internals import PoliteHTTPDownloadHandler\n"
)


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_the_http_handler_turns_twisteds_silent_resend_off() -> None:
    out = _run(
        HANDLER_PROLOGUE + "h = PoliteHTTPDownloadHandler(get_crawler(Spider))\n"
        "print(h._pool.retryAutomatically)\n"
    )
    assert out == "False"


def test_the_engine_still_has_a_slot_with_a_nextcall_and_a_closing_flag() -> None:
    out = _run(
        "from scrapy.utils.reactor import install_reactor\n"
        "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
        "from scrapy.core.engine import ExecutionEngine, _Slot\n"
        "from scrapy.utils.test import get_crawler\n"
        "from scrapy import Spider\n"
        "import inspect\n"
        "engine = ExecutionEngine(get_crawler(Spider), lambda _: None)\n"
        "print(hasattr(engine, '_slot'), 'nextcall' in inspect.signature(_Slot).parameters)\n"
        "print(engine.running, engine.paused, 'self.closing' in inspect.getsource(_Slot))\n"
    )
    assert out == "True True\nFalse False True"


def test_the_engine_slot_holds_a_request_from_hand_out_to_its_removal() -> None:
    out = _run(
        "from scrapy.utils.reactor import install_reactor\n"
        "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
        "from scrapy import Request\n"
        "from scrapy.core.engine import _Slot\n"
        "from scrapy.utils.reactor import CallLaterOnce\n"
        "slot = _Slot(True, CallLaterOnce(lambda: None), None)\n"
        "r = Request('http://a.example/')\n"
        "slot.add_request(r)\n"
        "print(r in slot.inprogress)\n"
        "slot.remove_request(r)\n"
        "print(r in slot.inprogress)\n"
    )
    assert out == "True\nFalse"


def test_the_downloaders_delay_goes_off_for_host_slots_and_stays_for_the_projects() -> None:
    out = _run(
        "from scrapy.utils.reactor import install_reactor\n"
        "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
        "from scrapy import Request, Spider\n"
        "from scrapy.core.engine import ExecutionEngine\n"
        "from scrapy.utils.test import get_crawler\n"
        "from irlscrapy.runtime.internals import switch_off_downloader_delay\n"
        "settings = {'DOWNLOAD_DELAY': 2, 'DOWNLOAD_SLOTS': {'own': {'delay': 3}}}\n"
        "crawler = get_crawler(Spider, settings)\n"
        "crawler.engine = ExecutionEngine(crawler, lambda _: None)\n"
        "downloader = crawler.engine.downloader\n"
        "print(downloader._get_slot(Request('http://before.example/'))[1].delay)\n"
        "switch_off_downloader_delay(crawler)\n"
        "print(downloader._get_slot(Request('http://a.example/'))[1].delay)\n"
        "own = Request('http://a.example/', meta={'download_slot': 'own'})\n"
        "print(downloader._get_slot(own)[1].delay)\n"
    )
    assert out == "2.0\n0.0\n3"


def test_the_scraper_still_has_a_slot_that_says_whether_it_is_idle() -> None:
    out = _run(
        "from scrapy.core.scraper import Scraper, Slot\n"
        "import inspect\n"
        "print('self.slot' in inspect.getsource(Scraper), Slot(5_000_000).is_idle())\n"
    )
    assert out == "True True"


class _NextCall:
    def __init__(self) -> None:
        self.calls = 0

    def schedule(self) -> None:
        self.calls += 1


class _Crawler:
    def __init__(self) -> None:
        self.nextcall = _NextCall()
        slot = type("Slot", (), {"nextcall": self.nextcall})()
        self.engine = type("Engine", (), {"_slot": slot})()


def test_one_timer_wakes_the_engine_at_the_earliest_due_time() -> None:
    crawler = _Crawler()
    clock = task.Clock()
    waker = EngineWaker(crawler, clock)  # type: ignore[arg-type]
    waker.wake_at(5.0)
    waker.wake_at(9.0)  # later than the timer already set: no second timer
    assert len(clock.getDelayedCalls()) == 1
    waker.wake_at(3.0)  # earlier: the timer moves
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(2.9)
    assert crawler.nextcall.calls == 0
    clock.advance(0.2)
    assert crawler.nextcall.calls == 1
    assert not clock.getDelayedCalls()


def test_with_warc_on_the_http_handler_keeps_response_heads(tmp_path: object) -> None:
    out = _run(
        HANDLER_PROLOGUE + f"c = get_crawler(Spider, {{'IRL_WARC_DIR': '{tmp_path}'}})\n"
        "from irlscrapy.warc.handler import RecordingDownloadHandler\n"
        "h = RecordingDownloadHandler(c)\n"
        "p = h._pool._factory(lambda p: None, None).buildProtocol(None)\n"
        "print(type(h.recorder).__name__, type(p).__name__, p._parser is None)\n"
    )
    assert out == "ExchangeRecorder HeadKeepingProtocol True"


def test_the_proxy_from_the_environment_is_forgotten_before_a_request_is_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HttpProxyMiddleware marks the proxy it took from the environment with its private
    meta keys; forget_environment_proxy drops that proxy and its credentials, and keeps
    a proxy the request named itself."""
    from scrapy import Request
    from scrapy.downloadermiddlewares.httpproxy import HttpProxyMiddleware

    from irlscrapy.runtime.internals import (
        ENVIRONMENT_PROXY_KEY,
        PROXY_AUTH_KEY,
        forget_environment_proxy,
    )

    monkeypatch.setenv("http_proxy", "http://user:secret@proxy.invalid:3128")
    middleware = HttpProxyMiddleware()
    request = Request("http://example.invalid/")
    middleware.process_request(request)
    assert request.meta.get(ENVIRONMENT_PROXY_KEY) and PROXY_AUTH_KEY in request.meta
    assert b"Proxy-Authorization" in request.headers
    forget_environment_proxy(request)
    assert "proxy" not in request.meta and ENVIRONMENT_PROXY_KEY not in request.meta
    assert b"Proxy-Authorization" not in request.headers
    own = Request("http://example.invalid/", meta={"proxy": "http://mine.invalid:8080"})
    middleware.process_request(own)
    forget_environment_proxy(own)
    assert own.meta["proxy"] == "http://mine.invalid:8080"


def test_the_engine_still_closes_its_slot_first_and_keeps_its_download_handlers() -> None:
    """on_engine_closing wraps ``_slot.close``, which must still be what
    close_spider_async awaits first; download_handlers reads the downloader's
    ``handlers._handlers``."""
    out = _run(
        "from scrapy.utils.reactor import install_reactor\n"
        "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
        "import inspect\n"
        "from scrapy import Spider\n"
        "from scrapy.core.engine import ExecutionEngine, _Slot\n"
        "from scrapy.utils.test import get_crawler\n"
        "source = inspect.getsource(ExecutionEngine.close_spider_async)\n"
        "body = source[source.index('Closing spider'):]\n"
        "print(inspect.iscoroutinefunction(_Slot.close), body.index('self._slot.close()') "
        "< body.index('self.downloader.close()'))\n"
        "engine = ExecutionEngine(get_crawler(Spider), lambda _: None)\n"
        "print(type(engine.downloader.handlers._handlers).__name__)\n"
    )
    assert out == "True True\ndict"


def test_a_download_cut_by_the_handler_fails_with_download_cut_at_once() -> None:
    """A server that accepts and never answers: cut_downloads ends the download (a
    DownloadCut, an IgnoreRequest) long before its DOWNLOAD_TIMEOUT."""
    out = _run(
        HANDLER_PROLOGUE + "import socket, time\n"
        "from twisted.internet import reactor\n"
        "from scrapy import Request\n"
        "from scrapy.exceptions import IgnoreRequest\n"
        "from scrapy.utils.defer import deferred_from_coro\n"
        "from irlscrapy.runtime.internals import DownloadCut\n"
        "silent = socket.socket(); silent.bind(('127.0.0.1', 0)); silent.listen(1)\n"
        "h = PoliteHTTPDownloadHandler(get_crawler(Spider, {'DOWNLOAD_TIMEOUT': 30}))\n"
        "url = 'http://127.0.0.1:%d/' % silent.getsockname()[1]\n"
        "d = deferred_from_coro(h.download_request(Request(url)))\n"
        "began = time.monotonic()\n"
        "reactor.callLater(0.5, lambda: print('cut', h.cut_downloads()))\n"
        "def ended(failure):\n"
        "    print(type(failure.value).__name__, isinstance(failure.value, IgnoreRequest),\n"
        "          time.monotonic() - began < 5, h.cut_downloads())\n"
        "    reactor.stop()\n"
        "d.addErrback(ended)\n"
        "reactor.run()\n"
    )
    assert out == "cut 1\nDownloadCut True True 0"
