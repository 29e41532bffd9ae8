"""BEAST's placement: the slot each record goes to, and eq. 31's placement figures.
Many records are placed at once as one placement after another would place them, with
numpy doing the per-record arithmetic.

BEAST places a record of domain ``x`` with budget ``B_x`` in the first slot of the
window (``reading + 1 .. last``) in which ``x`` still has budget, and in QF when no slot
of the window has (:mod:`irlscrapy.scheduler.frontier.beast`). Per domain that is a
counter: a domain's state is the pair (``slot``, ``fill``) of its last record placed,
so its next record goes to ``slot`` if ``fill < B_x`` and to ``slot + 1`` otherwise.
For a batch, the ``i``-th record of domain ``x`` (in arrival order) therefore goes to
``s0 + (f0 + i) // B_x`` from the domain's starting pair (``s0``, ``f0``), or to QF once
that passes ``last``; so only the starting pair and the budget are asked per distinct
domain, and the rest is array arithmetic. A QF re-split places its records in slices of
thousands (``RESPLIT_SLICE``), where one placement after another cost about 4 us a
record in Python.

Invariant (tests/unit/test_placement.py, against one placement after another): *the
slots, the pairs left behind and the budget sum are those of placing the records one
by one in arrival order.*
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from irlscrapy.scheduler.frontier.distinct import DistinctCount

#: A domain's state is ``slot << FILL_BITS | fill``: the slot of its last record placed,
#: and how many of its records that slot holds.
FILL_BITS = 32
FILL_MASK = (1 << FILL_BITS) - 1
#: The slot given to a record that goes to QF.
TO_QF = -1


class Placed(NamedTuple):
    slots: np.ndarray  # int64, one per record: its slot, or TO_QF
    budget_sum: int  # the sum of the budget of each record's domain
    distinct: list[int]  # the domains of the batch, each once


def next_place(pair: int, budget: int, reading: int) -> tuple[int, int]:
    """Where a domain's next record goes, from its ``pair``: ``(slot, fill)``, the fill
    counted before the record (the window's end is the caller's to check)."""
    slot, fill = pair >> FILL_BITS, pair & FILL_MASK
    if slot <= reading:
        slot, fill = reading + 1, 0
    if fill >= budget:
        slot, fill = slot + 1, 0
    return slot, fill


def place_one(
    domain: int, budget: int, pairs: dict[int, int], reading: int, last: int
) -> int | None:
    """The slot of one record of ``domain`` (None: QF); ``pairs`` updated."""
    slot, fill = next_place(pairs.get(domain, 0), budget, reading)
    if slot > last:
        return None
    pairs[domain] = slot << FILL_BITS | (fill + 1)
    return slot


def place_many(
    domains: np.ndarray,
    budget_of: Callable[[int], int],
    pairs: dict[int, int],
    reading: int,
    last: int,
) -> Placed:
    """The slot of each record of ``domains`` (uint64, arrival order), as
    :func:`place_one` called for each in turn would give (see the module docstring);
    ``pairs`` updated. ``budget_of(domain)`` is asked once per distinct domain."""
    distinct, inverse, counts = np.unique(domains, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    # each record's rank among its domain's records, in arrival order
    order = np.argsort(inverse, kind="stable")
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(len(domains), dtype=np.int64)
    rank[order] = np.arange(len(domains), dtype=np.int64) - first[inverse[order]]
    # per distinct domain: its budget and the pair its first record starts from
    keys = distinct.tolist()
    budgets = np.empty(len(keys), dtype=np.int64)
    start_slot = np.empty(len(keys), dtype=np.int64)
    start_fill = np.empty(len(keys), dtype=np.int64)
    for u, domain in enumerate(keys):
        budget = max(1, budget_of(domain))
        slot, fill = next_place(pairs.get(domain, 0), budget, reading)
        budgets[u], start_slot[u], start_fill[u] = budget, slot, fill
    position = start_fill[inverse] + rank  # fill before the record, counted from s0
    slots = start_slot[inverse] + position // budgets[inverse]
    slots[slots > last] = TO_QF
    # the pair each domain is left with: that of its last record placed, if any
    fits = (last - start_slot) * budgets + (budgets - start_fill)  # records the window takes
    placed = np.minimum(counts, np.maximum(fits, 0))
    for u in np.flatnonzero(placed).tolist():
        end = int(start_fill[u] + placed[u] - 1)
        budget = int(budgets[u])
        pairs[keys[u]] = (int(start_slot[u]) + end // budget) << FILL_BITS | (end % budget + 1)
    return Placed(slots, int((budgets * counts).sum()), keys)


def found_in(pairs: dict[int, int], domain: int, slot: int) -> None:
    """A record of ``domain`` found in ``slot`` when BEAST opens (slots read in any
    order): the domain's pair becomes that of its latest slot, and counts it."""
    pair = pairs.get(domain)
    if pair is None or slot > pair >> FILL_BITS:
        pairs[domain] = slot << FILL_BITS | 1
    elif slot == pair >> FILL_BITS:
        pairs[domain] = pair + 1


def by_slot(slots: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """``(slot, indices)`` for each slot of ``slots`` (TO_QF too), the indices of its
    records in arrival order."""
    order = np.argsort(slots, kind="stable")
    for group in np.split(order, np.flatnonzero(np.diff(slots[order])) + 1):
        if len(group):
            yield int(slots[group[0]]), group


class Placement:
    """Each domain's pair (where its next record goes) and eq. 31's figures of the
    placements: the distinct domains placed (V, estimated), the sum of the budgets of
    the placements and their count (E[B_x])."""

    def __init__(self, budget_of: Callable[[int], int]) -> None:
        self.budget_of = budget_of  # the domain's current budget B_x (>= 1)
        self.pairs: dict[int, int] = {}  # domain -> slot << FILL_BITS | fill
        self._kept = 0  # len(pairs) after the last drop of read slots' pairs
        self.domains = DistinctCount()
        self.budget_sum = 0
        self.placed = 0

    def one(self, domain: int, reading: int, last: int) -> int | None:
        """The slot of a record of ``domain`` in the window ``reading + 1 .. last``
        (None: QF)."""
        budget = max(1, self.budget_of(domain))
        self.domains.add(domain)
        self.budget_sum += budget
        self.placed += 1
        return place_one(domain, budget, self.pairs, reading, last)

    def many(self, domains: np.ndarray, reading: int, last: int) -> np.ndarray:
        """The slot of each record of ``domains`` (arrival order; TO_QF: QF), as
        :meth:`one` for each in turn would give."""
        placed = place_many(domains, self.budget_of, self.pairs, reading, last)
        for domain in placed.distinct:
            self.domains.add(domain)
        self.budget_sum += placed.budget_sum
        self.placed += len(domains)
        return placed.slots

    def found(self, domain: int, slot: int) -> None:
        found_in(self.pairs, domain, slot)

    def forget_before(self, slot: int) -> None:
        """Drop the pairs of domains whose last record is in a slot before ``slot`` (read:
        their next record starts a slot anew) once they are half the pairs held."""
        if len(self.pairs) > 2 * self._kept + 1024:
            first = slot << FILL_BITS
            self.pairs = {d: p for d, p in self.pairs.items() if p >= first}
            self._kept = len(self.pairs)

    def mean_budget(self) -> float:
        return self.budget_sum / self.placed if self.placed else 1.0

    def state(self) -> dict[str, object]:
        return {
            "budget_sum": self.budget_sum,
            "placed": self.placed,
            "domains": self.domains.state(),
        }

    def restore(self, state: dict[str, object]) -> None:
        self.budget_sum = int(state.get("budget_sum", 0))  # type: ignore[call-overload]
        self.placed = int(state.get("placed", 0))  # type: ignore[call-overload]
        self.domains = DistinctCount.from_state(state.get("domains"))
