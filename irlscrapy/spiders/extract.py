"""Link extraction and URL filters of the broad spider. Imports nothing from Scrapy.

The in-vitro ground truth (:mod:`irlscrapy.oracle.groundtruth`) applies the very same
functions, so "what the spider follows" has one definition.

The extractor is a byte regex over ``<a ... href=...>``, chosen by measurement
(``python bench/extract.py``): on broad-profile pages it costs about a quarter of an
lxml parse and a fiftieth of Scrapy's LinkExtractor. What it gives up: hrefs inside HTML
comments and ``<script>`` text are also taken (harmless for a crawler; IRLbot did the
same), and only ``<a>`` and ``<area>`` links count.
"""

from __future__ import annotations

import html
import ipaddress
import re
from collections.abc import Iterable, Iterator
from urllib.parse import urljoin, urlsplit

# A tag's attributes are scanned up to its ">" and never past a "<": a long run without
# ">" (a hostile page of "<a <a <a ...") would otherwise be rescanned from every "<a",
# quadratic in the page (120 KB took 13 s). An href after an attribute value holding a
# "<" is missed (no browser-made page has one unescaped).
_HREF = re.compile(rb"""<a(?:rea)?\s[^<>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.I)
_BASE = re.compile(rb"""<base\s[^<>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.I)
_META_ROBOTS = re.compile(rb"""<meta\s[^<>]*?name\s*=\s*["']?robots["']?[^<>]*>""", re.I)
# shapes urljoin rewrites (_slow_path): dot segments, odd characters, an empty query or
# params, and schemes without "//"
_WHITESPACE = re.compile(r"\s")
_OPAQUE_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:(?!//)")
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_BLANK = re.compile(r"[\x00-\x20\x7f]")
#: Authorities whose crawlability is memoized, at most (_authority_fetchable).
AUTHORITY_MEMO = 4096
_authorities: dict[str, bool] = {}
_HEAD_BYTES = 16 * 1024  # meta robots and <base> are looked for this far into the page
#: URLs per slice of a page's links (:func:`links_in_slices`). A slice costs about 5 ms
#: from extraction to URLseen, so a page of 100,000 links never holds a reactor 50 ms.
LINK_SLICE = 2000

#: Path extensions of resources that are not HTML; links to them are not followed.
NON_HTML_EXTENSIONS = frozenset(
    [
        "7z",
        "ai",
        "apk",
        "avi",
        "bin",
        "bmp",
        "bz2",
        "css",
        "csv",
        "deb",
        "dmg",
        "doc",
        "docx",
        "eot",
        "exe",
        "flv",
        "gif",
        "gz",
        "ico",
        "iso",
        "jar",
        "jpeg",
        "jpg",
        "js",
        "json",
        "m4a",
        "m4v",
        "mkv",
        "mov",
        "mp3",
        "mp4",
        "mpeg",
        "mpg",
        "msi",
        "odp",
        "ods",
        "odt",
        "ogg",
        "pdf",
        "png",
        "ppt",
        "pptx",
        "ps",
        "rar",
        "rpm",
        "rss",
        "svg",
        "swf",
        "tar",
        "tgz",
        "tif",
        "tiff",
        "ttf",
        "txt",
        "wav",
        "webm",
        "webp",
        "wma",
        "wmv",
        "woff",
        "woff2",
        "xls",
        "xlsx",
        "xz",
        "zip",
    ]
)
CRAWLABLE_SCHEMES = ("http://", "https://")


def extract_hrefs(body: bytes) -> list[str]:
    """The href values of the page's links, entity-decoded, in document order."""
    return [_href(m) for m in _HREF.finditer(body)]


def _href(m: re.Match[bytes]) -> str:
    raw = m.group(1) or m.group(2) or m.group(3) or b""
    value = raw.decode("utf-8", "replace").strip()
    return html.unescape(value) if "&" in value else value


def base_url(body: bytes, page_url: str) -> str:
    """The URL relative links resolve against: ``<base href>`` if the page has one."""
    m = _BASE.search(body, 0, _HEAD_BYTES)
    if not m:
        return page_url
    href = (m.group(1) or m.group(2) or m.group(3) or b"").decode("utf-8", "replace").strip()
    return resolve_base(page_url, html.unescape(href))


def resolve_base(page_url: str, base_href: str) -> str:
    """The URL a page's relative links resolve against, given its entity-decoded
    ``<base href>`` value ("" when it has none, or one urljoin refuses)."""
    try:
        return urljoin(page_url, _slashes(base_href)) if base_href else page_url
    except ValueError:  # (an invalid IPv6 literal, say)
        return page_url


def meta_nofollow(body: bytes) -> bool:
    """True if a ``<meta name="robots">`` in the page's head says nofollow (or none)."""
    for m in _META_ROBOTS.finditer(body, 0, _HEAD_BYTES):
        content = re.search(rb"""content\s*=\s*["']?([^"'>]*)""", m.group(0), re.I)
        if content and _says_nofollow(content.group(1).decode("latin-1")):
            return True
    return False


def header_nofollow(values: Iterable[bytes]) -> bool:
    """True if X-Robots-Tag header values say nofollow (or none) for every agent."""
    for value in values:
        text = value.decode("latin-1")
        if ":" in text.split(",", 1)[0]:  # "googlebot: nofollow" names another agent
            continue
        if _says_nofollow(text):
            return True
    return False


def _says_nofollow(directives: str) -> bool:
    words = {w.strip().lower() for w in directives.split(",")}
    return "nofollow" in words or "none" in words


def absolute_url(base: str, href: str) -> str | None:
    """``urljoin(base, href)`` without its fragment; None for a same-page fragment link.

    Absolute http(s) and root-relative hrefs take a fast path; anything else (relative
    paths, dot segments, protocol-relative, odd characters) goes through ``urljoin``.
    Equivalence with ``urljoin`` is a tested property, once backslashes are read as
    slashes (:func:`_slashes`).
    """
    if not href or href[0] == "#":
        return None
    if "\\" in href:
        href = _slashes(href)
    try:
        if _slow_path(href):
            url = urljoin(base, href)
        elif href.startswith(CRAWLABLE_SCHEMES):
            url = href
        elif href[0] == "/" and not href.startswith("//") and "//" in base:
            url = base[: _first_of(base, "/?#", base.index("//") + 2)] + href
        else:
            url = urljoin(base, href)
    except ValueError:  # urljoin refuses it (an invalid IPv6 literal): no link
        return None
    hash_at = url.find("#")
    return url if hash_at < 0 else url[:hash_at]


def _slow_path(href: str) -> bool:
    """Does ``href`` have a shape urljoin rewrites (then it goes through urljoin)? A
    substring search each, and one regular expression of a single class: an alternation
    of them all took 40 ms on a 1 MB link, and twice as long on a short one."""
    return (
        "/." in href
        or "\\" in href
        or "%2e" in href
        or "%2E" in href
        or ";" in href
        or "?#" in href
        or href.endswith("?")
        or _OPAQUE_SCHEME.match(href) is not None
        or _WHITESPACE.search(href) is not None
    )


def _slashes(ref: str) -> str:
    """``ref`` (a URL or a relative reference) with the backslashes before its query
    read as slashes, as browsers and w3lib (so Scrapy's Request) read http(s) URLs:
    ``http://a.com\\p`` is ``http://a.com/p``. urljoin keeps them, and the host the
    frontier keys, asks DNS and robots.txt for would not be the host Scrapy fetches.
    A reference to another scheme is left as it is."""
    scheme = _SCHEME.match(ref)
    if scheme is not None and scheme.group(0).lower() not in ("http:", "https:"):
        return ref
    end = _first_of(ref, "?#", 0)
    return ref[:end].replace("\\", "/") + ref[end:]


def crawlable(url: str) -> bool:
    """True for http(s) URLs whose path does not end in a known non-HTML extension,
    and which a Request can be made of (a host; no lone surrogate)."""
    if not url.startswith(CRAWLABLE_SCHEMES) or not (url.isascii() or _encodable(url)):
        return False
    start = url.index("//") + 2
    end = _first_of(url, "?#", start)
    if not _authority_fetchable(url[start : _first_of(url, "/", start, end)]):
        return False
    slash = url.rfind("/", start, end)
    if slash < 0:
        return True
    dot = url.rfind(".", slash, end)
    return dot < 0 or url[dot + 1 : end].lower() not in NON_HTML_EXTENSIONS


def links_to_follow(page_url: str, body: bytes) -> list[str]:
    """Absolute, crawlable, de-duplicated URLs of a page's links, in document order."""
    return [url for urls in links_in_slices(page_url, body) for url in urls]


def links_in_slices(page_url: str, body: bytes, size: int = LINK_SLICE) -> Iterator[list[str]]:
    """:func:`links_to_follow`'s URLs in lists of at most ``size``, each found only when
    it is asked for, so a caller can hand each slice on in a reactor turn of its own.

    The URLs already yielded are remembered by their hash, not kept alive: a page of
    100,000 links would otherwise hold all of them until its end, and the small-object
    arenas they fill stay resident after (CPython frees an arena only when all of it
    is free). Two distinct URLs of one page with equal 64-bit hashes (about 1 in 10^9
    for 100,000 links) lose the second, which the next page that links it finds again."""
    base = base_url(body, page_url)
    seen: set[int] = set()
    urls: list[str] = []
    for m in _HREF.finditer(body):
        url = _follow(page_url, base, _href(m))
        if url is not None and (key := hash(url)) not in seen:
            seen.add(key)
            urls.append(url)
            if len(urls) == size:
                yield urls
                urls = []
    if urls:
        yield urls


def resolve_links(page_url: str, base: str, hrefs: Iterable[str]) -> list[str]:
    """Absolute, crawlable, de-duplicated URLs of ``hrefs`` found on ``page_url``,
    resolved against ``base`` (:func:`base_url`), in order."""
    urls = (_follow(page_url, base, href) for href in hrefs)
    return list(dict.fromkeys(url for url in urls if url is not None))


def _follow(page_url: str, base: str, href: str) -> str | None:
    """The crawlable URL ``href`` on ``page_url`` (relative to ``base``) names, if any.

    An empty or fragment-only href names the page itself, unless a ``<base href>``
    points elsewhere: then it names the base's document, as browsers and Scrapy's
    LinkExtractor resolve it (HTML: a link's URL is parsed against the document's base
    URL)."""
    if base != page_url and href[:1] in ("", "#"):
        href = base
    url = absolute_url(base, href)
    return url if url is not None and crawlable(url) else None


def _encodable(url: str) -> bool:
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a user's string
        return False
    return True


def _authority_fetchable(authority: str) -> bool:
    """:func:`_authority_ok`, and the netloc checks urlsplit makes (NFKC look-alikes of
    "/?#@:" in a non-ASCII name, IPv6 literals), as Scrapy's Request and w3lib make
    them: memoized (at most :data:`AUTHORITY_MEMO`), since a page's links mostly share
    one authority and an IPv6 literal's checks cost 20 us a link."""
    fetchable = _authorities.get(authority)
    if fetchable is None:
        fetchable = _authority_ok(authority)
        if fetchable and (not authority.isascii() or "[" in authority or "]" in authority):
            try:
                _ = urlsplit(f"http://{authority}/").port  # (they read the netloc only)
            except ValueError:
                fetchable = False
        if len(_authorities) >= AUTHORITY_MEMO:
            _authorities.clear()  # (as domains.PayLevelDomains)
        _authorities[authority] = fetchable
    return fetchable


def _authority_ok(authority: str) -> bool:
    """Does ``[userinfo@]host[:port]`` parse as the URL's identity (irlscrapy.
    dupefilters.urlkey) needs: a host, a port of digits up to 65535, an IPv6 literal
    that is one? A link that fails could never be fetched."""
    userinfo, _, host = authority.rpartition("@")
    if not host.partition(":")[0].strip("."):  # no name: "", ":80", ".", ".."
        return False
    if "\\" in authority or "[" in userinfo or "]" in userinfo or _BLANK.search(host):
        # a backslash ends the authority for Request, which also drops tabs and line
        # ends: it would fetch another host than the one scheduled; nor does DNS know a
        # name with a space or a control character
        return False
    if host.startswith("["):
        literal, bracket, port = host[1:].partition("]")
        try:
            if not literal.isascii():
                return False
            ipaddress.IPv6Address(literal)  # (a zone id too, as w3lib checks it)
        except ValueError:
            return False
        if not bracket or (port and not port.startswith(":")):
            return False
        port = port[1:]
    elif "[" in host or "]" in host:
        return False  # half an IPv6 literal
    else:
        port = host.partition(":")[2] if ":" in host else ""
    return not port or (port.isascii() and port.isdigit() and int(port) <= 65535)


def _first_of(text: str, chars: str, start: int, end: int | None = None) -> int:
    """Where the first of ``chars`` in ``text[start:end]`` is (``end`` if none is)."""
    end = len(text) if end is None else end
    for char in chars:
        at = text.find(char, start, end)
        if at >= 0:
            end = at
    return end
