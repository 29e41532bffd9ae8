"""Hostile input through link extraction, URL identity, robots rules, headers, DNS and the
scheduler (harness/fuzz/surfaces.py states the invariants): the checked-in corpus entry by
entry, then a short run of generated input per surface, drawn anew each run (the seed is
in the failure message), without the big inputs, which have tests of their own. The
100,000-input run is ``python bench/fuzz.py``."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy import Request

from harness.frontierfixture import Stats
from harness.fuzz import hostile
from harness.fuzz.surfaces import Surfaces
from irlscrapy.domains import url_host
from irlscrapy.scheduler.linkrules import LinkRules
from irlscrapy.spiders.extract import LINK_SLICE, absolute_url, crawlable, links_to_follow

#: Generated inputs per surface in the suite (the bench runs 100,000).
SHORT_RUN = 300
#: CPU a single input may take here, on a slow shared machine (the bench's bar is 50 ms
#: of wall time, re-measured).
TURN_BUDGET = 0.25


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Surfaces]:
    """One set of surfaces for all corpus entries (they add few URLs to its frontier)."""
    fed = Surfaces(tmp_path_factory.mktemp("fuzz"))
    yield fed
    fed.close()


@pytest.fixture
def surfaces(tmp_path: Path) -> Iterator[Surfaces]:
    fed = Surfaces(tmp_path)
    yield fed
    fed.close()


def _entries() -> list[tuple[str, int]]:
    return [(s, n) for s in hostile.SURFACES for n in range(len(hostile.corpus(s)))]


@pytest.mark.parametrize(("surface", "n"), _entries())
def test_every_corpus_entry_passes_its_surface(shared: Surfaces, surface: str, n: int) -> None:
    entry = hostile.corpus(surface)[n]
    value = {
        "urls": lambda: entry["url"],
        "html": lambda: hostile.Page(
            entry["url"], {"Content-Type": entry["content_type"].encode()}, entry["body"]
        ),
        "robots": lambda: (entry["status"], entry["body"]),
        "headers": lambda: hostile.Answer(
            entry["status"],
            [(k.encode("latin-1"), v.encode("latin-1")) for k, v in entry["headers"]],
        ),
        "dns": lambda: (entry["name"], bytes.fromhex(entry["wire"])),
    }[surface]()
    longest = shared.feed(surface, value)
    assert longest < TURN_BUDGET, f"{entry['why']}: a turn of {longest * 1000:.0f} ms"


@pytest.mark.parametrize("surface", hostile.SURFACES)
def test_generated_input_breaks_no_invariant(surfaces: Surfaces, surface: str) -> None:
    seed = random.randrange(2**32)
    for index in range(SHORT_RUN):
        value = hostile.GENERATORS[surface](hostile.rng_for(surface, seed, index), False)
        try:
            surfaces.feed(surface, value)
        except Exception as exc:
            raise AssertionError(
                f"{surface} input {index} of seed {seed} (python bench/fuzz.py --seed {seed} "
                f"--surfaces {surface} --replay {index}): {exc!r}"
            ) from exc


def _cpu(f: object, *args: object) -> float:
    started = time.thread_time()
    f(*args)  # type: ignore[operator]
    return time.thread_time() - started


@pytest.mark.parametrize(
    "body",
    [
        lambda n: b"<a " * n,  # no tag ever closed (was quadratic: 13 s for 40,000)
        lambda n: b"<base " * n,
        lambda n: b"<meta name=robots " * n,
        lambda n: b"<a href='" + b"x" * (20 * n),  # an attribute that never ends
    ],
)
def test_link_extraction_is_linear_in_the_page(body: object) -> None:
    """Twice the page costs at most about twice the time (a scaling check does not
    flake on a slow machine as a time limit would)."""
    small = min(_cpu(links_to_follow, "http://h.example/", body(20_000)) for _ in range(3))  # type: ignore[operator]
    large = min(_cpu(links_to_follow, "http://h.example/", body(40_000)) for _ in range(3))  # type: ignore[operator]
    assert large < 3 * small + 0.005, f"{small:.4f} s -> {large:.4f} s"


def test_a_page_of_100000_links_is_handed_on_in_slices_of_few_milliseconds(
    surfaces: Surfaces,
) -> None:
    links = b"".join(
        b'<a href="http://h%d.example/p/%d">x</a>' % (n % 997, n) for n in range(100_000)
    )
    page = hostile.Page("http://big.example/", {"Content-Type": b"text/html"}, links)
    longest = surfaces.feed("html", page)
    assert len(surfaces.turns) >= 100_000 // LINK_SLICE
    # a share of the page's time, not a time: a loaded machine slows every turn alike
    total = sum(surfaces.turns)
    assert longest < total / 10, f"a turn of {longest * 1000:.0f} ms in {total * 1000:.0f}"


@pytest.mark.parametrize(
    "url",
    [
        "http://./",
        "http://../x",
        "http://:80/",
        "http://user@./a",
        "http://examp\x10].com/",
        "http://[::1/",
        "http://a.com:99999/",
        "http://example.com/\ud800",
        "http://a]@b.com/",
        "http://u[1]@b.com/",
        "http://[::1]@b.com/",
        "http://example.com\uff1a80/",  # a full-width colon: NFKC makes it a port
        "http://a\uff20b.com/",  # a full-width @
        "http://10.0.0.1\\@example.com/admin",  # a backslash: Request fetches 10.0.0.1
    ],
)
def test_a_url_no_request_can_be_made_of_is_not_crawlable(url: str) -> None:
    assert not crawlable(url)


@pytest.mark.parametrize(
    ("href", "url"),
    [
        ("http://10.0.0.1\\@example.com/admin", "http://10.0.0.1/@example.com/admin"),
        ("http://a.com:8080\\p0", "http://a.com:8080/p0"),
        ("..\\y\\z?q=\\", "http://h.example/y/z?q=\\"),
        ("\\\\other.example\\x", "http://other.example/x"),
        ("mailto:a\\b", "mailto:a\\b"),
    ],
)
def test_backslashes_before_the_query_are_slashes_as_for_scrapy(href: str, url: str) -> None:
    """A link is scheduled under the host Scrapy's Request will fetch: w3lib (and a
    browser) read a backslash in an http(s) URL as a slash; urljoin does not."""
    got = absolute_url("http://h.example/d/e", href)
    assert got == url
    if crawlable(url):
        assert url_host(url) == url_host(Request(url).url)


def test_a_megabyte_url_is_over_the_length_limit_without_being_escaped() -> None:
    rules = LinkRules(
        depth_limit=0, depth_priority=0, url_length_limit=2083, referer=None, stats=Stats()
    )
    huge = "http://example.com/" + "a" * 1_000_000
    # escaping it (w3lib's safe_url_string) takes about 180 ms here; the length check about
    # 11 to 22 ms, the most on a busy core: the bar tells the two apart with room for both
    assert min(_cpu(rules.keep, [huge]) for _ in range(3)) < 0.06
    assert rules.keep([huge]) == []
    padded = "http://example.com/" + "a" * 2000 + "\t" * 100  # tabs the escaping drops
    assert rules.keep([padded]) == [padded]


def test_the_corpus_files_are_kept_byte_for_byte() -> None:
    """.gitattributes keeps git from changing CRLF, BOMs and NULs in the corpus."""
    attributes = (Path(hostile.CORPUS).parents[2] / ".gitattributes").read_text()
    assert "harness/fuzz/corpus/** -text" in attributes
    assert (hostile.CORPUS / "robots" / "bom-crlf.txt").read_bytes().startswith(b"\xef\xbb\xbf")


@pytest.mark.parametrize(
    "url",
    [
        "http://a.example:/",
        "http://a.example:08/x",
        "http://a.example:0080/",
        "https://a.example:0443/",
        "http://[::1]:/",
        "http://a.example.:8/",
    ],
)
def test_a_port_is_keyed_as_requests_write_it(url: str) -> None:
    """One server, one workbench host: an empty port, or one with leading zeros, is the
    port Scrapy's Request fetches (the fuzzing invariant of harness/fuzz/surfaces.py)."""
    assert url_host(url) == url_host(Request(url).url)
