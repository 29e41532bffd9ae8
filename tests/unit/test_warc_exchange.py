"""The bytes of one exchange as the WARC records them (irlscrapy.warc.exchange)."""

from __future__ import annotations

from io import BytesIO

from hypothesis import given
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeadersParser

from irlscrapy.warc.exchange import (
    is_chunked,
    origin_form,
    rebuilt_head,
    record_head,
    request_block,
    status_code,
)

token = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-", min_size=1)
value = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
header = st.tuples(token, value).filter(
    lambda h: h[0].lower() not in ("transfer-encoding", "content-length")
)


def _head(status: int, headers: list[tuple[str, str]], end: str = "\r\n") -> bytes:
    lines = [f"HTTP/1.1 {status} Whatever"] + [f"{n}:{v}" for n, v in headers]
    return (end.join(lines) + end + end).encode("latin-1")


def test_an_absolute_target_becomes_origin_form() -> None:
    assert origin_form(b"http://example.com:8080/a/b?x=1&y=2") == b"/a/b?x=1&y=2"
    assert origin_form(b"http://example.com") == b"/"
    assert origin_form(b"/already?q") == b"/already?q"


def test_the_request_block_leaves_the_proxys_headers_out() -> None:
    block = request_block(
        b"GET",
        b"http://example.com/p?q=1",
        [
            (b"Host", [b"example.com"]),
            (b"Proxy-Authorization", [b"Basic eA=="]),
            (b"Accept", [b"text/html", b"*/*"]),
        ],
        b"",
        persistent=False,
    )
    assert block == (
        b"GET /p?q=1 HTTP/1.1\r\nConnection: close\r\nHost: example.com\r\n"
        b"Accept: text/html\r\nAccept: */*\r\n\r\n"
    )


def test_a_request_body_comes_with_its_length() -> None:
    block = request_block(b"POST", b"/f", [(b"Host", [b"h"])], b"a=1", persistent=True)
    assert block == b"POST /f HTTP/1.1\r\nContent-Length: 3\r\nHost: h\r\n\r\na=1"


@given(st.integers(100, 599), st.lists(header, max_size=8), st.sampled_from(["\r\n", "\n"]))
def test_a_head_without_chunked_framing_is_recorded_unchanged(
    status: int, headers: list[tuple[str, str]], end: str
) -> None:
    head = _head(status, headers, end)
    assert record_head(head, 12345) == head
    assert status_code(head) == status


@given(st.lists(header, max_size=8), st.integers(0, 10**9))
def test_a_dechunked_head_announces_the_payloads_length(
    headers: list[tuple[str, str]], length: int
) -> None:
    head = _head(200, [*headers, ("transfer-encoding", " chunked")])
    assert is_chunked(head)
    recorded = record_head(head, length)
    assert not is_chunked(recorded)
    parsed = StatusAndHeadersParser([], verify=False).parse(BytesIO(recorded))
    assert parsed.get_header("Content-Length") == str(length)
    assert parsed.get_header("X-Crawler-transfer-encoding") == "chunked"
    assert recorded.startswith(head[: head.index(b"transfer-encoding")])


def test_a_rebuilt_head_uses_the_standard_reason_phrase() -> None:
    head = rebuilt_head("HTTP/1.1", 404, [(b"Content-Type", [b"text/html"])])
    assert head == b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n"
    assert rebuilt_head("HTTP/1.0", 599, []) == b"HTTP/1.0 599 \r\n\r\n"
