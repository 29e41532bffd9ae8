"""An ordinary Scrapy spider runs unchanged under ``ADDONS = {"irlscrapy.Addon": 0}``, and
the ``Links`` fast path behaves like the Request path.

Every crawl is a real one, in a subprocess (``contract_spiders.py``, Scrapy's
CrawlerProcess with only the settings given here: no project settings), against a small
HTTP server of our own on 127.0.0.1 (:class:`contract_spiders.EchoWeb`, one per crawl so
that crawls run in parallel) that logs what arrives. Stock Scrapy, run the same way
without the add-on, is the reference: what it does is the contract.

- the contract spider: meta, cb_kwargs, callbacks, errbacks, priorities, a form POST, a
  JSON PUT, redirects and a retry, compared with stock Scrapy at the callbacks and at the
  server;
- the tree spider, in three runs: ``Links`` under the add-on, Requests under the add-on,
  ``Links`` on the stock scheduler (StarMiddleware's degraded path), under DEPTH_LIMIT,
  allowed_domains and URLLENGTH_LIMIT; and twice on one JOBDIR;
- the ends of a request stock Scrapy reports to its errback although it is never
  answered (robots.txt, DNS), and the edges of the Links path's own Referer and
  URL-length rules.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .contract_spiders import (
    SPACED_NAMES,
    SPACED_ROOM,
    TREE_DEPTH,
    UNRESOLVABLE,
    EchoWeb,
)

pytestmark = pytest.mark.e2e

RUNNER = Path(__file__).with_name("contract_spiders.py")
ADDON = {"irlscrapy.Addon": 0}
#: Settings of every crawl: quick politeness, no telnet, INFO logs.
QUICK = {
    "IRL_HOST_DELAY": 0.05,
    "IRL_HOST_DELAY_MIN": 0.01,
    "IRL_IP_DELAY": 0.01,
    "IRL_IP_DELAY_MIN": 0.0,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "DOWNLOAD_TIMEOUT": 10,
    "DNS_TIMEOUT": 5,
    # EchoWeb is on 127.0.0.1, which the address guard refuses by default
    "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
}
CRAWL_TIMEOUT = 60


@dataclass
class Crawl:
    """One finished crawl: its server's log, and the stats and callback views it wrote."""

    name: str
    web: EchoWeb
    result: dict[str, Any]
    stderr: str

    @property
    def stats(self) -> dict[str, Any]:
        return self.result["stats"]

    @property
    def seen(self) -> list[dict[str, Any]]:
        return self.result["seen"]

    def norm(self, value: Any) -> str:
        """``value`` as JSON, this crawl's port replaced, to compare crawls with."""
        return json.dumps(value, sort_keys=True).replace(f":{self.web.port}", ":PORT")

    def requests(self) -> list[dict[str, Any]]:
        """What arrived at the server, robots.txt left out, in arrival order."""
        return [r for r in self.web.log if r["path"] != "/robots.txt"]

    def urls(self) -> list[str]:
        return [self.norm_url(f"http://{r['host']}{r['path']}") for r in self.requests()]

    def norm_url(self, url: str) -> str:
        return url.replace(f":{self.web.port}", ":PORT")

    def referers(self) -> dict[str, str | None]:
        return {
            self.norm_url(f"http://{r['host']}{r['path']}"): (
                self.norm_url(r["headers"]["referer"]) if "referer" in r["headers"] else None
            )
            for r in self.requests()
        }


@dataclass
class Spec:
    name: str
    spider: str
    web: EchoWeb
    kwargs: dict[str, Any]
    settings: dict[str, Any]


def run_crawls(tmp: Path, specs: list[Spec]) -> dict[str, Crawl]:
    """Run the crawls in parallel, each in its own process; return them by name."""

    def one(spec: Spec) -> Crawl:
        out = tmp / f"{spec.name}.json"
        config = {
            "spider": spec.spider,
            "kwargs": spec.kwargs,
            "settings": {**QUICK, **spec.settings},
            "out": str(out),
        }
        proc = subprocess.run(
            [sys.executable, str(RUNNER), json.dumps(config)],
            cwd=tmp,  # no scrapy.cfg here: no project settings
            capture_output=True,
            text=True,
            timeout=CRAWL_TIMEOUT,
        )
        assert proc.returncode == 0 and out.exists(), (spec.name, proc.stderr[-4000:])
        return Crawl(spec.name, spec.web, json.loads(out.read_text()), proc.stderr)

    with ThreadPoolExecutor(len(specs)) as pool:
        return {c.name: c for c in pool.map(one, specs)}


@pytest.fixture
def webs() -> Iterator[ExitStack]:
    """Servers started with ``webs.enter_context(EchoWeb())`` stop after the test."""
    with ExitStack() as stack:
        yield stack


@pytest.fixture(scope="module")
def module_webs() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def assert_finished(crawl: Crawl) -> None:
    assert crawl.stats.get("finish_reason") == "finished", (
        crawl.name,
        crawl.stats,
        crawl.stderr[-4000:],
    )


# -- 1. an ordinary spider, with and without the add-on -----------------------------------
@pytest.fixture(scope="module")
def contract(module_webs: ExitStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Crawl]:
    """The contract spider, once on stock Scrapy and once under the add-on.

    Stock Scrapy's priority order shows at the server only with one request in flight
    (CONCURRENT_REQUESTS=1); the IRL workbench fetches one URL per host at a time at any
    concurrency, so the add-on's run keeps Scrapy's default of 16.
    """
    refused = module_webs.enter_context(socket.socket())
    refused.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    tmp = tmp_path_factory.mktemp("contract")
    common = {"RETRY_TIMES": 0, "ROBOTSTXT_OBEY": False}
    specs = []
    for name, settings in (
        ("stock", {"CONCURRENT_REQUESTS": 1}),
        ("irl", {"ADDONS": ADDON, "JOBDIR": str(tmp / "job")}),
    ):
        web = module_webs.enter_context(EchoWeb())
        kwargs = {
            "base": f"http://{web.b}",
            "other": f"http://{web.a}",
            "refused": f"http://127.0.0.1:{refused.getsockname()[1]}",
        }
        specs.append(Spec(name, "contract", web, kwargs, {**common, **settings}))
    return run_crawls(tmp, specs)


def callback_views(crawl: Crawl) -> list[str]:
    """What each callback and errback saw (the echoed arrival order left out)."""
    views = []
    for view in crawl.seen:
        view = dict(view)
        if "echo" in view:
            view["echo"] = {k: v for k, v in view["echo"].items() if k != "seq"}
        views.append(crawl.norm(view))
    return views


def test_callbacks_and_errbacks_see_the_same_requests_with_and_without_the_addon(
    contract: dict[str, Crawl],
) -> None:
    stock, irl = callback_views(contract["stock"]), callback_views(contract["irl"])
    assert len(stock) == 16  # root, 5 priorities, again, meta, plain, 2 errors, form,
    # json, 2 redirects, flaky: the spider did what it is meant to
    assert Counter(irl) == Counter(stock), {
        "stock only": sorted(set(stock) - set(irl)),
        "irl only": sorted(set(irl) - set(stock)),
    }
    meta = next(v for v in contract["irl"].seen if "/echo/meta" in v["url"])
    assert "'tuple': (1, 'two')" in meta["meta"] and "b'\\x00\\xffraw'" in meta["meta"]
    assert "datetime.date(2024, 1, 2)" in meta["cb_kwargs"]
    assert meta["flags"] == ["flagged"]


def test_errbacks_get_the_http_500_and_the_refused_connection(
    contract: dict[str, Crawl],
) -> None:
    for crawl in contract.values():
        errors = {
            (v["url"].rsplit("/", 1)[1], v["error"], v["http_error"], v["status"])
            for v in crawl.seen
            if v["callback"] == "on_error"
        }
        refused = [e for e in errors if e[0] == "refused"]
        assert errors - set(refused) == {("500", "HttpError", True, 500)}, crawl.name
        assert len(refused) == 1 and "Refused" in refused[0][1], (crawl.name, errors)
        assert not any(
            v["callback"] == "parse_leaf" and v["url"].endswith(("/500", "/refused"))
            for v in crawl.seen
        )


def test_requests_arrive_at_the_server_as_with_stock_scrapy(
    contract: dict[str, Crawl],
) -> None:
    """Method, host, path, every header and the body of every request, as a multiset."""

    def arrivals(crawl: Crawl) -> Counter[str]:
        return Counter(
            crawl.norm({k: r[k] for k in ("method", "host", "path", "headers", "body")})
            for r in crawl.requests()
        )

    stock, irl = arrivals(contract["stock"]), arrivals(contract["irl"])
    assert irl == stock, {"stock only": stock - irl, "irl only": irl - stock}
    by_path = {r["path"]: r for r in contract["irl"].requests()}
    form, put = by_path["/echo/form"], by_path["/echo/json"]
    assert (form["method"], form["body"]) == ("POST", "name=Zo%C3%AB&q=a+b%26c")
    assert form["headers"]["x-contract"] == "form"
    assert form["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert (put["method"], json.loads(put["body"])) == ("PUT", {"x": [1, 2], "y": "z"})
    assert put["headers"]["x-contract"] == "json"
    paths = [r["path"] for r in contract["irl"].requests()]
    assert paths.count("/flaky/once") == 2  # the 503, then its retry
    assert paths.count("/echo/root") == 2  # dont_filter
    assert paths.count("/echo/prio/7") == 1  # the duplicate was filtered


def test_a_hosts_requests_are_fetched_in_priority_order(contract: dict[str, Crawl]) -> None:
    for crawl in contract.values():
        order = [int(p.rsplit("/", 1)[1]) for p in crawl.urls() if "/echo/prio/" in p]
        assert order == [9, 7, 5, 3, 1], crawl.name


def test_the_addon_crawl_runs_on_the_irl_scheduler_and_finishes(
    contract: dict[str, Crawl],
) -> None:
    stock, irl = contract["stock"], contract["irl"]
    assert_finished(stock)
    assert_finished(irl)
    assert not [k for k in stock.stats if k.startswith("irl/")]
    # every download (19: 18 answered, 1 refused) left the IRL scheduler
    assert irl.stats["irl/scheduler/dequeued"] == irl.stats["downloader/request_count"] == 19
    assert irl.stats["downloader/request_count"] == stock.stats["downloader/request_count"]


# -- 2. Links and Requests: the same crawl --------------------------------------------------
#: (name, Links or Requests, add-on on)
MODES = (
    ("irl-links", "links", True),
    ("irl-requests", "requests", True),
    ("stock-links", "links", False),
)
SCENARIOS = ("depth", "offsite", "urllength")


def long_limit(web: EchoWeb) -> int:
    """A URLLENGTH_LIMIT that keeps the long URLs of tree pages at depth <= 1 only."""
    return web.long_url_length(web.a, 1) + 5


def tree_specs(tmp: Path, stack: ExitStack, scenario: str) -> list[Spec]:
    specs = []
    for name, mode, addon in MODES:
        web = stack.enter_context(EchoWeb())
        kwargs: dict[str, Any] = {"start_url": web.start_url, "mode": mode}
        settings: dict[str, Any] = {"ROBOTSTXT_OBEY": True}
        if addon:
            settings["ADDONS"] = ADDON
            settings["JOBDIR"] = str(tmp / f"job-{name}")
        if scenario == "depth":
            settings["DEPTH_LIMIT"] = 2
        elif scenario == "offsite":
            kwargs["allowed"] = "localhost"  # host A only
        elif scenario == "urllength":
            settings["URLLENGTH_LIMIT"] = long_limit(web)
        specs.append(Spec(name, "tree", web, kwargs, settings))
    return specs


def expected_tree(web: EchoWeb, scenario: str) -> set[str]:
    """The pages a crawl must fetch, by breadth-first search of the server's own links
    (every page has one depth, so the order of a crawl does not change the set)."""
    depth_limit = 2 if scenario == "depth" else 0
    length_limit = long_limit(web) if scenario == "urllength" else 0
    found, frontier = {web.start_url}, [web.start_url]
    for depth in range(1, 2 * TREE_DEPTH + 3):
        if depth_limit and depth > depth_limit:
            break
        new = []
        for url in frontier:
            host, _, path = url.removeprefix("http://").partition("/")
            for link in web.page(host, "/" + path):
                if (
                    link in found
                    or "/private/" in link  # robots.txt
                    or (length_limit and len(link) > length_limit)
                    or (scenario == "offsite" and not link.startswith(f"http://{web.a}/"))
                ):
                    continue
                found.add(link)
                new.append(link)
        frontier = new
    return {u.replace(f":{web.port}", ":PORT") for u in found}


@pytest.fixture(scope="module", params=SCENARIOS)
def tree(
    request: pytest.FixtureRequest,
    module_webs: ExitStack,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, dict[str, Crawl]]:
    scenario: str = request.param
    tmp = tmp_path_factory.mktemp(f"tree-{scenario}")
    return scenario, run_crawls(tmp, tree_specs(tmp, module_webs, scenario))


def test_links_and_requests_fetch_the_same_pages_each_once(
    tree: tuple[str, dict[str, Crawl]],
) -> None:
    scenario, crawls = tree
    for crawl in crawls.values():
        assert_finished(crawl)
        urls = crawl.urls()
        twice = [u for u, n in Counter(urls).items() if n > 1]
        assert not twice, (crawl.name, twice)
        assert set(urls) == expected_tree(crawl.web, scenario), crawl.name


def test_links_and_requests_send_the_same_referer(tree: tuple[str, dict[str, Crawl]]) -> None:
    _, crawls = tree
    reference = crawls["irl-requests"].referers()
    assert sum(r is not None for r in reference.values()) == len(reference) - 1  # start
    for name in ("irl-links", "stock-links"):
        assert crawls[name].referers() == reference, name


def test_links_and_requests_count_what_they_filter_alike(
    tree: tuple[str, dict[str, Crawl]],
) -> None:
    scenario, crawls = tree
    keys = (
        "urllength/request_ignored_count",
        "offsite/filtered",
        "dupefilter/filtered",
        "request_depth_max",
    )
    reference = crawls["irl-requests"].stats
    for name in ("irl-links", "stock-links"):
        assert {k: crawls[name].stats.get(k) for k in keys} == {
            k: reference.get(k) for k in keys
        }, name
    rule = {
        "depth": "request_depth_max",
        "offsite": "offsite/filtered",
        "urllength": "urllength/request_ignored_count",
    }[scenario]
    assert reference.get(rule, 0) > 0
    if scenario == "depth":
        assert reference["request_depth_max"] == 2
    # each run took the path it is meant to take
    assert crawls["irl-links"].stats.get("irl/scheduler/enqueued/links", 0) > 0
    assert "irl/links/degraded" not in crawls["irl-links"].stats
    assert "irl/scheduler/enqueued/links" not in crawls["irl-requests"].stats
    assert crawls["stock-links"].stats.get("irl/links/degraded", 0) > 0
    assert "irl/scheduler/dequeued" not in crawls["stock-links"].stats


# -- 3. JOBDIR: a rerun after a finished crawl fetches nothing again ----------------------
@pytest.mark.parametrize("mode", ["links", "requests"])
def test_a_rerun_on_the_same_jobdir_downloads_nothing_again(
    mode: str, webs: ExitStack, tmp_path: Path
) -> None:
    web = webs.enter_context(EchoWeb())
    spec = Spec(
        "run",
        "tree",
        web,
        {"start_url": web.start_url, "mode": mode},
        {"ADDONS": ADDON, "JOBDIR": str(tmp_path / "job"), "ROBOTSTXT_OBEY": True},
    )
    first = run_crawls(tmp_path, [spec])["run"]
    assert_finished(first)
    assert set(first.urls()) == expected_tree(web, "none")
    web.clear()
    second = run_crawls(tmp_path, [spec])["run"]
    assert_finished(second)
    assert second.urls() == [], second.stderr[-3000:]  # robots.txt at most
    assert second.stats.get("irl/urlseen/unique", 0) == 0


# -- the ends of a request that stock Scrapy reports to the spider ------------------------
@pytest.fixture(scope="module")
def edges(module_webs: ExitStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Crawl]:
    tmp = tmp_path_factory.mktemp("edges")
    specs = []
    for name, settings in (("stock", {}), ("irl", {"ADDONS": ADDON})):
        web = module_webs.enter_context(EchoWeb())
        specs.append(
            Spec(
                name,
                "edges",
                web,
                {"base": f"http://{web.b}"},
                {"ROBOTSTXT_OBEY": True, "RETRY_TIMES": 0, **settings},
            )
        )
    return run_crawls(tmp, specs)


def errback_views(crawl: Crawl, url_part: str) -> list[dict[str, Any]]:
    return [v for v in crawl.seen if url_part in v["url"]]


def stats_of(crawl: Crawl, prefix: str) -> dict[str, Any]:
    return {k: v for k, v in crawl.stats.items() if k.startswith(prefix)}


def test_a_request_disallowed_by_robots_txt_reaches_its_errback(
    edges: dict[str, Crawl],
) -> None:
    """Scrapy's RobotsTxtMiddleware raises IgnoreRequest, which reaches the errback."""
    for crawl in edges.values():
        assert_finished(crawl)
        views = errback_views(crawl, "/private/disallowed")
        assert [(v["callback"], v["ignored"]) for v in views] == [("on_error", True)], (
            crawl.name,
            stats_of(crawl, "irl/robots/"),
        )
        assert "/private/disallowed" not in crawl.urls()


def test_robots_parsed_is_sent_with_a_scrapy_robot_parser(edges: dict[str, Crawl]) -> None:
    """Extensions written for RobotsTxtMiddleware hear ``robots_parsed`` under the add-on
    too, with a parser that answers as stock Scrapy's does."""
    verdicts = {
        name: [(v["private"], v["public"]) for v in crawl.seen if v["callback"] == "robots_parsed"]
        for name, crawl in edges.items()
    }
    assert verdicts["stock"] == [(False, True)], verdicts
    assert verdicts["irl"] == verdicts["stock"], verdicts


def test_a_request_to_an_unresolvable_host_reaches_its_errback(
    edges: dict[str, Crawl],
) -> None:
    for crawl in edges.values():
        views = errback_views(crawl, UNRESOLVABLE)
        assert [(v["callback"], v["dns"]) for v in views] == [("on_error", True)], (
            crawl.name,
            stats_of(crawl, "irl/dns/"),
        )


def test_a_request_whose_callback_is_no_spider_method_reaches_it(
    edges: dict[str, Crawl],
) -> None:
    """Scrapy keeps such a request in memory (its disk queues count it in
    ``scheduler/unserializable``); it must not be lost."""
    for crawl in edges.values():
        views = errback_views(crawl, "/echo/lambda")
        errors = [line for line in crawl.stderr.splitlines() if "Error" in line]
        assert [v["callback"] for v in views] == ["lambda"], (crawl.name, errors[-3:])


# -- the Links path's own Referer and URL-length rules, at their edges ---------------------
@pytest.fixture(scope="module")
def edge_links(
    module_webs: ExitStack, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Crawl]:
    """Links and Requests under the add-on from ``/edge/``: pages answered with a
    Referrer-Policy header, and links whose length changes when a Request escapes them."""
    tmp = tmp_path_factory.mktemp("edge-links")
    specs = []
    for name, mode, addon in MODES[:2]:
        assert addon
        web = module_webs.enter_context(EchoWeb())
        kwargs = {"start_url": f"http://{web.a}/edge/", "mode": mode}
        settings = {
            "ADDONS": ADDON,
            "ROBOTSTXT_OBEY": True,
            "URLLENGTH_LIMIT": len(f"http://{web.a}/leaf/") + SPACED_ROOM,
        }
        specs.append(Spec(name, "tree", web, kwargs, settings))
    return run_crawls(tmp, specs)


def test_links_follow_the_referrer_policy_header_of_their_page(
    edge_links: dict[str, Crawl],
) -> None:
    links, requests = edge_links["irl-links"], edge_links["irl-requests"]
    reference = requests.referers()
    # the reference is Scrapy's RefererMiddleware honouring the header
    assert reference["http://localhost:PORT/leaf/no-referrer-same"] is None
    assert reference["http://127.0.0.1:PORT/leaf/origin-cross"] == "http://localhost:PORT/"
    got = links.referers()
    policy_pages = {u: r for u, r in reference.items() if "/leaf/" in u and "-" in u}
    assert len(policy_pages) == 4
    assert {u: got.get(u, "not fetched") for u in policy_pages} == policy_pages


def test_links_url_length_limit_applies_to_the_escaped_url(
    edge_links: dict[str, Crawl],
) -> None:
    links, requests = edge_links["irl-links"], edge_links["irl-requests"]
    fetched = {u for u in requests.urls() if "/leaf/" in u and "-" not in u}
    assert fetched == {f"http://localhost:PORT/leaf/{SPACED_NAMES[0]}"}
    assert {u for u in links.urls() if "/leaf/" in u and "-" not in u} == fetched
    ignored = "urllength/request_ignored_count"
    assert links.stats.get(ignored) == requests.stats.get(ignored) == len(SPACED_NAMES) - 1


def test_the_tree_model_has_pages_for_each_rule_to_drop() -> None:
    """expected_tree, the ground truth of the tree scenarios, is not trivially small."""
    web = EchoWeb()  # not started: page() needs no server
    try:
        full = expected_tree(web, "none")
        assert len(full) == 75  # 15 tree pages, and as many leaves, per kind
        assert len(expected_tree(web, "depth")) == 17
        assert len(expected_tree(web, "offsite")) == 30  # host A's tree and long pages
        assert len(expected_tree(web, "urllength")) == 75 - 24  # long pages of depth >= 2
    finally:
        web.server.server_close()
