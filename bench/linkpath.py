"""The link path's parts per page, no network (issue 40): URL identity, today's canonical
form and BLAKE2b key against native libraries made for the job (part 3); and the
Referer of a page's links asked per class of target against per target origin (part 2).

    pip install -e '.[bench]'          # ada-url and xxhash
    python bench/linkpath.py [--quick]

URLs: every followable link (:func:`irlscrapy.spiders.extract.links_to_follow`) of the
first :data:`PAGE_COUNT` HTML pages of a breadth-first crawl of the broad in-vitro web
(``irlscrapy invitro urls --profile broad``), as the spider hands them to the
scheduler; and the same URLs *respelled* the ways URLs arrive that are not canonical
(upper-case host, an explicit default port, a fragment, the query's pairs reversed),
which take the slow paths.

Variants, each a function of a URL string:

``today``            :func:`irlscrapy.dupefilters.urlkey.url_key`: the canonical form
                     (fast paths, else w3lib), then 8 bytes of BLAKE2b (the baseline)
``today_xxh3``       the same canonical form, then xxHash's XXH3-64 (``xxhash``)
``blake2b``          the hash alone, on canonical strings
``xxh3``             XXH3-64 alone, on canonical strings
``ada``              ``ada_url.normalize_url``: ada's WHATWG parse and serialization
                     (the parser Node.js uses)
``ada_xxh3``         ada's normalization, then XXH3-64

Each runs over all URLs :data:`ROUNDS` times, interleaved; the figure is the median
round, in nanoseconds per URL, and its ratio to ``today``. Agreement: the share of URLs
whose ada normalization equals today's canonical form (the identity a Scrapy user's
fingerprints see: ``canonicalize_url(safe_url_string(url))``). Per page: the time the
best variant would save on a page's links, with the page's link count.

Referer: :meth:`irlscrapy.scheduler.linkrules.LinkRules.referers` on each page's links
under Scrapy's default policy (asked once per class of target), against the same
policy in a subclass of its own (which LinkRules asks per target origin, as before),
in microseconds per page, the median of :data:`ROUNDS` interleaved rounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from hashlib import blake2b
from pathlib import Path

from scrapy.settings import Settings
from scrapy.spidermiddlewares.referer import DefaultReferrerPolicy, RefererMiddleware

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ada_url  # noqa: E402
import xxhash  # noqa: E402
from common import emit, median, page_urls  # noqa: E402

from irlscrapy.dupefilters.urlkey import canonical_url, url_key  # noqa: E402
from irlscrapy.invitro.profiles import get_profile  # noqa: E402
from irlscrapy.invitro.web import InVitroWeb  # noqa: E402
from irlscrapy.oracle.groundtruth import split_url  # noqa: E402
from irlscrapy.scheduler.linkrules import LinkRules  # noqa: E402
from irlscrapy.spiders.extract import links_to_follow  # noqa: E402

PROFILE, SEED = "broad", 0
PAGE_COUNT, QUICK_PAGES = 2000, 300
ROUNDS = 7


def followed_links(pages: int) -> list[tuple[str, list[str]]]:
    """Each of the first ``pages`` HTML pages with a body, and its followable links."""
    web = InVitroWeb(get_profile(PROFILE), SEED)
    out = []
    for url in page_urls(PROFILE, SEED, pages):
        body = web.respond(*split_url(url)).body
        if body:
            out.append((url, links_to_follow(url, body)))
    return out


class PerOrigin(DefaultReferrerPolicy):
    """Scrapy's default policy as a project's own: LinkRules asks it per target origin."""


class _Stats:
    def inc_value(self, key: str, count: int = 1) -> None:
        pass


def referers(pages: list[tuple[str, list[str]]]) -> None:
    """LinkRules.referers per page: by class of target against per target origin."""
    variants = {}
    for name, policy in (("by_class", "scrapy-default"), ("per_origin", f"{__name__}.PerOrigin")):
        referer = RefererMiddleware(Settings({"REFERRER_POLICY": policy}))
        variants[name] = LinkRules(
            depth_limit=0, depth_priority=0, url_length_limit=2083, referer=referer, stats=_Stats()
        )
    rounds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, rules in variants.items():
            started = time.perf_counter()
            for source, links in pages:
                rules.referers(source, links, None)
            rounds[name].append((time.perf_counter() - started) / len(pages) * 1e6)
    by_class, per_origin = median(rounds["by_class"]), median(rounds["per_origin"])
    emit("linkpath", "referers_per_origin", round(per_origin, 1), "us/page")
    ratio = round(by_class / per_origin, 3)
    emit("linkpath", "referers_by_class", round(by_class, 1), "us/page", ratio=ratio)


def respelled(url: str, n: int) -> str:
    """``url`` made non-canonical one of four ways (by ``n``)."""
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if n % 4 == 0:
        return f"{scheme}://{host.upper()}{slash}{path}"
    if n % 4 == 1:
        port = 443 if scheme == "https" else 80
        return f"{scheme}://{host}:{port}{slash}{path}"
    if n % 4 == 2:
        return url + "#section"
    base, _, query = url.partition("?")
    pairs = query.split("&")
    return f"{base}?{'&'.join(reversed(pairs))}" if len(pairs) > 1 else url + "?b=2&a=1"


def xxh3_key(text: str) -> int:
    return xxhash.xxh3_64_intdigest(text.encode())


def blake2b_key(text: str) -> int:
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little")


VARIANTS: dict[str, Callable[[str], object]] = {
    "today": url_key,
    "today_xxh3": lambda url: xxh3_key(canonical_url(url)),
    "ada": ada_url.normalize_url,
    "ada_xxh3": lambda url: xxh3_key(ada_url.normalize_url(url)),
}
HASHES: dict[str, Callable[[str], int]] = {"blake2b": blake2b_key, "xxh3": xxh3_key}


def time_rounds(urls: list[str], funcs: dict[str, Callable[[str], object]]) -> dict[str, float]:
    """The median round of each function over ``urls``, in ns per URL (interleaved)."""
    rounds: dict[str, list[float]] = {name: [] for name in funcs}
    for _ in range(ROUNDS):
        for name, func in funcs.items():
            started = time.perf_counter()
            for url in urls:
                func(url)
            rounds[name].append((time.perf_counter() - started) / len(urls) * 1e9)
    return {name: median(values) for name, values in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAGES} pages")
    args = parser.parse_args()
    followed = followed_links(QUICK_PAGES if args.quick else PAGE_COUNT)
    links, pages = [u for _, urls in followed for u in urls], len(followed)
    sets = {"as_followed": links, "respelled": [respelled(u, n) for n, u in enumerate(links)]}
    emit("linkpath", "urls", len(links), "URLs", pages=pages, per_page=len(links) / pages)
    for label, urls in sets.items():
        canonical = [canonical_url(u) for u in urls]
        agree = sum(ada_url.normalize_url(u) == c for u, c in zip(urls, canonical, strict=True))
        emit(
            "linkpath",
            "ada_agrees_with_canonical",
            round(agree / len(urls), 4),
            "share",
            urls=label,
        )
        figures = time_rounds(urls, VARIANTS)
        figures |= time_rounds(canonical, HASHES)
        base = figures["today"]
        for name, ns in figures.items():
            emit(
                "linkpath",
                name,
                round(ns, 1),
                "ns/URL",
                urls=label,
                ratio_to_today=round(ns / base, 3),
            )
        saved = base - min(figures["today_xxh3"], base)
        emit(
            "linkpath",
            "xxh3_saves_per_page",
            round(saved * len(links) / pages / 1000, 2),
            "us/page",
            urls=label,
        )
    referers(followed)


if __name__ == "__main__":
    main()
