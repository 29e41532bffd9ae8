"""``PLDInDegree``: STAR's PLD in-degree store and the budgets it gives (seeds/003 VI.B).

Theory of operation
-------------------
For every crawled page, :meth:`PLDInDegree.record_page` takes its PLD and the PLDs it
links to. Two DRUMs (:mod:`irlscrapy.storage.drum`) do the rest in batches:

- ``edges``: one check+update per unique (source PLD, target PLD) pair of a page, key
  :func:`edge_key`, value the target's key (so the refresh thread hashes nothing),
  aux the target's name. A pair seen before is a duplicate; a new pair is a new in-link
  of its target.
- ``indegree``, u64 values added: per PLD, ``in_degree << 32 | pages``. A new edge adds
  ``1 << 32`` to its target (aux: the name), a crawled page adds 1 to its own PLD. So
  one store counts both, and each update's result is the PLD's new totals.

A *refresh* runs in its own low-priority worker thread (:class:`MergeThread`): merge
``edges``; submit its new pairs to ``indegree`` and acknowledge ``edges`` (the order
that loses nothing: the indegree journal holds them before the edge results go);
merge ``indegree``; offer its totals to :class:`TopDomains` and acknowledge; rank and
compute the budget table (over the PLDs the ``indegree`` store holds, the PLDs seen, for
the ``share`` function). The reactor thread then swaps the new table in, so
:meth:`budget_of` (called for every unique URL on its way to BEAST) is one dict
lookup. A refresh starts when the edge DRUM's fullest bucket is full or
``refresh_seconds`` after the previous one; pages are recorded meanwhile.

Files under its directory (``<state dir>/star``): ``edges/`` and ``indegree/``, DRUM
directories; ``names/``, a LevelDB of the names of PLDs that were ever ranked (the
DRUMs keep 64-bit keys only) and of the *transfer marker* ``!transfer``;
``leaders.json``, rewritten (atomically) by each refresh: the :data:`LEADERS` PLDs of
highest in-degree with their budget and pages, for the report. A restart merges what
the previous run left, then rebuilds the ranking by reading ``indegree``'s cache once
(one chunk in RAM at a time) and names it from ``names/``: the ranking is derived
data, never stored. Recorded
pages are buffered up to :data:`SUBMIT_EVERY` tuples before they reach the DRUM
journals: a kill -9 forgets at most that much link evidence (URLs are never involved:
they go through URLseen).

Crash semantics (kill -9 at any instant): every submitted edge is counted exactly once.
An edge batch's new pairs are submitted to ``indegree`` before the edge batch is
acknowledged; a kill in between would have the restart deliver and submit it again, so
before each such submit the marker records (edge batch, the sequence number its
in-degree batch will get), with page batches held off meanwhile: on open, an in-degree
sequence number past the marker's says the submit was done, and the redelivered edge
batch is skipped. Names are written before the in-degree results are acknowledged. A
refresh that fails stops refreshing for the run (the crawl is closing); the next open
resumes from the files.

Scale: 16 bytes per edge and 16 per PLD on disk; in RAM, the DRUMs' buffers
(``memory`` each) and the ranking (``top`` PLDs). IRLbot's crawl had 1.8 billion PLD
edges and 89 million PLDs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import struct
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from twisted.internet import defer

from irlscrapy import defaults
from irlscrapy.domains import domain_key
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.mergethread import MergeThread
from irlscrapy.star.budgets import (
    BudgetFunction,
    BudgetScale,
    Ranked,
    TopDomains,
    budget_function,
    budget_mode,
    budgets,
    constant,
)
from irlscrapy.storage.cachedb import open_cache_db
from irlscrapy.storage.drum import CHECK_UPDATE, DRUM, UPDATE
from irlscrapy.storage.drumsizing import DrumSizes

logger = logging.getLogger(__name__)

#: One in-link in an ``indegree`` value (the low 32 bits count pages).
EDGE = 1 << 32
PAGES_MASK = EDGE - 1
#: Recorded tuples held in RAM before they are submitted to the DRUMs.
SUBMIT_EVERY = 256
NAMES_FORMAT = b"1"
#: In ``names/``: (edge batch, in-degree batch sequence number) of the last transfer.
_TRANSFER_KEY = b"!transfer"
_TRANSFER = struct.Struct(">QQ")
#: PLDs listed in ``leaders.json``.
LEADERS = 100
_U64 = struct.Struct(">Q")


def edge_key(source: str, target: str) -> int:
    """The 64-bit key of the PLD edge ``source -> target``."""
    digest = hashlib.blake2b(f"{source}\n{target}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class PLDInDegree:
    """See the module docstring.

    Invariant: *a PLD's in-degree is the number of distinct other PLDs with a recorded
    page linking to it, and its pages the number of its recorded pages, once the
    records are refreshed* (tested against a brute-force count across refreshes and
    restarts).
    """

    def __init__(
        self,
        function: BudgetFunction,
        scale: BudgetScale,
        *,
        memory: int,
        refresh_seconds: float,
        clock: Callable[[], float],
        stats: Any = None,
        in_thread: Callable[..., defer.Deferred[Any]] | None = None,
    ) -> None:
        self.function = function
        self.scale = scale
        self.sizes = DrumSizes.from_memory(memory)
        self.refresh_seconds = refresh_seconds
        self.clock = clock
        self.stats = stats
        self._merge_thread: MergeThread | None = None
        if in_thread is None:
            self._merge_thread = in_thread = MergeThread()
        self._in_thread = in_thread
        self.on_error: Callable[[Any], None] = lambda failure: None
        self.edges: DRUM | None = None
        self.indegree: DRUM | None = None
        self.path: Path | None = None
        self.names: Any = None  # plyvel.DB
        self._named: set[int] = set()  # ranked, with their names stored
        self._transferred = 0  # edge batches up to this one are counted in ``indegree``
        self._broken = False  # a refresh failed: none until the next open()
        self._indegree_intake = threading.Lock()
        self.top = TopDomains(scale.top)
        self.ranked: list[Ranked] = []  # the last refresh's ranking (read on the reactor)
        self._budgets: dict[int, int] = {}
        self._edge_keys: list[int] = []
        self._edge_target_keys: list[int] = []
        self._edge_targets: list[bytes] = []
        self._page_keys: list[int] = []
        self._page_names: list[bytes] = []
        self._refreshing: defer.Deferred[Any] | None = None
        self._last_refresh = 0.0

    @classmethod
    def from_settings(cls, settings: Any, stats: Any, clock: Callable[[], float]) -> PLDInDegree:
        scale = BudgetScale(
            default=defaults.get(settings, "IRL_BUDGET_DEFAULT"),
            maximum=defaults.get(settings, "IRL_BUDGET_MAX"),
            top=defaults.get(settings, "IRL_STAR_TOP_DOMAINS"),
            top_share=defaults.get(settings, "IRL_STAR_TOP_SHARE"),
        )
        refresh = defaults.get(settings, "IRL_STAR_REFRESH")
        memory = defaults.get(settings, "IRL_STAR_DRUM_MEMORY")
        if refresh <= 0:
            raise ConfigurationError(f"IRL_STAR_REFRESH must be > 0 (got {refresh})")
        if memory < 1 << 20:
            raise ConfigurationError(f"IRL_STAR_DRUM_MEMORY must be >= 1 MiB (got {memory})")
        # Outside "star" mode no ranking sets a budget: the stats and the report say B0.
        function: BudgetFunction = constant
        if budget_mode(defaults.get(settings, "IRL_BUDGET_MODE")) == "star":
            function = budget_function(defaults.get(settings, "IRL_BUDGET_FUNCTION"))
        return cls(
            function,
            scale,
            memory=memory,
            refresh_seconds=refresh,
            clock=clock,
            stats=stats,
        )

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, path: Path, on_error: Callable[[Any], None] | None = None) -> None:
        """Open the two DRUMs under ``path``; ``on_error(failure)``: a refresh failed (it
        stops refreshing, and loses nothing: see the module docstring)."""
        self.path = path
        if on_error is not None:
            self.on_error = on_error
        sizes = self.sizes
        common: dict[str, Any] = {
            "buckets": sizes.buckets,
            "bucket_bytes": sizes.bucket_bytes,
            "spill_bytes": sizes.spill_bytes,
        }
        self.edges = DRUM(path / "edges", value_dtype="<u8", **common)
        self.indegree = DRUM(path / "indegree", value_dtype="<u8", combine="add", **common)
        try:
            self.edges.open()
            self.indegree.open()
            self.names = open_cache_db(path / "names", NAMES_FORMAT, "STAR PLD names")
            self._load()
        except BaseException:
            self._close(submit=False)
            raise
        self._last_refresh = self.clock()

    def _load(self) -> None:
        """Rebuild the ranking from the stores, and finish what a stop interrupted."""
        assert self.indegree is not None and self.names is not None
        marker = self.names.get(_TRANSFER_KEY)
        if marker is not None:  # see _refresh: was that edge batch's submit done?
            edge_seq, indegree_seq = _TRANSFER.unpack(marker)
            self._transferred = edge_seq if self.indegree.next_seq > indegree_seq else edge_seq - 1
        for keys, values in self.indegree.items():
            assert values is not None
            in_degrees = values >> np.uint64(32)
            self.top.offer(keys, in_degrees, values & np.uint64(PAGES_MASK), [b""] * len(keys))
        for key in self.top.unnamed():
            name = self.names.get(_U64.pack(key))
            if name is not None:
                self.top.name(key, name.decode())
        self._install(self._refresh())  # what the previous run left unmerged

    def close(self) -> defer.Deferred[None] | None:
        """Submit what is buffered (merged on the next open) and close the DRUMs, after
        a refresh that is running."""
        if self._refreshing is None:
            self._close()
            return None
        done: defer.Deferred[None] = defer.Deferred()
        self._refreshing.addBoth(lambda _: self._close())
        self._refreshing.addBoth(done.callback)
        return done

    def _close(self, submit: bool = True) -> None:
        if self._merge_thread is not None:
            self._merge_thread.stop()
        try:
            if submit and self.edges is not None and self.indegree is not None:
                self._submit()
        finally:
            for drum in (self.edges, self.indegree):
                if drum is not None:
                    drum.close()
            self.edges = self.indegree = None
            if self.names is not None:
                self.names.close()
                self.names = None

    # -- intake (reactor thread) ---------------------------------------------------------
    def record_page(self, source: str, targets: Iterable[str]) -> None:
        """A crawled page of PLD ``source`` linking to the PLDs ``targets`` (repeats and
        ``source`` itself are ignored)."""
        self._page_keys.append(domain_key(source))
        self._page_names.append(source.encode())
        for target in set(targets):
            self._add_edge(source, target)
        if len(self._edge_keys) + len(self._page_keys) >= SUBMIT_EVERY:
            self._submit()
        self.maybe_refresh()

    def record_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        """PLD edges (source, target) that another agent of a multi-agent crawl saw on
        its pages, for this agent owns their targets: counted as :meth:`record_page`
        counts a page's, without the page; in the DRUM journal (durable) on return."""
        for source, target in edges:
            self._add_edge(source, target)
        self._submit()
        self.maybe_refresh()

    def _add_edge(self, source: str, target: str) -> None:
        if target != source:
            self._edge_keys.append(edge_key(source, target))
            self._edge_target_keys.append(domain_key(target))
            self._edge_targets.append(target.encode())

    def _submit(self) -> None:
        assert self.edges is not None and self.indegree is not None, "open() first"
        if self._edge_keys:
            self.edges.submit(
                self._edge_keys, CHECK_UPDATE, self._edge_target_keys, self._edge_targets
            )
            self._edge_keys, self._edge_target_keys, self._edge_targets = [], [], []
        if self._page_keys:
            n = len(self._page_keys)
            with self._indegree_intake:
                self.indegree.submit(
                    self._page_keys, UPDATE, np.ones(n, np.uint64), self._page_names
                )
            self._page_keys, self._page_names = [], []

    def maybe_refresh(self) -> None:
        assert self.edges is not None, "open() first"
        if self._refreshing is not None or self._broken:
            return
        due = self.clock() - self._last_refresh >= self.refresh_seconds
        if due or self.edges.should_merge():
            self.refresh()

    def refresh(self) -> defer.Deferred[Any]:
        """Merge what was recorded and recompute the budgets, in the worker thread."""
        if self._refreshing is not None:
            return self._refreshing
        if self._broken:
            return defer.succeed(None)
        self._submit()
        self._last_refresh = self.clock()
        running = self._refreshing = self._in_thread(self._refresh)
        running.addCallback(self._install)
        running.addErrback(self._failed)
        return running

    def _failed(self, failure: Any) -> None:
        """A refresh failed part-way: no more refreshes in this run (one that picked up
        where this stopped could acknowledge edge results never counted); the next
        open() resumes from what is on disk."""
        self._refreshing = None
        self._broken = True
        self.on_error(failure)

    # -- the refresh (worker thread, or open()) ------------------------------------------
    def _refresh(self) -> tuple[list[Ranked], dict[int, int]]:
        edges, indegree = self.edges, self.indegree
        assert edges is not None and indegree is not None
        names_db = self.names
        assert edges is not None and indegree is not None and names_db is not None
        edges.merge()
        for batch in edges.results():
            assert batch.aux is not None and batch.values is not None
            new = batch.unique.nonzero()[0]
            if len(new) and batch.seq > self._transferred:
                aux = batch.aux
                names = [aux[i] for i in new.tolist()]
                ones = np.full(len(new), EDGE, np.uint64)
                # written first: after a kill between this submit and the ack below, the
                # redelivered batch is recognised (its in-degree batch exists) and skipped
                with self._indegree_intake:  # no page batch between the two
                    names_db.put(_TRANSFER_KEY, _TRANSFER.pack(batch.seq, indegree.next_seq))
                    try:
                        indegree.submit(batch.values[new], UPDATE, ones, names)
                    except BaseException:  # not handed over: the next open() submits it
                        names_db.delete(_TRANSFER_KEY)
                        raise
            edges.ack(batch.seq)
        indegree.merge()
        last = 0
        for batch in indegree.results():
            assert batch.values is not None and batch.aux is not None
            values = batch.values
            self.top.offer(
                batch.keys, values >> np.uint64(32), values & np.uint64(PAGES_MASK), batch.aux
            )
            last = batch.seq
        ranked = self.top.ranked()
        with names_db.write_batch() as write:  # names first: the results go with the ack
            for entry in ranked:
                if entry.name and entry.key not in self._named:
                    write.put(_U64.pack(entry.key), entry.name.encode())
                    self._named.add(entry.key)
        if last:
            indegree.ack(last)
        self._named &= {entry.key for entry in ranked}
        scale = dataclasses.replace(self.scale, plds=indegree.stored_keys)
        table = budgets(ranked, self.function, scale)
        self._write_leaders(ranked, table)
        return ranked, table

    def _write_leaders(self, ranked: list[Ranked], table: dict[int, int]) -> None:
        """``leaders.json``: the :data:`LEADERS` PLDs of highest in-degree, for the report."""
        assert self.path is not None
        rows = [
            {
                "pld": e.name,
                "in_degree": e.in_degree,
                "budget": table.get(e.key, self.scale.default),
                "pages": e.pages,
            }
            for e in ranked[:LEADERS]
        ]
        temporary = self.path / "leaders.json.tmp"
        temporary.write_text(json.dumps(rows, indent=0))
        temporary.replace(self.path / "leaders.json")

    def _install(self, result: tuple[list[Ranked], dict[int, int]]) -> None:
        self._refreshing = None
        self.ranked, self._budgets = result
        if self.stats is not None and self.edges is not None and self.indegree is not None:
            self.stats.inc_value("irl/star/refreshes")
            self.stats.set_value("irl/star/plds", self.indegree.stored_keys)
            self.stats.set_value("irl/star/edges", self.edges.stored_keys)
            for label, count in self.budget_distribution().items():
                self.stats.set_value(f"irl/star/budget/{label}", count)

    # -- answers -------------------------------------------------------------------------
    def budget_of(self, pld_key: int) -> int:
        """B_x of the PLD with key ``pld_key`` (:func:`irlscrapy.domains.domain_key`)."""
        return self._budgets.get(pld_key, self.scale.default)

    def budget_distribution(self) -> dict[str, int]:
        """PLDs by budget, in decades: ``"10"`` (the default), ``"11-100"``, ..."""
        plds = self.indegree.stored_keys if self.indegree is not None else 0
        counts: dict[str, int] = {str(self.scale.default): plds - len(self._budgets)}
        for value in self._budgets.values():
            label = _decade(value, self.scale.default)
            counts[label] = counts.get(label, 0) + 1
        return counts

    def leaders(self, n: int) -> list[tuple[str, int, int, int]]:
        """The ``n`` PLDs of highest in-degree at the last refresh: (name, in-degree,
        budget, pages crawled)."""
        return [
            (entry.name, entry.in_degree, self.budget_of(entry.key), entry.pages)
            for entry in self.ranked[:n]
        ]


def _decade(value: int, default: int) -> str:
    if value < default:
        return f"1-{default - 1}"
    low = default + 1
    high = default * 10
    while value > high:
        low, high = high + 1, high * 10
    return f"{low}-{high}"
