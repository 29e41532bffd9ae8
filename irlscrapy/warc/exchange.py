"""One HTTP exchange, as the WARC records it: the request block and the response head.

Pure functions on bytes; no Scrapy, no I/O.

What is recorded, and where it differs from the bytes on the wire
------------------------------------------------------------------
Response (``WARC-Type: response``):

- The status line and header lines are the bytes received (kept by the download
  handler's parser, :func:`irlscrapy.runtime.internals.capture_heads`): original case, order,
  repeats, spacing and continuation lines; nothing normalized.
- The payload is the body as received *after* Twisted removed the chunked framing, and
  before any content decoding (a gzip body stays gzip, with its ``Content-Encoding``).
  A record whose payload is not framed the way its head says would be unreadable, so a
  dechunked response's head changes in exactly two ways (:func:`record_head`): the
  ``Transfer-Encoding`` line is renamed ``X-Crawler-Transfer-Encoding`` (its value kept)
  and a ``Content-Length`` line with the payload's length is added before the blank
  line (a ``Content-Length`` line the server sent alongside is renamed
  ``X-Crawler-Content-Length``). Chunk sizes, chunk extensions and trailers are not kept.
- A 1xx interim response before the final one is not recorded.

Request (``WARC-Type: request``): rebuilt from the Twisted request the handler sent,
field by field as Twisted writes it (:func:`request_block`), with two deliberate
differences: the target is written in origin form (``/path?query``) where a request
through an HTTP proxy used the absolute form, and ``Proxy-Authorization`` and
``Proxy-Connection`` are left out. Header names are as Twisted writes them (it
canonicalizes their case).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

#: Headers a request carries for the proxy only (compared lowercase).
PROXY_HEADERS = frozenset({b"proxy-authorization", b"proxy-connection"})
#: What a dechunked response's framing headers are renamed to.
RENAMED_PREFIX = b"X-Crawler-"


def origin_form(target: bytes) -> bytes:
    """``/path?query`` of an absolute-form request target (an origin form is kept)."""
    if target.startswith(b"/") or target == b"*":
        return target
    parts = urlsplit(target)
    path = parts.path or b"/"
    return path + b"?" + parts.query if parts.query else path


def request_block(
    method: bytes,
    target: bytes,
    headers: Iterable[tuple[bytes, Iterable[bytes]]],
    body: bytes,
    persistent: bool,
) -> bytes:
    """The request as Twisted's HTTP/1.1 client writes it, in origin form, without the
    proxy's headers; ``headers`` as ``Headers.getAllRawHeaders()`` yields them."""
    lines = [b"%s %s HTTP/1.1\r\n" % (method, origin_form(target))]
    if not persistent:
        lines.append(b"Connection: close\r\n")
    if body:
        lines.append(b"Content-Length: %d\r\n" % len(body))
    for name, values in headers:
        if name.lower() not in PROXY_HEADERS:
            lines.extend(name + b": " + value + b"\r\n" for value in values)
    lines.append(b"\r\n")
    return b"".join(lines) + body


def header_lines(head: bytes) -> list[bytes]:
    """The lines of a head (status line first), each with its line end."""
    return head.splitlines(keepends=True)


def _name(line: bytes) -> bytes:
    return line.split(b":", 1)[0].strip().lower() if b":" in line else b""


def is_chunked(head: bytes) -> bool:
    """Whether the head frames its body with a chunked Transfer-Encoding."""
    return any(
        _name(line) == b"transfer-encoding" and b"chunked" in line.lower()
        for line in header_lines(head)[1:]
    )


def record_head(head: bytes, payload_length: int) -> bytes:
    """The head to record with a payload of ``payload_length`` bytes: ``head`` itself,
    unless it announced chunked framing (see the module docstring)."""
    if not is_chunked(head):
        return head
    lines = header_lines(head)
    out = [lines[0]]
    for line in lines[1:]:
        if line in (b"\r\n", b"\n"):
            break
        if _name(line) in (b"transfer-encoding", b"content-length"):
            line = RENAMED_PREFIX + line
        out.append(line)
    out.append(b"Content-Length: %d\r\n\r\n" % payload_length)
    return b"".join(out)


def status_code(head: bytes) -> int:
    """The status code of a head's status line (0 if it has none)."""
    parts = header_lines(head)[0].split(None, 2) if head else []
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def rebuilt_head(
    protocol: str, status: int, headers: Iterable[tuple[bytes, Iterable[bytes]]]
) -> bytes:
    """A head rebuilt from a parsed response, for a response whose received head did not
    reach the recorder (the reason phrase is the standard one; see the recorder)."""
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    lines = [f"{protocol} {status} {phrase}\r\n".encode("latin-1")]
    for name, values in headers:
        lines.extend(name + b": " + value + b"\r\n" for value in values)
    lines.append(b"\r\n")
    return b"".join(lines)
