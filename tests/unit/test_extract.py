"""The broad spider's link extraction and filters."""

from __future__ import annotations

import time
from urllib.parse import urljoin

import pytest
from hypothesis import given

from irlscrapy.dupefilters.urlkey import url_keys
from irlscrapy.spiders.extract import (
    absolute_url,
    base_url,
    crawlable,
    extract_hrefs,
    header_nofollow,
    links_to_follow,
    meta_nofollow,
)
from tests.strategies import absolute_urls, hrefs


@given(base=absolute_urls, href=hrefs)
def test_absolute_url_equals_urljoin_without_fragment(base: str, href: str) -> None:
    expected = urljoin(base, href).split("#", 1)[0]
    got = absolute_url(base, href)
    if href == "" or href.startswith("#"):
        assert got is None
    else:
        assert got == expected


class TestHostileInput:
    def test_a_long_run_without_a_closing_bracket_is_linear(self) -> None:
        """ "<a " repeated without ">": each "<a" rescanned the rest of the page (40,000
        of them took 13 s); twice the page now takes about twice the time."""
        timings = []
        for n in (20_000, 40_000):
            page = b"<a " * n + b'<a href="/x">x</a>'
            started = time.perf_counter()
            assert extract_hrefs(page) == ["/x"]
            timings.append(time.perf_counter() - started)
        assert timings[1] < 0.5, timings

    @pytest.mark.parametrize(
        ("base", "href"),
        [("http://a.com/", "//[x/"), ("http://[::1", "a"), ("mailto:x", "/y")],
    )
    def test_a_link_urljoin_refuses_is_no_link(self, base: str, href: str) -> None:
        assert absolute_url(base, href) in (None, "/y")

    def test_a_base_urljoin_refuses_is_ignored(self) -> None:
        body = b'<base href="http://[::1"><a href="x">x</a>'
        assert base_url(body, "http://a.com/p") == "http://a.com/p"

    @given(url=absolute_urls)
    def test_every_crawlable_url_has_an_identity(self, url: str) -> None:
        if crawlable(url):
            url_keys([url])


class TestExtractHrefs:
    def test_quoting_styles_and_entities(self) -> None:
        body = (
            b"<a href=\"/a?x=1&amp;y=2\">1</a> <A HREF='/b'>2</A> <a class=x href=/c>3</a>"
            b'<area href="/d"> <link href="/style.css"> <a name="n">no href</a>'
            b'<a  data-x="1"\n href = " /e ">5</a>'
        )
        assert extract_hrefs(body) == ["/a?x=1&y=2", "/b", "/c", "/d", "/e"]

    def test_undecodable_bytes_do_not_raise(self) -> None:
        assert extract_hrefs(b'<a href="/\xff\xfe">x</a>') == ["/\ufffd\ufffd"]

    def test_base_href_changes_resolution(self) -> None:
        body = b'<html><head><base href="http://other.com/dir/"></head><a href="x">x</a>'
        assert base_url(body, "http://h.com/a/b") == "http://other.com/dir/"
        assert links_to_follow("http://h.com/a/b", body) == ["http://other.com/dir/x"]

    def test_dot_segments_resolve_against_a_relative_base_href(self) -> None:
        body = b'<base href="/docs/v2/index.html"><a href="../v1/a.html">1</a><a href="b">2</a>'
        assert links_to_follow("https://h.com/x/y.html", body) == [
            "https://h.com/docs/v1/a.html",
            "https://h.com/docs/v2/b",
        ]

    def test_a_fragment_link_under_another_base_names_the_base_document(self) -> None:
        """HTML resolves every href, "#top" and "" too, against the document's base URL:
        with a <base href> elsewhere they name that document (as Scrapy's
        LinkExtractor and browsers have it); without one, the page itself."""
        body = b'<base href="/docs/index.html#intro"><a href="#top">1</a><a href="">2</a>'
        assert links_to_follow("http://h.com/a/b.html", body) == ["http://h.com/docs/index.html"]
        plain = b'<a href="#top">1</a><a href="">2</a>'
        assert links_to_follow("http://h.com/a/b.html", plain) == []
        same = b'<base href="b.html"><a href="#top">1</a>'
        assert links_to_follow("http://h.com/a/b.html", same) == []


class TestFilters:
    @pytest.mark.parametrize(
        "url",
        [
            "http://h.com/",
            "https://h.com/a.html",
            "http://h.com/a.php?f=x.pdf",
            "http://h.com/dir.v2/page",
            "http://h.com",
            "http://h.com/a.PDFX",
        ],
    )
    def test_crawlable(self, url: str) -> None:
        assert crawlable(url)

    @pytest.mark.parametrize(
        "url",
        [
            "ftp://h.com/",
            "mailto:a@b.com",
            "javascript:void(0)",
            "tel:+1",
            "http://h.com/a.pdf",
            "http://h.com/A.JPG",
            "https://h.com/x/y.zip?dl=1",
            "http://h.com/f.tar.gz",
            # an authority that cannot be a URL's (its identity would raise)
            "http://a.com:99999/",
            "http://a.com:x/",
            "http://[zz]/",
            "http://[::1/",
            "http://a.com:²/",
        ],
    )
    def test_not_crawlable(self, url: str) -> None:
        assert not crawlable(url)

    def test_links_are_deduplicated_in_document_order(self) -> None:
        body = b'<a href="/b">1</a><a href="/a#x">2</a><a href="/b">3</a><a href="#top">4</a>'
        assert links_to_follow("http://h.com/", body) == ["http://h.com/b", "http://h.com/a"]


class TestNofollow:
    @pytest.mark.parametrize(
        ("tag", "expected"),
        [
            (b'<meta name="robots" content="noindex, nofollow">', True),
            (b"<META NAME=ROBOTS CONTENT=NONE>", True),
            (b'<meta name="robots" content="noindex">', False),
            (b'<meta name="googlebot" content="nofollow">', False),
            (b'<meta content="nofollow" name="robots">', True),
        ],
    )
    def test_meta_robots(self, tag: bytes, expected: bool) -> None:
        assert meta_nofollow(b"<html><head>" + tag + b"</head><body>x</body></html>") is expected

    @pytest.mark.parametrize(
        ("values", "expected"),
        [
            ([b"nofollow"], True),
            ([b"noindex, nofollow"], True),
            ([b"none"], True),
            ([b"noarchive"], False),
            ([b"otherbot: nofollow"], False),
            ([], False),
        ],
    )
    def test_x_robots_tag(self, values: list[bytes], expected: bool) -> None:
        assert header_nofollow(values) is expected
