"""The Referer of a page's links: asked once per class of target under Scrapy's own
policies, it is what each policy gives when asked per target origin, as
RefererMiddleware asks it for each Request."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.spidermiddlewares.referer import RefererMiddleware, ReferrerPolicy

from irlscrapy.scheduler.linkrules import SCRAPY_POLICIES, LinkRules, origin

SCHEMES = st.sampled_from(["http", "https", "ftp", "file", "s3", "data"])
HOSTS = st.sampled_from(["a.example", "A.Example", "b.example", "[::1]", "a.example."])
PORTS = st.sampled_from(["", ":80", ":443", ":8080"])
USERINFO = st.sampled_from(["", "user@", "u:p@"])


@st.composite
def urls(draw: Any) -> str:
    scheme, host, port, user = draw(SCHEMES), draw(HOSTS), draw(PORTS), draw(USERINFO)
    return f"{scheme}://{user}{host}{port}/{draw(st.sampled_from(['', 'p', 'p/q?x=1']))}"


class Stats:
    def inc_value(self, key: str, count: int = 1) -> None:
        pass


def rules_with(policy: str) -> LinkRules:
    referer = RefererMiddleware(Settings({"REFERRER_POLICY": policy}))
    return LinkRules(
        depth_limit=0, depth_priority=0, url_length_limit=2083, referer=referer, stats=Stats()
    )


POLICY_NAMES = sorted(p.name for p in SCRAPY_POLICIES)


@given(st.sampled_from(POLICY_NAMES), urls(), st.lists(urls(), max_size=12))
def test_the_referer_by_class_is_the_referer_by_origin(
    policy: str, source: str, targets: list[str]
) -> None:
    rules = rules_with(policy)
    asked = rules.default_policy
    assert asked is not None
    expected = [asked.referrer(source, origin(t) + "/") for t in targets]
    assert rules.referers(source, targets, None) == expected


def test_a_page_of_many_origins_asks_the_policy_once_per_class() -> None:
    calls: list[str] = []
    rules = rules_with("strict-origin-when-cross-origin")
    policy = rules.default_policy
    assert policy is not None
    real = policy.referrer

    def counting(response_url: str, request_url: str) -> str | None:
        calls.append(request_url)
        return real(response_url, request_url)

    policy.referrer = counting  # type: ignore[method-assign]
    targets = [f"http://h{n}.example/x" for n in range(20)]
    targets += [f"https://h{n}.example/x" for n in range(20)]
    targets += ["https://page.example/a", "https://PAGE.example:8443/b"]
    got = rules.referers("https://page.example/here", targets, None)
    assert len(got) == 42 and len(calls) == 4  # http, https, the page, its other spelling
    assert got[40] == "https://page.example/here"
    assert got[1] is None and got[21] == "https://page.example/"  # http and https h1


class ProjectPolicy(ReferrerPolicy):
    """A project's own policy may look at anything: asked per origin."""

    name = "project"

    def referrer(self, response_url: str, request_url: str) -> str | None:
        return request_url


def test_a_projects_own_policy_is_asked_per_origin() -> None:
    referer = RefererMiddleware(Settings({"REFERRER_POLICY": f"{__name__}.ProjectPolicy"}))
    rules = LinkRules(
        depth_limit=0, depth_priority=0, url_length_limit=2083, referer=referer, stats=Stats()
    )
    response = HtmlResponse("https://page.example/", body=b"")
    got = rules.referers(response.url, ["http://a.example/1", "http://b.example/2"], response)
    assert got == ["http://a.example/", "http://b.example/"]
