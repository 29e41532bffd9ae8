"""The in-vitro web: a deterministic simulated web that stores nothing.

This module holds the structure (names, PLD graph, hosts);
:mod:`irlscrapy.invitro.paths` writes each host's paths,
:mod:`irlscrapy.invitro.linkplan` chooses each page's links,
:mod:`irlscrapy.invitro.replies` answers requests (:meth:`InVitroWeb.respond`) and
:mod:`irlscrapy.invitro.content` renders the bytes.

Theory of operation
-------------------
Every fact about the web is a pure function of ``(seed, host, path)``: the host's
address, its robots.txt, how its server misbehaves, each page's bytes and links. A
64-bit keyed BLAKE2b hash of the seed and the parts names each decision; a
``random.Random`` seeded from such a hash draws a page's links (only ``random()`` is
used, whose sequence Python guarantees stable across versions). Nothing is cached
except bounded LRU memos of pure functions, so two processes with the same profile and
seed serve byte-identical webs.

Names encode structure, so a host can be parsed back without any table:

- legitimate PLD of popularity rank ``i`` (0 = most linked): ``w{i}.{suffix}``
- member ``j`` of spam farm ``f``: ``s{f}x{j}.{suffix}``; member 0 is the farm's target
- host ``k`` of a PLD: ``www.{pld}`` for ``k = 0``, ``h{k}.{pld}`` otherwise
- the suffix of each PLD is drawn from :data:`SUFFIXES`, multi-label ones included
  (``co.uk``, ``com.au``); a name with any other suffix does not exist.

The PLD graph is explicit: :meth:`InVitroWeb.out_plds` lists the PLDs a PLD links to
(targets drawn from a Zipf law of popularity, which gives power-law in-degree). Every
external link on the PLD's pages goes to a member of that list and its home page links
to all of them, so :meth:`InVitroWeb.true_indegree` is the in-degree a crawler that
saw every page would count.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import re
from collections.abc import Sequence
from functools import lru_cache
from hashlib import blake2b

import numpy as np

from irlscrapy.invitro import replies
from irlscrapy.invitro.content import Reply
from irlscrapy.invitro.host import Host
from irlscrapy.invitro.linkplan import TRAP_KINDS, TRAP_PREFIXES
from irlscrapy.invitro.paths import PAGE_STYLES
from irlscrapy.invitro.profiles import Profile

#: Public suffixes the web uses, with the share of PLDs under each. DO NOT CHANGE the
#: order: it is part of what a seed means.
SUFFIXES: tuple[tuple[str, float], ...] = (
    ("com", 0.50),
    ("net", 0.08),
    ("org", 0.08),
    ("de", 0.06),
    ("io", 0.04),
    ("co.uk", 0.09),
    ("org.uk", 0.03),
    ("com.au", 0.07),
    ("co.jp", 0.05),
)
_SUFFIX_SET = frozenset(s for s, _ in SUFFIXES)
_LABEL_LEGIT = re.compile(r"w(0|[1-9][0-9]*)\Z")
_LABEL_SPAM = re.compile(r"s(0|[1-9][0-9]*)x(0|[1-9][0-9]*)\Z")
_HOST_LABEL = re.compile(r"h([1-9][0-9]*)\Z")

_U64 = 1.0 / 18446744073709551616.0


def _weighted(u: float, weights: Sequence[tuple[str, float]]) -> str:
    acc = 0.0
    for name, w in weights:
        acc += w
        if u < acc:
            return name
    return weights[-1][0]


class InVitroWeb:
    """The web of one profile and seed. Pure: every method is a function of its arguments.

    Invariants:
    *A name that :meth:`host` accepts always resolves to the same Host.*
    *Every external link on a page of PLD x points into* ``out_plds(x)``, *and the home
    page of x's first host links to all of them.*
    *A finite profile has finitely many URLs that answer 200.*
    """

    def __init__(self, profile: Profile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        self._key = seed.to_bytes(8, "little", signed=True)
        p = profile
        self.spam_plds = p.spam_farms * p.spam_plds_per_farm
        self.total_plds = p.legit_plds + self.spam_plds
        regular_hosts = (p.legit_plds - p.huge_sites) * p.hosts_per_pld
        self.shared_ips = max(1, round(regular_hosts / p.hosts_per_ip))
        weights = (r**-p.popularity_exponent for r in range(1, p.legit_plds + 1))
        self._popularity_cdf = list(itertools.accumulate(weights))
        # site_size_exponent: the mean of (r + 1)^-exponent over the legitimate PLDs
        self._size_norm = (
            float(
                np.mean(np.arange(1, p.legit_plds + 1, dtype=np.float64) ** -p.site_size_exponent)
            )
            if p.site_size_exponent
            else 1.0
        )
        self.host = lru_cache(maxsize=1 << 16)(self._host)
        self.out_plds = lru_cache(maxsize=1 << 14)(self._out_plds)
        self.pld_name = lru_cache(maxsize=1 << 16)(self._pld_name)
        self.hosts_in_pld = lru_cache(maxsize=1 << 16)(self._hosts_in_pld)
        # The host facets of _facets() are all taken; the features added later draw from a
        # hash of their own, only in profiles that use them (a broad host costs no more).
        self._more_facets = p.schemes != (("http", 1.0),) or p.index_host_share > 0

    # -- hashing -----------------------------------------------------------------------
    def h64(self, *parts: object) -> int:
        """The keyed 64-bit hash that names the decision ``parts``."""
        data = "\x1f".join(map(str, parts)).encode()
        return int.from_bytes(blake2b(data, digest_size=8, key=self._key).digest(), "little")

    def unit(self, *parts: object) -> float:
        """:meth:`h64` of ``parts`` as a number in [0, 1)."""
        return self.h64(*parts) * _U64

    def rng(self, *parts: object) -> random.Random:
        return random.Random(self.h64(*parts))

    # -- PLDs --------------------------------------------------------------------------
    def suffix_of(self, pld_id: int) -> str:
        return _weighted(self.unit("suffix", pld_id), SUFFIXES)

    def _pld_name(self, pld_id: int) -> str:
        p = self.profile
        if not 0 <= pld_id < self.total_plds:
            raise IndexError(f"no PLD {pld_id} in a web of {self.total_plds}")
        if pld_id < p.legit_plds:
            label = f"w{pld_id}"
        else:
            farm, member = divmod(pld_id - p.legit_plds, p.spam_plds_per_farm)
            label = f"s{farm}x{member}"
        return f"{label}.{self.suffix_of(pld_id)}"

    def pld_id(self, pld: str) -> int | None:
        """The PLD id of a registered domain name, or None if the web has no such PLD."""
        label, _, suffix = pld.partition(".")
        if suffix not in _SUFFIX_SET:
            return None
        p = self.profile
        if m := _LABEL_LEGIT.match(label):
            pid = int(m.group(1))
            if pid >= p.legit_plds:
                return None
        elif m := _LABEL_SPAM.match(label):
            farm, member = int(m.group(1)), int(m.group(2))
            if farm >= p.spam_farms or member >= p.spam_plds_per_farm:
                return None
            pid = p.legit_plds + farm * p.spam_plds_per_farm + member
        else:
            return None
        return pid if self.suffix_of(pid) == suffix else None

    def _hosts_in_pld(self, pld_id: int) -> int | None:
        """Number of hosts of a PLD; None for an unbounded spam PLD."""
        p = self.profile
        if pld_id >= p.legit_plds:
            return p.spam_hosts_per_pld
        if pld_id < p.huge_sites:
            return p.huge_site_hosts
        return 1 + self._geometric(self.unit("hosts", pld_id), p.hosts_per_pld - 1.0)

    @staticmethod
    def _geometric(u: float, mean: float) -> int:
        """Inverse CDF of the geometric law on {0, 1, ...} with the given mean."""
        if mean <= 0:
            return 0
        q = mean / (1.0 + mean)  # P(X >= 1)
        return int(math.log(1.0 - u) / math.log(q))

    def _popular_pld(self, rng: random.Random) -> int:
        """A legitimate PLD drawn by Zipf popularity (rank 0 most likely)."""
        cdf = self._popularity_cdf
        return min(bisect.bisect_right(cdf, rng.random() * cdf[-1]), len(cdf) - 1)

    def _out_plds(self, pld_id: int) -> tuple[int, ...]:
        p = self.profile
        rng = self.rng("out", pld_id)
        if pld_id < p.legit_plds:
            wanted = min(
                p.legit_plds - 1,
                1 + self._geometric(rng.random(), p.pld_out_degree - 1),
                int(4 * p.pld_out_degree),
            )
            targets: dict[int, None] = {}
            for _ in range(8 * wanted):
                if len(targets) >= wanted:
                    break
                t = self._popular_pld(rng)
                if t != pld_id:
                    targets[t] = None
            if self.spam_plds and rng.random() < p.spam_inlink_prob:
                targets[p.legit_plds + int(rng.random() * self.spam_plds)] = None
            return tuple(targets)
        farm = (pld_id - p.legit_plds) // p.spam_plds_per_farm
        first = p.legit_plds + farm * p.spam_plds_per_farm
        members = [m for m in range(first, first + p.spam_plds_per_farm) if m != pld_id]
        legit = dict.fromkeys(self._popular_pld(rng) for _ in range(3))
        return tuple(members) + tuple(legit)

    def true_indegree(self) -> np.ndarray:
        """In-degree of every PLD id in the PLD graph (unique linking PLDs)."""
        counts = np.zeros(self.total_plds, dtype=np.int64)
        for pid in range(self.total_plds):
            out = self._out_plds(pid)
            if out:
                counts[np.fromiter(out, dtype=np.int64, count=len(out))] += 1
        return counts

    # -- hosts -------------------------------------------------------------------------
    def host_name(self, pld_id: int, index: int) -> str:
        return f"{'www' if index == 0 else f'h{index}'}.{self.pld_name(pld_id)}"

    def _host(self, name: str) -> Host | None:
        name = name.lower().rstrip(".")
        labels = name.split(".")
        if len(labels) < 3:
            return None
        two = ".".join(labels[-2:])
        if two in _SUFFIX_SET and len(labels) >= 4:
            pld, rest = ".".join(labels[-3:]), labels[:-3]
        elif labels[-1] in _SUFFIX_SET:
            pld, rest = ".".join(labels[-2:]), labels[:-2]
        else:
            return None
        if len(rest) != 1:
            return None
        pid = self.pld_id(pld)
        if pid is None:
            return None
        if rest[0] == "www":
            index = 0
        elif m := _HOST_LABEL.match(rest[0]):
            index = int(m.group(1))
        else:
            return None
        limit = self.hosts_in_pld(pid)
        if limit is not None and index >= limit:
            return None
        return self._describe(name, pld, pid, index)

    def _facets(self, name: str) -> list[int]:
        """Eight independent 64-bit draws for a host, from one hash of its name."""
        digest = blake2b(name.encode(), digest_size=64, key=self._key, person=b"host").digest()
        return [int.from_bytes(digest[i : i + 8], "little") for i in range(0, 64, 8)]

    def _describe(self, name: str, pld: str, pid: int, index: int) -> Host:
        p = self.profile
        f = self._facets(name)
        u32 = 1.0 / 4294967296.0
        spam = pid >= p.legit_plds
        farm = (pid - p.legit_plds) // p.spam_plds_per_farm if spam else -1
        if pid < p.huge_sites:
            ip_index = self.shared_ips + pid * p.huge_site_ips + f[0] % p.huge_site_ips
        else:
            ip_index = f[0] % self.shared_ips
        robots = _weighted(f[1] * _U64, p.robots)
        server = _weighted(f[2] * _U64, p.servers)
        dns = _weighted(f[3] * _U64, p.dns)
        trap = ""
        if not spam and pid >= p.huge_sites and (f[6] & 0xFFFFFFFF) * u32 < p.trap_host_share:
            trap = TRAP_KINDS[(f[6] >> 32) % len(TRAP_KINDS)]
        scheme, index_host = "http", False
        if self._more_facets:
            g = self.h64("facets2", name)
            scheme = _weighted((g & 0xFFFFFFFF) * u32, p.schemes)
            index_host = not spam and (g >> 32) * u32 < p.index_host_share
        if index_host:  # an index is fetched in every crawl, quickly: the host behaves
            robots = robots if robots in ("allow", "disallow", "missing") else "allow"
            server, dns, trap = "normal", "ok", ""
        if index == 0 and pid < p.seeds:  # seed hosts behave, so every crawl can start
            robots = robots if robots in ("allow", "disallow") else "disallow"
            server, dns, trap, scheme = "normal", "ok", "", "http"
        if spam:
            pages = p.spam_pages_per_host
        elif index_host:
            pages = p.index_host_pages
        else:
            xm = p.pages_per_host / 3.0  # Pareto(1.5) has mean 3 * xm
            if p.site_size_exponent:
                xm *= (pid + 1) ** -p.site_size_exponent / self._size_norm
            pages = max(1, min(p.max_pages_per_host, int(xm / (1.0 - f[4] * _U64) ** (1 / 1.5))))
        return Host(
            name=name,
            pld=pld,
            pld_id=pid,
            number=index,
            farm=farm,
            ip=ip_address(ip_index),
            robots=robots,
            server=server,
            dns=dns,
            gzip=(f[5] & 0xFFFFFFFF) * u32 < p.gzip_host_share,
            chunked=(f[5] >> 32) * u32 < p.chunked_host_share,
            trap=trap,
            style=0 if spam else f[7] % len(PAGE_STYLES),
            pages=pages,
            scheme=scheme,
            has_index=index_host,
        )

    def seeds(self) -> list[str]:
        return [f"http://{self.host_name(pid, 0)}/" for pid in range(self.profile.seeds)]

    def is_trap(self, host: Host, path: str) -> bool:
        return bool(host.trap) and path.startswith(TRAP_PREFIXES[host.trap])

    def crawl_delay(self, host: Host) -> float | None:
        if host.robots != "crawl-delay":
            return None
        return float((1, 2, 5, 30)[self.h64("crawldelay", host.name) % 4])

    # -- replies -----------------------------------------------------------------------
    def respond(
        self, host_name: str, path: str, accept_gzip: bool = False, scheme: str = "http"
    ) -> Reply:
        """The reply an origin server (reached through the proxy) gives to GET
        scheme://host+path (:func:`irlscrapy.invitro.replies.respond`)."""
        return replies.respond(self, host_name, path, accept_gzip, scheme)


def ip_address(index: int) -> str:
    """The loopback address of IP number ``index`` (127.0.1.0 upwards; 127.0.0.x is left free)."""
    a = index + 256
    if a >= 1 << 24:
        raise ValueError(f"IP index {index} does not fit in 127.0.0.0/8")
    return f"127.{a >> 16}.{(a >> 8) & 255}.{a & 255}"
