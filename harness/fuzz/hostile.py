"""Hostile input, generated: URLs, HTML pages, robots.txt bodies, HTTP headers, DNS answers.

Each generator is a plain function of a :class:`random.Random`, and input ``i`` of a
run is ``GENERATORS[surface](rng_for(surface, seed, i))``: any input is reproduced from
(surface, seed, index) alone, and a run can resume at any index (bench/fuzz.py).

Every generator mixes, per input:

- an entry of the checked-in corpus (``corpus/``: inputs that broke something once, or
  that a standard calls out), as it is or mutated (bytes flipped, cut, spliced, a
  token repeated);
- the surface's grammar, with the hostile choices at high rates (odd schemes, userinfo,
  ports out of range, IPv6 literals, IDN and overlong labels, invalid percent-escapes,
  NUL bytes, mislabelled charsets, wildcard rules, Retry-After dates and garbage,
  truncated or looping DNS datagrams);
- at low rates, big inputs: a 1 MB URL, a page of 100,000 links, a 600 KiB robots.txt
  of 30,000 wildcard rules, a 1 MB attribute value (left out with ``big=False``).
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from twisted.names import dns

CORPUS = Path(__file__).parent / "corpus"
SURFACES = ("urls", "html", "robots", "headers", "dns")


def rng_for(surface: str, seed: int, index: int) -> random.Random:
    return random.Random(f"{surface}:{seed}:{index}")


# -- corpus ----------------------------------------------------------------------------
@cache
def corpus(surface: str) -> tuple[Any, ...]:
    """The checked-in entries of a surface, in a fixed order."""
    if surface in ("urls", "headers", "dns"):
        lines = (CORPUS / f"{surface}.jsonl").read_text(encoding="utf-8").splitlines()
        return tuple(json.loads(line) for line in lines if line.strip())
    folder = CORPUS / surface
    index = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines()]
    return tuple({**entry, "body": (folder / entry["file"]).read_bytes()} for entry in index)


def mutate(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one random damage: bytes flipped, cut, spliced or a run repeated."""
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    at = rng.randrange(len(data))
    how = rng.randrange(5)
    if how == 0:
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            flipped[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(flipped)
    if how == 1:
        return data[:at]
    if how == 2:
        end = min(len(data), at + rng.randrange(1, 64))
        return data[:at] + data[at:end] * rng.randrange(2, 50) + data[end:]
    if how == 3:
        return data[:at] + rng.choice(_NASTY_BYTES) + data[at:]
    other = rng.randrange(len(data))
    return data[:at] + data[other:] + data[:other]


_NASTY_BYTES = [
    b"\x00",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\r",
    b"\r\n",
    b"%",
    b"%zz",
    b"\xc3",
    b"<",
    b">",
    b'"',
    b"'",
    b"&#0;",
    b"&#x110000;",
    b"\\",
    b"\x85",
    b"\xe2\x80\xa8",
]


# -- URLs ------------------------------------------------------------------------------
_SCHEMES = [
    "http",
    "https",
    "HTTP",
    "hTtPs",
    "ftp",
    "file",
    "data",
    "javascript",
    "mailto",
    "ws",
    "h\tttp",
    "http ",
    "1http",
    "ht+tp",
    "",
    "feed:http",
    "view-source:http",
]
_SEPARATORS = ["://", "://", "://", ":", ":/", ":///", ":\\\\", "://\t", ": //", "//"]
_HOSTS = [
    "example.com",
    "a.b.example.co.uk",
    "EXAMPLE.COM",
    "example.com.",
    "localhost",
    "bücher.de",
    "xn--bcher-kva.de",
    "xn--",
    "xn--zz",
    "例え.テスト",
    "ſ.example",
    "a..b.com",
    ".example.com",
    "..",
    ".",
    "",
    "-a-.com",
    "a_b.com",
    "ex ample.com",
    "ex\x00ample.com",
    "exa%6dple.com",
    "%",
    "%zz.com",
    "\u200b.com",
    "🦀.rs",
    "1.2.3.4",
    "127.1",
    "0x7f.0.0.1",
    "017700000001",
    "4294967296",
    "256.256.1.1",
    "[::1]",
    "[::ffff:1.2.3.4]",
    "[fe80::1%25eth0]",
    "[::1",
    "::1]",
    "[zz]",
    "[]",
    "[1:2:3:4:5:6:7:8:9]",
    "[v1.x]",
    "a" * 63 + ".com",
    "a" * 64 + ".com",
    ".".join(["a" * 63] * 4) + ".com",
    "x" * 300,
]
_USERINFO = ["", "", "", "user@", "user:pass@", ":@", "@", "a@b@", "%40@", "us er@", "ü@"]
_PORTS = [
    "",
    "",
    "",
    ":",
    ":0",
    ":80",
    ":443",
    ":65535",
    ":65536",
    ":99999",
    ":-1",
    ":x",
    ":٣",
    ":08",
    ":" + "9" * 40,
    ": 80",
    ":80:80",
]
_SEGMENTS = [
    "a",
    "index.html",
    "..",
    ".",
    "",
    "%2e%2e",
    "%2E",
    "%",
    "%zz",
    "%0",
    "%00",
    "%C3%A9",
    "é",
    "\u0000",
    " ",
    "a b",
    "\t",
    "\\",
    "a;b=c",
    "~user",
    "%2F",
    "x.pdf",
    "x.JPG",
    "..%2f",
    "\ud800",
    "\U0001f980",
    "?",
    "#",
    "&amp;",
    "\n",
]


def host(rng: random.Random) -> str:
    if rng.random() < 0.3:
        labels = [
            "".join(rng.choice("ab-_0.%é\x00ß") for _ in range(rng.randrange(0, 8)))
            for _ in range(rng.randrange(1, 4))
        ]
        return ".".join(labels)
    return rng.choice(_HOSTS)


def url(rng: random.Random, big: bool = True) -> str:
    """A URL as a page or a user might write it: mostly hostile, sometimes huge
    (unless not ``big``)."""
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(corpus("urls"))["url"]
    if roll < 0.25:
        raw = rng.choice(corpus("urls"))["url"].encode("utf-8", "surrogatepass")
        return mutate(rng, raw).decode("utf-8", "replace")
    if roll < 0.2501 and big:
        return "http://example.com/" + "a" * rng.choice([100_000, 1_000_000])
    scheme = rng.choice(_SCHEMES)
    sep = rng.choice(_SEPARATORS)
    path = "/".join(rng.choice(_SEGMENTS) for _ in range(rng.randrange(0, 8)))
    query = (
        ""
        if rng.random() < 0.6
        else "?"
        + "&".join(
            f"{rng.choice(_SEGMENTS)}={rng.choice(_SEGMENTS)}" for _ in range(rng.randrange(4))
        )
    )
    fragment = "" if rng.random() < 0.8 else "#" + rng.choice(_SEGMENTS)
    authority = f"{rng.choice(_USERINFO)}{host(rng)}{rng.choice(_PORTS)}"
    return f"{scheme}{sep}{authority}/{path}{query}{fragment}"


def href(rng: random.Random) -> str:
    """An href value: a URL, or relative, protocol-relative, fragment, odd."""
    roll = rng.random()
    if roll < 0.4:
        return url(rng)
    if roll < 0.55:
        return "//" + host(rng) + rng.choice(_PORTS) + "/" + rng.choice(_SEGMENTS)
    if roll < 0.9:
        return rng.choice(["/", "", "./", "../", "?"]) + "/".join(
            rng.choice(_SEGMENTS) for _ in range(rng.randrange(0, 4))
        )
    return rng.choice(
        [
            "#",
            "#top",
            "",
            " ",
            "mailto:x@y",
            "javascript:alert(1)",
            "data:,x",
            "\x00",
            "&#104;ttp://e.com/",
            "http:",
            "http://",
            "//",
            "///x",
        ]
    )


# -- HTML pages ------------------------------------------------------------------------
@dataclass(frozen=True)
class Page:
    url: str
    headers: dict[str, bytes]
    body: bytes


_CHARSETS = [
    "utf-8",
    "UTF-8",
    "iso-8859-1",
    "latin1",
    "windows-1252",
    "shift_jis",
    "euc-jp",
    "utf-16",
    "utf-16le",
    "utf-7",
    "gb18030",
    "koi8-r",
    "x-unknown",
    "",
    "utf8mb4",
    "\x00",
    "utf-8; charset=latin1",
    "'utf-8'",
]
_TYPES = [
    b"text/html",
    b"text/html",
    b"text/html",
    b"application/xhtml+xml",
    b"TEXT/HTML",
    b"text/plain",
    b"application/octet-stream",
    b"",
    b"text/html\x00",
    b"text/htm",
    b"image/png",
    b"text/html; text/plain",
]


def _link(rng: random.Random) -> str:
    value = href(rng).replace('"', "&quot;") if rng.random() < 0.7 else href(rng)
    quote = rng.choice(['"', "'", ""])
    attrs = rng.choice(["", ' rel="nofollow"', " x=y", " href=", "\n", " data-a=\"<a href='/z'>\""])
    tag = rng.choice(["a", "A", "area", "a\t", "a\n"])
    close = rng.choice([">x</a>", ">", "", "/>", "><a", ">\x00</a>"])
    return f"<{tag}{attrs} href={quote}{value}{quote}{close}"


_PIECES = [
    "<!-- <a href='/in-comment'> -->",
    "<![CDATA[<a href='/cdata'>]]>",
    "<script>var a='<a href=\"/s\">';</script>",
    "<base href='{h}'>",
    "<BASE HREF={h}>",
    "<base>",
    "<meta name=robots content=nofollow>",
    "<meta name='robots' content='noindex'>",
    "<meta charset='{c}'>",
    "<meta http-equiv=content-type content='text/html; charset={c}'>",
    "<p>",
    "</div>",
    "<",
    "<a",
    "<a ",
    "<a href",
    "&",
    "&#x0;",
    "&#99999999;",
    "&amp;",
    "\x00",
    "\ufeff",
    "\r",
    "<svg><a xlink:href='/svg'>",
    "<table><tr><td>",
    "<!DOCTYPE html>",
    "<html lang=\u202e>",
]


def page(rng: random.Random, big: bool = True) -> Page:
    """An HTML page with hostile markup, declared and actual encodings that disagree,
    and, at low rates, a huge attribute or 100,000 links."""
    page_url = (
        "http://"
        + rng.choice(["site.example", "bücher.de", "a.example:8080", "[::1]:8080", "127.0.0.1"])
        + "/dir/page.html"
    )
    charset = rng.choice(_CHARSETS)
    content_type = rng.choice(_TYPES)
    if charset and rng.random() < 0.6:
        content_type += b"; charset=" + charset.encode("latin-1", "replace")
    headers = {"Content-Type": content_type}
    if rng.random() < 0.05:
        headers["X-Robots-Tag"] = rng.choice(
            [b"nofollow", b"googlebot: nofollow", b"none", b"noindex,\xffnofollow", b""]
        )
    roll = rng.random()
    if roll < 0.15:
        entry = rng.choice(corpus("html"))
        body = entry["body"] if rng.random() < 0.5 else mutate(rng, entry["body"])
        headers["Content-Type"] = entry["content_type"].encode("latin-1")
        return Page(entry["url"], headers, body)
    if roll < 0.1505 and big:
        links = b"".join(b'<a href="/p/%d">x</a>' % n for n in range(100_000))
        return Page(page_url, {"Content-Type": b"text/html"}, b"<html><body>" + links)
    if roll < 0.1510 and big:
        value = "x" * 1_000_000
        return Page(page_url, headers, f'<html><a title="{value}" href="/after">'.encode())
    parts = []
    for _ in range(rng.randrange(0, 60)):
        if rng.random() < 0.5:
            parts.append(_link(rng))
        else:
            parts.append(rng.choice(_PIECES).format(h=href(rng), c=rng.choice(_CHARSETS)))
    text = "".join(parts)
    encoding = rng.choice(["utf-8", "latin-1", "shift_jis", "utf-16", "utf-16-le", "cp1252"])
    body = (
        text.encode(encoding, "replace")
        if encoding != "utf-8"
        else text.encode("utf-8", "surrogatepass")
    )
    if rng.random() < 0.1:
        body = mutate(rng, body)
    return Page(page_url, headers, body)


# -- robots.txt ------------------------------------------------------------------------
_AGENTS = ["*", "irlscrapy", "IRLSCRAPY", "irlscrapy/1.0", "Googlebot", "", "* *", "irl*", "\x00"]
_RULE_PATHS = [
    "/",
    "",
    "/a",
    "/*",
    "/*.pdf$",
    "/a*b*c",
    "*",
    "$",
    "/%2F",
    "/%zz",
    "/é",
    "/%C3%A9",
    "/a$b",
    "/**",
    "/?q=",
    "/" + "*a" * 40,
    "/" + "*" * 200,
    "//",
    "/\x00",
]
_DIRECTIVES = [
    "User-agent",
    "user-agent",
    "USER-AGENT",
    "Disallow",
    "Allow",
    "disallow",
    "Crawl-delay",
    "crawl-delay",
    "Sitemap",
    "Request-rate",
    "Host",
    "Noindex",
    "Visit-time",
    "",
    "Dis allow",
    "Disallow\x00",
]
_DELAYS = [
    "5",
    "0",
    "0.5",
    "-1",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "1e-400",
    "",
    "abc",
    "5 seconds",
    "9" * 400,
    "0x10",
    "1_000",
    "٣",
]


def robots(rng: random.Random, big: bool = True) -> tuple[int, bytes]:
    """A robots.txt answer: an HTTP status and a body of hostile directives."""
    status = rng.choice([200] * 8 + [204, 301, 404, 410, 429, 500, 503, 999, 0])
    roll = rng.random()
    if roll < 0.15:
        entry = rng.choice(corpus("robots"))
        return entry["status"], entry["body"] if rng.random() < 0.5 else mutate(rng, entry["body"])
    if roll < 0.151 and big:
        rules = "".join(f"Disallow: /{'*a' * rng.randrange(1, 6)}{n}\n" for n in range(30_000))
        return 200, ("User-agent: *\n" + rules).encode()
    if roll < 0.16:
        return status, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096)))
    lines = []
    for _ in range(rng.randrange(0, 40)):
        name = rng.choice(_DIRECTIVES)
        if name.lower().startswith("user"):
            value = rng.choice(_AGENTS)
        elif name.lower().startswith("crawl"):
            value = rng.choice(_DELAYS)
        else:
            value = rng.choice(_RULE_PATHS)
        sep = rng.choice([": ", ":", " : ", " ", "::"])
        comment = rng.choice(["", "", " # c", "#"])
        lines.append(f"{name}{sep}{value}{comment}")
    newline = rng.choice(["\n", "\r\n", "\r", "\n\n"])
    text = newline.join(lines)
    body = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        body = b"\xef\xbb\xbf" + body
    if rng.random() < 0.05:
        body = text.encode("utf-16")
    return status, body


# -- HTTP headers ----------------------------------------------------------------------
_RETRY_AFTER = [
    b"120",
    b"0",
    b"-1",
    b"1.5",
    b"\xb2",
    b"9" * 400,
    b"",
    b" 30 ",
    b"+5",
    b"Wed, 21 Oct 2015 07:28:00 GMT",
    b"Fri, 31 Dec 9999 23:59:59 GMT",
    b"Mon, 01 Jan 0001 00:00:00 GMT",
    b"Wed, 21 Oct 2015 07:28:00",
    b"yesterday",
    b"Sun, 06 Nov 1994 08:49:37 +9999",
    b"Thu, 01 Jan 1970 00:00:00 GMT",
    b"\x00",
    b"\xff\xfe",
    b"Wed, 32 Oct 2015 25:61:61 GMT",
    b"1e9",
]
_LOCATIONS = [
    b"/",
    b"/next",
    b"http://site.example/loop",
    b"//other.example/x",
    b"",
    b"?",
    b"javascript:x",
    b"mailto:a@b",
    b"http://[::1",
    b"http://a.com:99999/",
    b"\xff\xfe/x",
    b"/\x00",
    b"http://b\xc3\xbccher.de/",
    b"ftp://f/x",
    b"%zz",
    b"http:",
    b"http:///x",
    b"\\\\evil.example",
    b"/" + b"a" * 9000,
]


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]


def headers(rng: random.Random, big: bool = True) -> Answer:
    """An HTTP answer's status and headers: Retry-After, Content-Type and charset,
    Location (loops, relative, garbage), X-Robots-Tag, Content-Encoding."""
    if rng.random() < 0.15:
        entry = rng.choice(corpus("headers"))
        pairs = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in entry["headers"]]
        return Answer(entry["status"], pairs)
    status = rng.choice([200, 301, 302, 303, 307, 308, 404, 429, 500, 503, 304, 999, 100])
    pairs: list[tuple[bytes, bytes]] = []
    for _ in range(rng.randrange(0, 6)):
        name = rng.choice(
            [
                b"Retry-After",
                b"Content-Type",
                b"Location",
                b"X-Robots-Tag",
                b"Content-Encoding",
                b"retry-after",
                b"LOCATION",
            ]
        )
        if name.lower() == b"retry-after":
            value = rng.choice(_RETRY_AFTER)
        elif name.lower() == b"location":
            value = rng.choice(_LOCATIONS)
        elif name == b"Content-Type":
            value = rng.choice(_TYPES) + rng.choice(
                [b"", b"; charset=" + rng.choice(_CHARSETS).encode("latin-1", "replace")]
            )
        elif name == b"X-Robots-Tag":
            value = rng.choice([b"nofollow", b"bot: nofollow", b"none", b",,", b"\xff"])
        else:
            value = rng.choice([b"gzip", b"br", b"deflate", b"zstd", b"gzip, br", b"x", b""])
        if rng.random() < 0.1:
            value = mutate(rng, value)
        pairs.append((name, value))
    return Answer(status, pairs)


# -- DNS answers -----------------------------------------------------------------------
def dns_answer(rng: random.Random, big: bool = True) -> tuple[str, bytes]:
    """A name and the datagram a server answers it with: well-formed messages of odd
    content (no A record, CNAMEs, TTL 0 or 2^32-1, private and reserved addresses, error
    codes, the truncated flag), damaged ones, and raw bytes."""
    name = rng.choice(["site.example", "a.b.example", "x" * 63 + ".example", "bücher.de"])
    if rng.random() < 0.15:
        entry = rng.choice(corpus("dns"))
        wire = bytes.fromhex(entry["wire"])
        return entry["name"], wire if rng.random() < 0.5 else mutate(rng, wire)
    message = dns.Message(
        id=rng.randrange(65536),
        answer=1,
        rCode=rng.choice([dns.OK] * 6 + [dns.ENAME, dns.ESERVER, dns.EREFUSED, dns.EFORMAT, 9, 15]),
    )
    message.trunc = int(rng.random() < 0.05)
    message.queries = [dns.Query(name.encode("idna") if name.isascii() else b"xn--bcher-kva.de")]
    for _ in range(rng.randrange(0, 5)):
        owner = rng.choice([name, "other.example", "", "a" * 63])
        ttl = rng.choice([0, 1, 300, 86400, 2**31 - 1, 2**32 - 1])
        kind = rng.random()
        if kind < 0.6:
            address = rng.choice(
                [
                    "93.184.216.34",
                    "127.0.0.1",
                    "10.0.0.1",
                    "0.0.0.0",
                    "255.255.255.255",
                    "169.254.169.254",
                    "100.64.0.1",
                    "224.0.0.1",
                    "192.168.1.1",
                    "8.8.8.8",
                ]
            )
            record: Any = dns.Record_A(address, ttl)
            kind_code = dns.A
        elif kind < 0.75:
            record, kind_code = dns.Record_AAAA("::1", ttl), dns.AAAA
        elif kind < 0.9:
            record, kind_code = dns.Record_CNAME(rng.choice([name, "c.example"]), ttl), dns.CNAME
        else:
            record, kind_code = dns.Record_TXT(b"x" * rng.randrange(200), ttl=ttl), dns.TXT
        message.answers.append(
            dns.RRHeader(
                owner.encode("idna") if owner.isascii() else b"x", kind_code, dns.IN, ttl, record
            )
        )
    wire = message.toStr()
    if rng.random() < 0.3:
        wire = mutate(rng, wire)
    elif rng.random() < 0.05:  # a compression pointer that points at itself
        wire = wire[:12] + struct.pack("!H", 0xC000 | 12) + wire[14:]
    return name, wire


#: surface -> generator(rng, big): ``big`` False leaves out the big inputs (the suite
#: has a test of its own for each).
GENERATORS: dict[str, Callable[[random.Random, bool], Any]] = {
    "urls": url,
    "html": page,
    "robots": robots,
    "headers": headers,
    "dns": dns_answer,
}
