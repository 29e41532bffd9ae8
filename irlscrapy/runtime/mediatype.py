"""The media type of a response: its Content-Type without parameters, lower case
(``text/html; charset=UTF-8`` -> ``text/html``); "" without one."""

from __future__ import annotations

from scrapy.http.headers import Headers


def media_type(headers: Headers) -> str:
    raw = headers.get(b"Content-Type") or b""
    return raw.split(b";", 1)[0].strip().lower().decode("latin-1")
