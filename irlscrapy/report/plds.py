"""The report's per-PLD tables (Fig. 7(b), Table VIII, the host delays) from one STAR
in-degree store or from several agents' stores, read once, one chunk of each in RAM at
a time. No Scrapy import; tested in tests/unit/test_report_merge.py.

Theory of operation
-------------------
A store yields its PLDs in ascending key order, in chunks
(:meth:`irlscrapy.storage.drum.DRUM.items`: bucket by bucket, a bucket being a range
of keys, each key once). :func:`merged_chunks` merges several such streams into one
stream of blocks in key order: each step takes from every stream the keys up to the
smallest last key of their current chunks, so at least one chunk is used up per step,
and *all the records of one key are in one block*. :class:`PLDTables` takes the blocks
and counts every PLD once.

*Several agents.* The agents of a multi-agent crawl own disjoint PLDs
(:mod:`irlscrapy.distributed.partitions`): a PLD's pages, its in-degree (edges are sent
to the owner of their target) and its budget are at its owner only, so the tables are
over the union of the stores' PLDs, as if one store held them all. A PLD in more than
one store (its partition moved to another agent when the crawl's membership changed,
and both counted it) is counted once: with its largest in-degree (each agent counted
the distinct PLDs linking to it that it heard of; the largest is a lower bound of the
whole, the sum could count a linking PLD twice), the sum of its pages (each page was
crawled once, by the agent that owned the PLD then) and its largest budget.
:attr:`StarRecords.shared_plds` says how many PLDs were so combined.

*Top PLDs.* Each store ranks its PLDs by in-degree (:class:`irlscrapy.star.budgets.TopDomains`,
ties by key). The union of every store's first ``top`` holds the first ``top`` of all
the stores together (a PLD left out of its best store's first ``top`` is beaten there by
``top`` others, each as high or higher in the union), so only those candidates are
looked up in the blocks and ranked again, with their combined figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from irlscrapy.exceptions import ReportError
from irlscrapy.report.analysis import InDegreeBins, host_delays
from irlscrapy.scheduler.hosts.delays import Politeness

#: One chunk of a store: PLD keys (ascending, each once), their in-degrees, their pages.
Chunk = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class StarRecords:
    plds: int  # PLDs in the in-degree store(s) (linked to or crawled), each counted once
    crawled_plds: int  # of those, PLDs with a page crawled
    bins: InDegreeBins
    #: the top PLDs: (rank, name, in-degree, budget, pages)
    leaders: list[tuple[int, str, int, int, int]]
    #: crawled PLDs by the host delay their final budget implies
    host_delays: dict[float, int]
    shared_plds: int = 0  # PLDs found in more than one store (see the module docstring)


@dataclass(frozen=True)
class Ranking:
    """One store's ranking at its last refresh: its ranked PLDs in rank order, each with
    its budget; every PLD not ranked has the ``default`` budget."""

    keys: Sequence[int]
    names: Sequence[str]
    budgets: Sequence[int]
    default: int


class Block(NamedTuple):
    """Records of several stores in key order; ``stores[i]``: the store of record i."""

    keys: np.ndarray
    in_degrees: np.ndarray
    pages: np.ndarray
    stores: np.ndarray


def merged_chunks(streams: Sequence[Iterable[Chunk]]) -> Iterator[Block]:
    """Every record of ``streams`` (one per store, each in ascending key order) in
    blocks in key order, all the records of one key in one block (see the module
    docstring). Raises ReportError if a stream is out of order."""
    iterators = [iter(stream) for stream in streams]
    heads: list[Chunk | None] = [_next(i, it, None) for i, it in enumerate(iterators)]
    while True:
        live = [i for i, head in enumerate(heads) if head is not None]
        if not live:
            return
        frontier = min(_head(heads, i)[0][-1] for i in live)
        parts: list[Chunk] = []
        stores = []
        for i in live:
            keys, in_degrees, pages = _head(heads, i)
            cut = int(np.searchsorted(keys, frontier, side="right"))
            parts.append((keys[:cut], in_degrees[:cut], pages[:cut]))
            stores.append(np.full(cut, i, dtype=np.int64))
            if cut < len(keys):
                heads[i] = (keys[cut:], in_degrees[cut:], pages[cut:])
            else:
                heads[i] = _next(i, iterators[i], keys[-1])
        keys = np.concatenate([p[0] for p in parts])
        order = np.argsort(keys, kind="stable")
        yield Block(
            keys[order],
            np.concatenate([p[1] for p in parts])[order],
            np.concatenate([p[2] for p in parts])[order],
            np.concatenate(stores)[order],
        )


def _head(heads: list[Chunk | None], i: int) -> Chunk:
    head = heads[i]
    assert head is not None
    return head


def _next(store: int, chunks: Iterator[Chunk], after: np.uint64 | None) -> Chunk | None:
    """The next non-empty chunk of ``chunks``, checked to follow key ``after``."""
    for keys, in_degrees, pages in chunks:
        if not len(keys):
            continue
        keys = np.asarray(keys, dtype=np.uint64)
        if (after is not None and keys[0] <= after) or bool(np.any(keys[1:] <= keys[:-1])):
            raise ReportError(
                f"STAR's store {store + 1} yields PLD keys out of order: it is damaged, or "
                "of another irlscrapy version; report on it alone, or with the version "
                "that ran the crawl"
            )
        return keys, np.asarray(in_degrees, np.uint64), np.asarray(pages, np.uint64)
    return None


class PLDTables:
    """The per-PLD tables, fed the blocks of :func:`merged_chunks` (any number of
    stores, ``rankings[i]`` store i's); :meth:`records` gives them."""

    def __init__(self, rankings: Sequence[Ranking], top: int) -> None:
        self.top = top
        self.bins = InDegreeBins()
        self.plds = 0  # distinct PLDs seen
        self.crawled = 0
        self.shared = 0
        self.records_read = 0  # records of all stores (the progress meter's count)
        self._defaults = np.array([r.default for r in rankings], dtype=np.uint64)
        # per store: its ranked keys, sorted, and their budgets in the same order
        self._ranked: list[tuple[np.ndarray, np.ndarray]] = []
        candidates: dict[int, str] = {}
        for ranking in rankings:
            keys = np.array(ranking.keys, dtype=np.uint64)
            order = np.argsort(keys)
            self._ranked.append((keys[order], np.array(ranking.budgets, np.uint64)[order]))
            for key, name in zip(ranking.keys[:top], ranking.names[:top], strict=True):
                candidates.setdefault(int(key), name)
        self._names = candidates
        self._candidates = np.array(sorted(candidates), dtype=np.uint64)
        self._found: dict[int, tuple[int, int, int]] = {}  # candidate -> degree, budget, pages
        self._budgets: Counter[int] = Counter()  # crawled PLDs by budget

    def add(self, block: Block) -> None:
        n = len(block.keys)
        if not n:
            return
        self.records_read += n
        budgets = self._budgets_of(block)
        starts = np.flatnonzero(np.r_[True, block.keys[1:] != block.keys[:-1]])
        keys = block.keys[starts]
        in_degrees = np.maximum.reduceat(block.in_degrees, starts)
        pages = np.add.reduceat(block.pages, starts)
        budget = np.maximum.reduceat(budgets, starts)
        self.shared += int(np.count_nonzero(np.diff(np.r_[starts, n]) > 1))
        self.plds += len(keys)
        self.bins.add(in_degrees, pages)
        visited = pages > 0
        self.crawled += int(np.count_nonzero(visited))
        values, counts = np.unique(budget[visited], return_counts=True)
        self._budgets.update(dict(zip(values.tolist(), counts.tolist(), strict=True)))
        for i in np.flatnonzero(np.isin(keys, self._candidates)).tolist():
            self._found[int(keys[i])] = (int(in_degrees[i]), int(budget[i]), int(pages[i]))

    def _budgets_of(self, block: Block) -> np.ndarray:
        """Each record's budget at its store."""
        budgets = self._defaults[block.stores]
        for store in np.unique(block.stores).tolist():
            ranked_keys, ranked_budgets = self._ranked[store]
            if not len(ranked_keys):
                continue
            mine = np.flatnonzero(block.stores == store)
            at = np.minimum(np.searchsorted(ranked_keys, block.keys[mine]), len(ranked_keys) - 1)
            hit = ranked_keys[at] == block.keys[mine]
            budgets[mine[hit]] = ranked_budgets[at[hit]]
        return budgets

    def records(self, politeness: Politeness) -> StarRecords:
        """The tables; host delays as ``politeness`` derives them from budgets."""
        best = sorted(self._found.items(), key=lambda item: (-item[1][0], item[0]))[: self.top]
        leaders = [
            (rank, self._names[key], degree, budget, pages)
            for rank, (key, (degree, budget, pages)) in enumerate(best, 1)
        ]
        return StarRecords(
            self.plds,
            self.crawled,
            self.bins,
            leaders,
            host_delays(politeness, self._budgets),
            self.shared,
        )
