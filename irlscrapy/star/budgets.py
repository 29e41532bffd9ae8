"""STAR's budgets: the PLDs ranked by in-degree, and the budget function over them.

Theory of operation
-------------------
The paper (seeds/003 section VI.B, VIII.B) gives each pay-level domain ``x`` a budget
``B_x = F(d_x)``, the number of its URLs one BEAST queue may hold, from its PLD
in-degree ``d_x`` (the number of other PLDs linking to it). IRLbot's ``F``: the 10,000
PLDs of highest in-degree get budgets interpolated linearly by rank between 10,000 (rank
1) and 10 (rank 10,000); every other PLD gets ``B0 = 10``.

Only a bounded set of PLDs can differ from ``B0`` here: the ``top`` PLDs of highest
in-degree, kept exactly by :class:`TopDomains` in RAM (about 200 bytes each). Every
budget function is evaluated over that set (its in-degree and rank); every PLD outside
it has ``B0``. For ``share`` and the paper's function this is exact; for the degree-valued ones
(proportional, logarithmic) it means the top set must be as large as the PLDs meant to
rise above ``B0`` (``IRL_STAR_TOP_DOMAINS``). So RAM never grows with the PLDs of the
crawl (IRLbot met 89 million), and a lookup is one dict access.

:class:`TopDomains` takes the stream of in-degree totals that the in-degree DRUM
returns (one per update, the PLD's new total) and keeps every PLD whose in-degree
exceeds its *floor*; it holds at most ``2 * size`` PLDs and trims itself back to the
``size`` best when full, raising the floor to the lowest in-degree kept. In-degrees only
grow, so a PLD left out has at most the floor and comes back with its next update above
it. Invariant (tested against a brute-force count): *the in-degrees of
:meth:`TopDomains.ranked` are exactly the ``size`` largest in-degrees of all PLDs*
(which PLDs win a tie at the boundary is arbitrary). The cost of a batch of updates is
one numpy comparison plus a dict write per PLD above the floor, and ranking sorts at
most ``2 * size`` entries: nothing grows with the number of PLDs.

Budget functions, chosen by ``IRL_BUDGET_FUNCTION``; each is ``F(in_degree, rank,
scale)`` for a ranked PLD (rank 1 = highest in-degree) and returns pages per BEAST
queue, clipped to ``[1, scale.maximum]``:

- ``share`` (the default): the paper's line over the crawl's own top set. The
  ``scale.crawl_top`` PLDs of highest in-degree, ``IRL_STAR_TOP_SHARE`` of the PLDs the
  crawl has seen (at least 1, at most ``top``), get budgets from ``maximum`` at rank 1
  down, linear in rank, to one step above ``default``; every other PLD gets ``default``;
- ``paper``: the same line over a fixed count, ``maximum`` at rank 1 down to ``default``
  at rank ``top`` (``IRL_STAR_TOP_DOMAINS``);
- ``constant``: ``default`` for every PLD (STAR's ranking without its effect);
- ``proportional``: ``default * in_degree``;
- ``logarithmic``: ``default * (1 + log2(in_degree))``;
- an import path (``package.module.function`` or ``package.module:function``) to a
  function of the same signature.

Why ``share`` and not the paper's count (issue 37). IRLbot's top 10,000 were 10,000 of
the 89.7 million PLDs of its graph: 0.011%, sites that tens of thousands of other PLDs
link to. The same count on a crawl that has seen 25,000 PLDs is 40% of them, and gives
rank 100 a budget of 9,901: on the in-vitro ``spam`` web the farms, whose bought links
on 40% of the legitimate PLDs rank them near 100, got budgets near the maximum and a
broad crawl more spam than stock Scrapy's (BENCHMARKS.md, issue 37). A share of the
PLDs seen means the same at every size: at the paper's scale it is the paper's function
(``PAPER_TOP_SHARE`` x 89.7 million = 10,000 PLDs, budgets within a page of the
paper's), and on a small crawl it raises only the few PLDs that stand out from all the
rest. Rank, not in-degree, is what the share bounds: an in-degree threshold (``d >= k
x`` the median, say) is a fixed price a farm can pay in links, while under the share it
must outrank all but a sliver of the crawl's PLDs.

Why plain in-degree, each linking PLD counted once whatever its own standing: weighing
a link by its source's in-degree was measured on the ``spam`` web's own graph
(``python bench/quality.py --standing``) and moves the farms' median rank from 130 to
120-125 (the comment spam sits on PLDs like any others); PageRank moves them up, to
54-75, because a farm's PLDs link to each other. Neither buys anything here.

Where budgets come from (``IRL_BUDGET_MODE``, :func:`budget_sources`): ``star``, the ranking
and the function above; ``constant``, ``B0`` for every PLD (STAR still counts in-degrees,
for the report); ``off``, no per-PLD limit in a BEAST queue (:data:`UNLIMITED`: BEAST is
one FIFO queue read slot by slot, a plain frontier) while the delays stay those of
``B0``. The last two are the controls that isolate what budgets and STAR add.
"""

from __future__ import annotations

import math
import numbers
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from irlscrapy.exceptions import ConfigurationError

#: IRL_STAR_TOP_SHARE's default: the paper's top set, 10,000 of the 89,652,630 PLDs of
#: IRLbot's PLD graph (seeds/003 section VIII).
PAPER_TOP_SHARE = 10_000 / 89_652_630


@dataclass(frozen=True)
class BudgetScale:
    default: int  # B0: a PLD outside the ranking
    maximum: int  # the largest budget any function may give
    top: int  # PLDs ranked (IRL_STAR_TOP_DOMAINS): the most that can differ from B0
    top_share: float = PAPER_TOP_SHARE  # IRL_STAR_TOP_SHARE, for ``share``
    plds: int = 0  # PLDs the crawl has seen, at the refresh that ranked them

    def __post_init__(self) -> None:
        if self.default < 1:
            raise ConfigurationError(f"the default budget must be >= 1 (got {self.default})")
        if self.maximum < self.default:
            raise ConfigurationError(
                f"IRL_BUDGET_MAX ({self.maximum}) is below the default budget ({self.default})"
            )
        if self.top < 1:
            raise ConfigurationError(f"IRL_STAR_TOP_DOMAINS must be >= 1 (got {self.top})")
        if not 0 < self.top_share <= 1:
            raise ConfigurationError(f"IRL_STAR_TOP_SHARE must be in (0, 1] (got {self.top_share})")

    @property
    def crawl_top(self) -> int:
        """The ranks ``share`` raises above ``default``: ``top_share`` of the PLDs seen,
        at least 1 and at most ``top``."""
        return max(1, min(self.top, round(self.top_share * self.plds)))


BudgetFunction = Callable[[int, int, BudgetScale], float]


def share(in_degree: int, rank: int, scale: BudgetScale) -> float:
    """The default: the ``scale.crawl_top`` PLDs of highest in-degree (the crawl's own
    top share) get ``maximum`` at rank 1 down, linear in rank, to the step above
    ``default``; every other PLD gets ``default``. (At the paper's scale this is
    :func:`paper` to within one page: rank 10,000 gets 11 rather than 10.)"""
    top = scale.crawl_top
    if rank > top:
        return scale.default
    return scale.maximum - (rank - 1) * (scale.maximum - scale.default) / top


def paper(in_degree: int, rank: int, scale: BudgetScale) -> float:
    """IRLbot's: linear in rank, ``maximum`` at rank 1, ``default`` at rank ``top``."""
    if scale.top == 1:
        return scale.maximum
    step = (scale.maximum - scale.default) / (scale.top - 1)
    return scale.maximum - (rank - 1) * step


def constant(in_degree: int, rank: int, scale: BudgetScale) -> float:
    return scale.default


def proportional(in_degree: int, rank: int, scale: BudgetScale) -> float:
    return scale.default * in_degree


def logarithmic(in_degree: int, rank: int, scale: BudgetScale) -> float:
    return scale.default * (1 + math.log2(in_degree))


FUNCTIONS: dict[str, BudgetFunction] = {
    "share": share,
    "paper": paper,
    "constant": constant,
    "proportional": proportional,
    "logarithmic": logarithmic,
}


def budget_function(name: str) -> BudgetFunction:
    """The function a setting names: one of :data:`FUNCTIONS` or an import path."""
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    if "." not in name and ":" not in name:
        raise ConfigurationError(
            f"IRL_BUDGET_FUNCTION={name!r}: choose one of {', '.join(FUNCTIONS)} "
            "or give an import path (package.module.function)"
        )
    try:
        found = pkgutil.resolve_name(name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigurationError(f"IRL_BUDGET_FUNCTION={name!r}: {exc}") from exc
    if not callable(found):
        raise ConfigurationError(f"IRL_BUDGET_FUNCTION={name!r} is not callable")
    return found


def budget(function: BudgetFunction, in_degree: int, rank: int, scale: BudgetScale) -> int:
    """``function``'s budget for a ranked PLD, as a whole number in [1, maximum]."""
    value = function(in_degree, rank, scale)
    if not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigurationError(f"budget function {function!r} returned {value!r}")
    return max(1, min(scale.maximum, round(value)))


#: IRL_BUDGET_MODE: where a PLD's budget comes from (see the module docstring).
MODES = ("star", "constant", "off")
#: A PLD's BEAST budget with IRL_BUDGET_MODE = "off": no queue ever fills for it (BEAST
#: packs a domain's fill count in 32 bits).
UNLIMITED = (1 << 32) - 1


def budget_mode(value: str) -> str:
    """IRL_BUDGET_MODE, checked."""
    if value not in MODES:
        raise ConfigurationError(f"IRL_BUDGET_MODE={value!r}: choose one of {', '.join(MODES)}")
    return value


def budget_sources(
    mode: str, star: Callable[[int], int] | None, default: int
) -> tuple[Callable[[int], int], Callable[[int], int]]:
    """(BEAST's budget of a PLD key, the budget that scales its hosts' delays) in
    ``mode``; ``star``: STAR's budget of a PLD key (None: STAR does not run)."""

    def constant(_: int) -> int:
        return default

    if mode == "star" and star is not None:
        return star, star
    if mode == "off":
        return (lambda _: UNLIMITED), constant
    return constant, constant


class Ranked(NamedTuple):
    """A ranked PLD: the totals its in-degree DRUM holds."""

    key: int
    name: str
    in_degree: int
    pages: int


class TopDomains:
    """The ``size`` PLDs of highest in-degree, from a stream of totals (see the module
    docstring for the invariant)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.floor = 0  # no PLD left out has an in-degree above it
        self._entries: dict[int, tuple[int, int, str]] = {}  # key -> (in-degree, pages, name)

    def __len__(self) -> int:
        return len(self._entries)

    def offer(
        self,
        keys: np.ndarray,
        in_degrees: np.ndarray,
        pages: np.ndarray,
        names: Sequence[bytes],
    ) -> None:
        """PLDs' totals after some updates (a PLD may appear more than once: totals only
        grow, so its last one wins). An empty name keeps the name already known."""
        candidates = np.flatnonzero(in_degrees >= max(self.floor, 1))
        entries = self._entries
        for i in candidates.tolist():
            key = int(keys[i])
            name = names[i].decode()
            if not name:
                name = entries.get(key, (0, 0, ""))[2]
            entries[key] = (int(in_degrees[i]), int(pages[i]), name)
        if len(entries) > 2 * self.size:
            self._trim()

    def unnamed(self) -> list[int]:
        """Keys of PLDs held without a name."""
        return [key for key, (_, _, name) in self._entries.items() if not name]

    def name(self, key: int, name: str) -> None:
        degree, pages, _ = self._entries[key]
        self._entries[key] = (degree, pages, name)

    def _trim(self) -> None:
        best = best_first(self._entries, self.size)
        self._entries = dict(best)
        self.floor = best[-1][1][0]

    def ranked(self) -> list[Ranked]:
        """The top PLDs, highest in-degree first (ties: by key)."""
        best = best_first(self._entries, self.size)
        return [Ranked(key, name, degree, pages) for key, (degree, pages, name) in best]


def best_first(
    entries: dict[int, tuple[int, int, str]], size: int
) -> list[tuple[int, tuple[int, int, str]]]:
    """The ``size`` entries of highest in-degree, in that order (ties: by key). Sorted by
    numpy, which lets other threads run: ``sorted()`` of 10^5 entries in the refresh
    thread held the GIL, and so the reactor, for a quarter of a second."""
    items = list(entries.items())
    keys = np.fromiter((key for key, _ in items), dtype=np.uint64, count=len(items))
    degrees = np.fromiter((entry[0] for _, entry in items), dtype=np.int64, count=len(items))
    order = np.argsort(keys, kind="stable")
    order = order[np.argsort(-degrees[order], kind="stable")][:size]
    return [items[i] for i in order.tolist()]


def budgets(
    ranked: Sequence[Ranked], function: BudgetFunction, scale: BudgetScale
) -> dict[int, int]:
    """The budget of every ranked PLD whose budget is not ``scale.default``."""
    table: dict[int, int] = {}
    for rank, entry in enumerate(ranked, 1):
        value = budget(function, entry.in_degree, rank, scale)
        if value != scale.default:
            table[entry.key] = value
    return table
