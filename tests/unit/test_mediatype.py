"""media_type: Content-Type without parameters, lower case; "" without one."""

from __future__ import annotations

import pytest
from scrapy.http.headers import Headers

from irlscrapy.runtime.mediatype import media_type


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"text/html; charset=UTF-8", "text/html"),
        (b" Application/XHTML+XML ", "application/xhtml+xml"),
        (b"image/png", "image/png"),
        (b"; charset=utf-8", ""),
        (b"", ""),
        (None, ""),
    ],
)
def test_the_media_type_of_a_content_type(value: bytes | None, expected: str) -> None:
    headers = Headers({} if value is None else {b"Content-Type": value})
    assert media_type(headers) == expected
