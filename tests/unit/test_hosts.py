"""A URL's host (the unit of politeness) and origin (the unit of host health)."""

from __future__ import annotations

import pytest

from irlscrapy.domains import url_host, url_origin


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
