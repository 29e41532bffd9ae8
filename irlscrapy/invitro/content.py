"""What the in-vitro server sends: the Reply type and the bytes of pages and files.

Filler text comes from one fixed corpus (independent of any web seed), sliced at offsets
the page's own random generator picks, so a 25 KB page costs a few string slices.
"""

from __future__ import annotations

import html
import random
from collections.abc import Sequence
from typing import NamedTuple


def make_corpus() -> str:
    """Filler text: pseudo-words from a fixed generator, independent of any web seed."""
    rng = random.Random(20070609)  # the day IRLbot's crawl began; DO NOT CHANGE
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ru",
        "sa",
        "to",
        "vi",
        "de",
        "po",
        "lan",
        "ter",
        "bri",
        "cos",
        "mun",
        "dal",
        "fer",
        "gil",
        "hop",
        "jun",
    ]
    words = []
    for _ in range(40_000):
        w = "".join(
            syllables[int(rng.random() * len(syllables))] for _ in range(1 + int(rng.random() * 3))
        )
        words.append(w + ("." if rng.random() < 0.08 else ""))
    return " ".join(words) + " "


CORPUS = make_corpus()
CORPUS_LEN = len(CORPUS)
CORPUS_WRAPPED = CORPUS + CORPUS  # any slice shorter than the corpus fits without wrap


class Reply(NamedTuple):
    """What the server does with one request."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    kind: str  # page, robots, redirect, error, nonhtml, reset, timeout, dns-error, refused
    links: tuple[str, ...] = ()  # hrefs as written in the page (before HTML escaping)
    nofollow: bool = False  # meta robots or X-Robots-Tag says nofollow
    delay: float = 0.0  # seconds before the reply starts
    #: "send", "reset" (RST, nothing sent), "hang" (hold, then close), "refuse" (no
    #: server listens on the scheme's port: the connection never opens)
    action: str = "send"
    chunked: bool = False
    base: str = ""  # the page's <base href> as written (before HTML escaping); "" if none

    @property
    def location(self) -> str | None:
        for name, value in self.headers:
            if name == "Location":
                return value
        return None


_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def reason(status: int) -> str:
    return _REASONS.get(status, "Unknown")


def plain(status: int, kind: str, text: str, content_type: str = "text/plain") -> Reply:
    return Reply(status, (("Content-Type", content_type),), text.encode(), kind)


def redirect(status: int, location: str) -> Reply:
    return Reply(status, (("Location", location),), b"", "redirect")


def binary(magic: bytes, trailer: bytes, num: int, content_type: str) -> Reply:
    o = (num * 7919) % (CORPUS_LEN - 8192)
    body = magic + CORPUS[o : o + 4096 + num % 4096].encode() + trailer
    return Reply(200, (("Content-Type", content_type),), body, "nonhtml")


def html_page(
    title: str,
    links: Sequence[str],
    size: int,
    rng: random.Random,
    meta_nofollow: bool,
    base: str = "",
) -> bytes:
    """An HTML page of about ``size`` bytes whose anchors are ``links``, in order, and
    whose head carries ``<base href>`` when ``base`` is given."""
    meta = '<meta name="robots" content="noindex, nofollow">' if meta_nofollow else ""
    if base:
        meta += f'<base href="{html.escape(base)}">'
    head = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title>{meta}</head>\n<body><h1>{title}</h1>\n"
    )
    filler = min(max(0, (size - len(head)) // (len(links) + 1) - 40), CORPUS_LEN)
    parts = [head]
    for href in links:
        o = int(rng.random() * CORPUS_LEN)
        a = int(rng.random() * (CORPUS_LEN - 40))
        if "&" in href or '"' in href or "<" in href:
            href = html.escape(href)
        parts.append(
            f'<p>{CORPUS_WRAPPED[o : o + filler]} <a href="{href}">'
            f"{CORPUS[a : a + 12 + (a % 17)].strip()}</a></p>\n"
        )
    tail = size % CORPUS_LEN
    parts.append(f"<p>{CORPUS_WRAPPED[tail : tail + filler]}</p></body></html>\n")
    return "".join(parts).encode()


def huge_html(num: int, size: int) -> bytes:
    """A page of ``size`` bytes of text with one link home."""
    text = CORPUS * (size // CORPUS_LEN + 1)
    return (
        f"<!DOCTYPE html>\n<html><head><title>big {num}</title></head><body>"
        f'<a href="/">home</a><p>{text[:size]}</p></body></html>\n'
    ).encode()
