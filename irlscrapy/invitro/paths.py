"""The paths of an in-vitro host: how its pages and special URLs are written, and read back.

Each function here is a pure function of a :class:`~irlscrapy.invitro.host.Host` (or of
no host at all): :mod:`irlscrapy.invitro.linkplan` writes links with them and
:mod:`irlscrapy.invitro.replies` parses a requested path back with their inverses, so
a path answers 200 only if writing it again gives the same string.

Paths of a legitimate host (its page numbers run ``0 .. pages-1``)::

    /                          page 0; other pages by the host's path style:
    /{sec}/{n}.html | /{sec}/{n}/ | /{sec}?id={n}
    /robots.txt  /robots-real.txt (target of the "redirect" robots variant)
    /private/{n}.html          disallowed by most robots variants
    /go/{n}                    301 to page n          /away/{t}   302 to PLD t's home
    /loop/{n}/a <-> /loop/{n}/b  302 redirect loop
    /doc/{n}                   a PDF without an extension in its URL
    /files/{n}.pdf /img/{n}.jpg /dl/{n}.zip   non-HTML with telling extensions
    /big/{n}.html              a huge HTML page        /missing/{n} 404   /err/{n} 500
    /calendar?y=Y&m=M  /cart/{item}?sid=T  /lib/(more/)*     traps, on trap hosts only

Spam hosts have pages ``/`` and ``/p{n}`` for unbounded ``n`` (bounded in finite
profiles), and spam farms grow new hosts without end by linking to ever higher ``k``.
"""

from __future__ import annotations

import re

from irlscrapy.invitro.host import Host

SECTIONS = ("news", "blog", "wiki", "info", "article", "forum", "media", "story")
_NUM = r"(0|[1-9][0-9]*)"
#: The page path styles a legitimate host may use (:attr:`Host.style` indexes them).
PAGE_STYLES = (
    re.compile(rf"/([a-z]+)/{_NUM}\.html\Z"),
    re.compile(rf"/([a-z]+)/{_NUM}/\Z"),
    re.compile(rf"/([a-z]+)\?id={_NUM}\Z"),
)
_SPECIAL = re.compile(rf"/([a-z]+)/{_NUM}(?:\.(?:html|pdf|jpg|zip)|/([ab]))?\Z")
_SPAM_PAGE = re.compile(rf"/p{_NUM}\Z")


def page_path(host: Host, n: int) -> str:
    if n == 0:
        return "/"
    if host.spam:
        return f"/p{n}"
    sec = SECTIONS[n % len(SECTIONS)]
    return (f"/{sec}/{n}.html", f"/{sec}/{n}/", f"/{sec}?id={n}")[host.style]


def page_number(host: Host, path: str) -> int | None:
    """The page of ``host`` at ``path`` (the inverse of :func:`page_path`), or None."""
    if path == "/":
        return 0
    if host.spam:
        m = _SPAM_PAGE.match(path)
        n = int(m.group(1)) if m else None
    else:
        m = PAGE_STYLES[host.style].match(path)
        n = (
            int(m.group(2))
            if m and m.group(1) == SECTIONS[int(m.group(2)) % len(SECTIONS)]
            else None
        )
    if n is None or n == 0 or (host.pages is not None and n >= host.pages):
        return None
    return n


def special_path(what: str, num: int, tail: str) -> str | None:
    if what == "loop" and tail in ("a", "b"):
        return f"/loop/{num}/{tail}"
    return {
        "private": f"/private/{num}.html",
        "go": f"/go/{num}",
        "away": f"/away/{num}",
        "doc": f"/doc/{num}",
        "files": f"/files/{num}.pdf",
        "img": f"/img/{num}.jpg",
        "dl": f"/dl/{num}.zip",
        "big": f"/big/{num}.html",
        "missing": f"/missing/{num}",
        "err": f"/err/{num}",
    }.get(what)


def special_of(path: str) -> tuple[str, int] | None:
    """``(what, num)`` of a special path (the inverse of :func:`special_path`), or None."""
    m = _SPECIAL.match(path)
    if not m:
        return None
    what, num = m.group(1), int(m.group(2))
    if special_path(what, num, m.group(3) or "") != path:
        return None
    return what, num
