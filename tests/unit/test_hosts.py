"""A URL's host (the unit of politeness) and origin (the unit of host health), and the
one spelling of a URL's host that the IRL scheduler fetches and keys."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.domains import canonical_authority, url_host, url_origin
from irlscrapy.dupefilters.urlkey import url_key
from irlscrapy.scheduler.hosts.dns import is_ip


@pytest.mark.parametrize(
    ("url", "host", "origin"),
    [
        ("http://WWW.Example.com./a", "www.example.com", "http://www.example.com"),
        ("http://www.example.com:80/a", "www.example.com", "http://www.example.com"),
        ("https://www.example.com:443/", "www.example.com", "https://www.example.com"),
        ("http://www.example.com:443/", "www.example.com:443", "http://www.example.com:443"),
        ("https://u:p@Example.com.:8080/x?y", "example.com:8080", "https://example.com:8080"),
        ("HTTP://[::1]:80/", "[::1]", "http://[::1]"),
    ],
)
def test_one_host_whatever_its_case_trailing_dot_or_default_port(
    url: str, host: str, origin: str
) -> None:
    assert url_host(url) == host
    assert url_origin(url) == origin


# -- canonical_authority: one spelling of a URL's host ------------------------------------

_DEFAULT_PORT = {"http": 80, "https": 443}
_LABELS = st.lists(
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True), min_size=1, max_size=4
)
_PATHS = st.from_regex(
    r"(/[A-Za-z0-9._~:@%-]{0,8}){0,3}(\?[a-z0-9=&:@]{0,10})?(#[a-z:]{0,4})?", fullmatch=True
)


@st.composite
def spelt_urls(draw: st.DrawFn) -> tuple[str, str]:
    """(a URL with its host spelt some way, the model's canonical URL): the host in any
    case, with or without a trailing dot, with no port, an empty one, the scheme's
    default (possibly with leading zeros) or another; userinfo and path kept as given."""
    scheme = draw(st.sampled_from(["http", "https"]))
    name = ".".join(draw(_LABELS))
    spelt_name = "".join(c.upper() if draw(st.booleans()) else c for c in name)
    dot = "." if draw(st.booleans()) else ""
    default = _DEFAULT_PORT[scheme]
    port = draw(
        st.one_of(
            st.none(),
            st.just(""),
            st.just(str(default)),
            st.just("0" + str(default)),
            st.integers(1, 65535).filter(lambda p: p != default).map(str),
        )
    )
    userinfo = draw(st.sampled_from(["", "user@", "User:PassWord@"]))
    path = draw(_PATHS)
    spelt = f"{scheme}://{userinfo}{spelt_name}{dot}{'' if port is None else ':' + port}{path}"
    kept = f":{port}" if port and int(port) != default else ""
    return spelt, f"{scheme}://{userinfo}{name}{kept}{path}"


@given(spelt_urls())
def test_every_spelling_of_a_host_is_respelt_as_the_model_spells_it(urls: tuple[str, str]) -> None:
    spelt, canonical = urls
    assert canonical_authority(spelt) == canonical
    assert canonical_authority(canonical) == canonical  # idempotent: a canonical URL stays
    assert url_host(canonical) == url_host(spelt)  # the host identity is unchanged
    assert url_key(canonical_authority(spelt)) == url_key(canonical)  # one URLseen key


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://WWW.Lua.ORG./", "http://www.lua.org/"),
        ("http://www.lua.org./", "http://www.lua.org/"),
        ("http://vimhelp.org:80/a:80?b@c", "http://vimhelp.org/a:80?b@c"),
        ("https://a.org:443/x", "https://a.org/x"),
        ("http://a.org:443/x", "http://a.org:443/x"),
        ("http://U:P@A.org.:80/", "http://U:P@a.org/"),
        ("http://[::1]:80/", "http://[::1]/"),
        ("http://[::1]:8080/", "http://[::1]:8080/"),
        ("data:text/plain,A", "data:text/plain,A"),
    ],
)
def test_known_spellings(url: str, canonical: str) -> None:
    assert canonical_authority(url) == canonical


ip_like = st.one_of(
    st.ip_addresses().map(str),
    st.text(alphabet="0123456789.:abcdefx%", max_size=20),
    st.text(max_size=12),
)


@given(ip_like)
def test_is_ip_is_ipaddress_parsing_with_names_skipped_unparsed(host: str) -> None:
    try:
        ipaddress.ip_address(host)
        parsed = True
    except ValueError:
        parsed = False
    assert is_ip(host) == parsed
