"""Profiles: the parameters that fix the structure of an in-vitro web.

A profile is a plain frozen dataclass. Everything random in the web is drawn from
(seed, host, path) inside these bounds, so a profile plus a seed *is* the web.

Two profiles ship:

``tiny``
    Finite: a few thousand pages on a few hundred hosts. Spam farms and traps are
    bounded, so the set reachable from the seeds can be computed exactly
    (:mod:`irlscrapy.oracle.groundtruth`). Delays are short so tests run fast. It also
    carries what a real web of documentation sites taught (issue 16): same-host links to
    ``https://`` where nothing answers on port 443, hosts that redirect between schemes,
    a few huge index pages with thousands of links, and relative links with ``../`` and
    ``<base href>``.
``broad``
    IRLbot-like and unbounded for any crawl this machine can run: ~60 links and
    ~25 KB per page, 200,000 legitimate pay-level domains (PLDs) with ~3.5 hosts each
    and ~27 hosts per IP, spam farms with unlimited hosts and pages, unbounded traps.
``spam``
    ``broad`` scaled to where a breadth-first crawler is trapped within 100,000 pages,
    as IRLbot saw it after 3-4 BFS levels (seeds/003 section VI.A): a smaller
    legitimate web (10,000 PLDs, ~30 links a page, popular sites bigger), comment spam
    and bought links on 40% of the legitimate PLDs, and 8 farms of 5 PLDs each whose
    link-heavy pages (~80 links) name generated hosts and pages without end (wildcard
    DNS). Small enough that 100,000 pages crawl ~10 pages per PLD seen, where budgets,
    not the order of discovery, decide what a PLD gets. Its calibration, and why each
    parameter has its value, is in BENCHMARKS.md (issue 19).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from irlscrapy.exceptions import ConfigurationError


def _weights(**shares: float) -> tuple[tuple[str, float], ...]:
    return tuple(shares.items())


@dataclass(frozen=True)
class Profile:
    """The structure of an in-vitro web. Shares are probabilities in [0, 1]."""

    name: str
    # -- the PLD graph ---------------------------------------------------------------
    legit_plds: int
    #: Zipf exponent of PLD popularity: link targets are drawn with P(rank r) ~ r^-s,
    #: which gives the power-law in-degree of the real PLD graph.
    popularity_exponent: float
    #: Mean number of distinct PLDs a legitimate PLD links to.
    pld_out_degree: float
    #: Probability that a legitimate PLD links to one spam PLD (comment spam, bought links).
    spam_inlink_prob: float
    # -- hosts and addresses ---------------------------------------------------------
    hosts_per_pld: float  # mean, IRLbot: about 3.5
    hosts_per_ip: float  # mean, IRLbot: about 27 (virtual hosting)
    huge_sites: int  # the most popular PLDs are huge: many subdomains on few IPs
    huge_site_hosts: int
    huge_site_ips: int
    pages_per_host: float  # mean of a Pareto(1.5) law, capped below
    max_pages_per_host: int
    # -- pages -----------------------------------------------------------------------
    links_per_page: int  # mean anchors per HTML page (IRLbot: l = 59)
    external_link_share: float  # links to another PLD
    same_pld_link_share: float  # links to another host of the same PLD
    page_bytes: int  # mean HTML size (IRLbot: about 25 KB)
    huge_page_bytes: int
    # -- spam farms: PLDs cost money, hosts and pages do not -------------------------
    spam_farms: int
    spam_plds_per_farm: int
    spam_hosts_per_pld: int | None  # None: unlimited
    spam_pages_per_host: int | None  # None: unlimited
    # -- traps below the PLD level (calendars, session IDs, repeated segments) -------
    trap_host_share: float
    trap_extent: int | None  # None: unbounded; else months / session tokens / depth
    # -- per-host behaviour ----------------------------------------------------------
    robots: tuple[tuple[str, float], ...]
    servers: tuple[tuple[str, float], ...]
    dns: tuple[tuple[str, float], ...]
    gzip_host_share: float
    chunked_host_share: float
    slow_delay: float  # seconds added to every reply of a slow server
    robots_slow_delay: float  # seconds before a slow robots.txt answers
    hang_seconds: float  # how long a hanging server holds a request before closing
    dns_slow_delay: float
    dns_ttl: int
    # -- special links: probability that a page carries one of each ------------------
    special_links: tuple[tuple[str, float], ...] = field(
        default=_weights(
            private=0.30,
            go=0.05,
            away=0.03,
            loop=0.02,
            doc=0.03,
            file=0.10,
            big=0.01,
            missing=0.03,
            err=0.02,
            mailto=0.20,
            javascript=0.10,
            tel=0.05,
            ftp=0.05,
            fragment=0.30,
        )
    )
    nofollow_meta_share: float = 0.02
    nofollow_header_share: float = 0.01
    seeds: int = 5
    retry_after: int = 2  # Retry-After (seconds) of a flaky server's 429 and 503
    # -- what a real web taught (issue 16); every one is off at its default ------------
    #: Which schemes a host serves, one of SCHEME_KINDS by weight.
    schemes: tuple[tuple[str, float], ...] = _weights(http=1.0)
    #: Probability that a legitimate page carries one absolute ``https://`` link to a page
    #: of its own host (refused on a host of scheme kind "http").
    https_link_prob: float = 0.0
    #: Share of same-host links written relative to the page's directory (or its
    #: ``<base href>``): ``../blog/9.html``, ``9.html``, ``?id=9``, now and then with one
    #: ``../`` too many (resolution stops at the root, RFC 3986 section 5.2.4).
    relative_link_share: float = 0.0
    #: Probability that a legitimate page carries ``<base href>`` (a directory or a page
    #: of its own host); its relative links are written against that base.
    base_href_prob: float = 0.0
    #: Share of legitimate hosts whose home page is a huge index: ``index_links`` anchors
    #: (mean; 0.6x to 1.4x) to the host's ``index_host_pages`` pages, most of them with a
    #: fragment (``/wiki/7.html#i123``), as in documentation's generated indexes.
    index_host_share: float = 0.0
    index_links: int = 0
    index_host_pages: int = 0
    #: Mean anchors per spam page; None: ``links_per_page``. Link farms are link-heavy:
    #: their pages exist to pass rank on (issue 19).
    spam_links_per_page: int | None = None
    #: None: a spam page of host number k, page n, links to hosts below 2k + 5 and pages
    #: below 2n + 5 of its farm (the farm grows level by level); a number: to hosts and
    #: pages drawn uniformly below it, so nearly every link names a URL never seen, as
    #: generated spam names do.
    spam_link_range: int | None = None
    #: Popular sites are bigger: the pages per host of a legitimate PLD of popularity
    #: rank r (0 = most linked) scale as (r + 1)^-exponent, normalised so that their mean
    #: over the PLDs stays ``pages_per_host``. 0: site size is independent of popularity.
    site_size_exponent: float = 0.0

    def __post_init__(self) -> None:
        problems = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_share") or f.name.endswith("_prob"):
                if not 0.0 <= value <= 1.0:
                    problems.append(f"{f.name}={value} is not a probability")
            elif isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
                problems.append(f"{f.name}={value} is negative")
        for name in ("robots", "servers", "dns", "schemes"):
            total = sum(w for _, w in getattr(self, name))
            if abs(total - 1.0) > 1e-9:
                problems.append(f"{name} weights sum to {total}, not 1")
        if self.external_link_share + self.same_pld_link_share > 1.0:
            problems.append("external_link_share + same_pld_link_share exceeds 1")
        if self.legit_plds < 1 or self.huge_sites > self.legit_plds:
            problems.append("need 1 <= huge_sites <= legit_plds")
        if self.spam_farms and self.spam_plds_per_farm < 2:
            problems.append("a spam farm needs at least 2 PLDs")
        if self.seeds < 1:
            problems.append("seeds must be at least 1")
        unknown = {kind for kind, _ in self.schemes} - set(SCHEME_KINDS)
        if unknown:
            problems.append(f"unknown scheme kinds {sorted(unknown)}; choose from {SCHEME_KINDS}")
        if self.index_host_share and (self.index_links < 1 or self.index_host_pages < 1):
            problems.append("index hosts need index_links >= 1 and index_host_pages >= 1")
        if problems:
            raise ConfigurationError(
                f"invalid in-vitro profile {self.name!r}: " + "; ".join(problems)
            )

    @property
    def finite(self) -> bool:
        """True when the whole web is finite, so its reachable set can be enumerated."""
        return (
            self.spam_farms == 0
            or (self.spam_hosts_per_pld is not None and self.spam_pages_per_host is not None)
        ) and (self.trap_host_share == 0 or self.trap_extent is not None)


ROBOTS_VARIANTS = (
    "allow",  # User-agent: * with nothing disallowed
    "disallow",  # Disallow: /private/ (and a group for another agent that disallows all)
    "crawl-delay",  # Disallow: /private/ plus Crawl-delay
    "missing",  # 404: allow all (RFC 9309 2.3.1.3)
    "error",  # 500 / 503: disallow all (RFC 9309 2.3.1.4)
    "unreachable",  # connection reset: disallow all
    "slow",  # answers after robots_slow_delay, rules as "disallow"
    "oversized",  # > 500 KiB; "Disallow: /" only after the 500 KiB parse limit
    "malformed",  # junk lines around a valid "Disallow: /private/"
    "redirect",  # 301 to /robots-real.txt, which disallows /private/
)

SERVER_KINDS = (
    "normal",
    "slow",  # every reply after slow_delay
    "flaky",  # a fifth of the paths answer 500, or 503 or 429 with Retry-After
    "resetting",  # a fifth of the paths reset the connection
    "hanging",  # a tenth of the paths hold the request hang_seconds, then close
)

DNS_KINDS = ("ok", "nxdomain", "servfail", "timeout", "slow")

SCHEME_KINDS = (
    "http",  # serves http; a connection to port 443 is refused (the proxy's CONNECT: 502)
    "upgrade",  # http answers every path with a 301 to https, which serves the host
    "downgrade",  # https (TLS through CONNECT) answers every path with a 301 to http
)


TINY = Profile(
    name="tiny",
    legit_plds=80,
    popularity_exponent=1.0,
    pld_out_degree=5.0,
    spam_inlink_prob=0.08,
    hosts_per_pld=2.5,
    hosts_per_ip=6.0,
    huge_sites=1,
    huge_site_hosts=30,
    huge_site_ips=2,
    pages_per_host=12.0,
    max_pages_per_host=60,
    links_per_page=20,
    external_link_share=0.2,
    same_pld_link_share=0.1,
    page_bytes=6_000,
    huge_page_bytes=3_000_000,
    spam_farms=2,
    spam_plds_per_farm=6,
    spam_hosts_per_pld=3,
    spam_pages_per_host=8,
    trap_host_share=0.08,
    trap_extent=6,
    robots=_weights(
        allow=0.45,
        disallow=0.15,
        **{"crawl-delay": 0.05},
        missing=0.1,
        error=0.05,
        unreachable=0.04,
        slow=0.04,
        oversized=0.04,
        malformed=0.04,
        redirect=0.04,
    ),
    servers=_weights(normal=0.80, slow=0.05, flaky=0.06, resetting=0.05, hanging=0.04),
    dns=_weights(ok=0.93, nxdomain=0.03, servfail=0.02, timeout=0.01, slow=0.01),
    gzip_host_share=0.2,
    chunked_host_share=0.15,
    slow_delay=0.2,
    robots_slow_delay=0.5,
    hang_seconds=20.0,
    dns_slow_delay=1.0,
    dns_ttl=300,
    seeds=3,
    retry_after=1,
    schemes=_weights(http=0.88, upgrade=0.08, downgrade=0.04),
    https_link_prob=0.06,
    relative_link_share=0.15,
    base_href_prob=0.05,
    index_host_share=0.012,
    index_links=3_500,
    index_host_pages=80,
)

BROAD = Profile(
    name="broad",
    legit_plds=200_000,
    popularity_exponent=1.0,
    pld_out_degree=20.0,
    spam_inlink_prob=0.01,
    hosts_per_pld=3.5,
    hosts_per_ip=27.0,
    huge_sites=20,
    huge_site_hosts=20_000,
    huge_site_ips=4,
    pages_per_host=40.0,
    max_pages_per_host=200_000,
    links_per_page=60,
    external_link_share=0.2,
    same_pld_link_share=0.08,
    page_bytes=25_000,
    huge_page_bytes=4_000_000,
    spam_farms=20,
    spam_plds_per_farm=200,
    spam_hosts_per_pld=None,
    spam_pages_per_host=None,
    trap_host_share=0.02,
    trap_extent=None,
    robots=_weights(
        allow=0.60,
        disallow=0.15,
        **{"crawl-delay": 0.05},
        missing=0.1,
        error=0.02,
        unreachable=0.02,
        slow=0.02,
        oversized=0.01,
        malformed=0.02,
        redirect=0.01,
    ),
    servers=_weights(normal=0.92, slow=0.03, flaky=0.02, resetting=0.015, hanging=0.015),
    dns=_weights(ok=0.97, nxdomain=0.015, servfail=0.007, timeout=0.004, slow=0.004),
    gzip_host_share=0.16,
    chunked_host_share=0.1,
    slow_delay=1.0,
    robots_slow_delay=2.0,
    hang_seconds=60.0,
    dns_slow_delay=2.0,
    dns_ttl=3600,
    seeds=20,
)

#: ``broad``, made into a web where breadth-first crawling is trapped by spam farms
#: (see the module docstring; the calibration is in BENCHMARKS.md, issue 19). Farms own
#: a fixed, small number of PLDs (PLDs cost money); hosts and pages cost nothing.
SPAM = dataclasses.replace(
    BROAD,
    name="spam",
    legit_plds=10_000,
    pld_out_degree=10.0,
    links_per_page=30,
    pages_per_host=15.0,
    hosts_per_pld=2.5,
    huge_sites=10,
    huge_site_hosts=5_000,
    spam_inlink_prob=0.4,
    spam_farms=8,
    spam_plds_per_farm=5,
    spam_links_per_page=80,
    spam_link_range=1_000_000,
    site_size_exponent=0.5,
    seeds=10,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (TINY, BROAD, SPAM)}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown in-vitro profile {name!r}; choose one of {', '.join(sorted(PROFILES))}"
        ) from None
