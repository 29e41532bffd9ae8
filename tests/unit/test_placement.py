"""BEAST's placement of a batch at once is its placement one record after another."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.scheduler.frontier.placement import FILL_BITS, TO_QF, place_many, place_one

DOMAINS = st.integers(0, 6) | st.integers(0, 2**64 - 1)
PAIRS = st.dictionaries(
    st.integers(0, 6),
    st.tuples(st.integers(0, 12), st.integers(0, 9)).map(lambda p: p[0] << FILL_BITS | p[1]),
)


@given(
    domains=st.lists(DOMAINS, max_size=60),
    budgets=st.dictionaries(st.integers(0, 6), st.integers(-1, 5)),
    pairs=PAIRS,
    reading=st.integers(0, 8),
    window=st.integers(1, 6),
)
def test_a_batch_is_placed_as_one_record_after_another(
    domains: list[int], budgets: dict[int, int], pairs: dict[int, int], reading: int, window: int
) -> None:
    last = reading + window

    def budget_of(domain: int) -> int:
        return budgets.get(domain, 2)

    one_by_one = dict(pairs)
    expected = []
    for domain in domains:
        slot = place_one(domain, max(1, budget_of(domain)), one_by_one, reading, last)
        expected.append(TO_QF if slot is None else slot)
    at_once = dict(pairs)
    placed = place_many(np.array(domains, dtype=np.uint64), budget_of, at_once, reading, last)
    assert placed.slots.tolist() == expected
    assert at_once == one_by_one
    assert placed.budget_sum == sum(max(1, budget_of(d)) for d in domains)
    assert sorted(placed.distinct) == sorted(set(domains))


def test_a_domain_fills_its_slots_in_turn_and_the_rest_goes_to_qf() -> None:
    pairs = {7: 3 << FILL_BITS | 1}  # slot 3 holds one of its records
    placed = place_many(np.array([7] * 6, dtype=np.uint64), lambda d: 2, pairs, 2, 4)
    assert placed.slots.tolist() == [3, 4, 4, TO_QF, TO_QF, TO_QF]
    assert pairs == {7: 4 << FILL_BITS | 2}
