"""URL identity: equal keys exactly where Scrapy's default fingerprinter sees equal GETs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.utils.request import RequestFingerprinter
from w3lib.url import canonicalize_url, safe_url_string

from irlscrapy.dupefilters.urlkey import canonical_url, url_key, url_keys

_host_label = st.from_regex(r"[A-Za-z0-9-]{1,8}", fullmatch=True)
hosts = st.one_of(
    st.lists(_host_label, min_size=1, max_size=3).map(".".join).map(lambda h: h + ".com"),
    st.sampled_from(
        [
            "WWW.Example.COM",
            "h.com.",
            "xn--bcher-kva.com",
            "bücher.de",
            "127.0.0.1",
            "[::1]",
            "[2001:DB8::1]",
            "a..b.com",
            "-x-.com",
        ]
    ),
)
ports = st.sampled_from(["", ":80", ":8080", ":", ":0080"])
userinfo = st.sampled_from(["", "user@", "u:p@", "U%41@"])
path_chars = st.sampled_from(
    [
        *list("abcXYZ019-._~!$&'()*+,=:@/|;%[] "),
        "%7e",
        "%7E",
        "%41",
        "%2F",
        "%2f",
        "%20",
        "é",
        "/./",
        "/../",
        "//",
    ]
)
paths = st.lists(path_chars, max_size=10).map("".join)
query_parts = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "Z", "q", "", "k%41", "k+", "é"]),
        st.sampled_from(["", "=", "=1", "=2", "=a+b", "=a%20b", "=%7e", "=x&y", "=;"]),
    ),
    max_size=4,
).map(lambda ps: "&".join(k + v for k, v in ps))
queries = st.one_of(st.just(""), query_parts.map(lambda q: "?" + q))
fragments = st.sampled_from(["", "#", "#f", "#a?b", "#%7e"])
schemes = st.sampled_from(["http", "https", "HTTP", "Https"])

urls = st.builds(
    lambda s, u, h, p, path, q, f: f"{s}://{u}{h}{p}{'/' if path[:1] != '/' else ''}{path}{q}{f}",
    schemes,
    userinfo,
    hosts,
    ports,
    paths,
    queries,
    fragments,
)

# URLs made of the fast path's own alphabet, so its boundary is explored
_safe_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True)
_safe_path = st.lists(
    st.sampled_from([*list("az09._~!$&'()*+,=:@|-/"), "/.", "..", "%41", ";"]), max_size=12
).map("".join)
_safe_pair = st.tuples(
    st.from_regex(r"[A-Za-z0-9._~-]{1,3}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9._~-]{0,3}", fullmatch=True),
)
# ... and with any authority before them: the second fast path's boundary (a port, an
# IPv6 literal, an IDN, upper case, userinfo: w3lib canonicalizes the origin apart)
near_canonical = st.builds(
    lambda s, host, port, path, pairs, f: (
        f"{s}://{host}{port}/{path}"
        + ("?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")
        + f
    ),
    st.sampled_from(["http", "https"]),
    st.one_of(
        st.lists(_safe_label, min_size=1, max_size=3).map(".".join),
        st.builds(str.__add__, userinfo, hosts),
    ),
    st.one_of(st.just(""), ports),
    _safe_path,
    st.lists(_safe_pair, max_size=3),
    fragments,
)


def reference(url: str) -> str:
    return canonicalize_url(safe_url_string(url))


@settings(max_examples=3000)
@given(url=st.one_of(urls, near_canonical))
@example("http://www.w0.com/news/8.html")
@example("http://h.com/a?b=1&a=2")
@example("http://h.com/a?a=1&b=2")
@example("http://h.com/.well-known/x")
@example("http://h.com/a#frag")
@example("http://[::1]:8080/p/1")
@example("http://B\u00fccher.de:80/p?a=1")
def test_canonical_url_equals_the_fingerprinters_canonical_form(url: str) -> None:
    try:
        expected = reference(url)
    except ValueError:
        return  # w3lib refuses it (e.g. a bad port); so does Request()
    assert canonical_url(url) == expected


@given(a=urls, b=urls)
def test_equal_keys_exactly_when_scrapy_fingerprints_are_equal(a: str, b: str) -> None:
    fingerprinter = RequestFingerprinter()
    try:
        fa, fb = (fingerprinter.fingerprint(Request(u)) for u in (a, b))
    except ValueError:
        return
    assert (url_key(a) == url_key(b)) == (fa == fb)
    assert url_key(a) == url_key(Request(a).url)  # a Links URL and its Request agree


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://WWW.W0.com/a", "http://www.w0.com/a"),
        ("http://h.com/a?b=1&a=2", "http://h.com/a?a=2&b=1"),
        ("http://h.com/a#x", "http://h.com/a"),
        ("http://h.com/%7e", "http://h.com/~"),
        ("http://h.com", "http://h.com/"),
        ("http://h.com/a/../b", "http://h.com/b"),
    ],
)
def test_same_request_same_key(a: str, b: str) -> None:
    assert url_key(a) == url_key(b)


def test_different_requests_different_keys() -> None:
    urls_ = ["http://h.com/a", "https://h.com/a", "http://h.com/a?x=1", "http://h.com:8080/a"]
    assert len(set(url_keys(urls_).tolist())) == len(urls_)


@given(st.lists(urls, max_size=8))
def test_url_keys_are_the_keys_of_each_url_in_order(batch: list[str]) -> None:
    keys = url_keys(batch)
    assert keys.dtype == np.uint64
    assert keys.tolist() == [url_key(u) for u in batch]
