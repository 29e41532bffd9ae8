"""DistinctCount: exact below its limit, a HyperLogLog within a few percent above it."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.scheduler.frontier.distinct import _SCALE, EXACT_LIMIT, DistinctCount


def key(i: int) -> int:
    return int.from_bytes(hashlib.blake2b(str(i).encode(), digest_size=8).digest(), "big")


@given(st.lists(st.integers(0, 10_000), max_size=300))
def test_small_counts_are_exact_and_survive_a_save(values: list[int]) -> None:
    counter = DistinctCount()
    for v in values:
        counter.add(key(v))
    assert counter.estimate() == len(set(values))
    assert DistinctCount.from_state(counter.state()).estimate() == len(set(values))


def test_large_counts_are_within_five_percent_and_never_decrease() -> None:
    counter = DistinctCount()
    last = 0
    for i in range(200_000):
        counter.add(key(i))
        counter.add(key(i // 2))  # repeats change nothing
        if i % 997 == 0:
            estimate = counter.estimate()
            assert estimate >= last
            last = estimate
    assert abs(counter.estimate() - 200_000) < 0.05 * 200_000
    restored = DistinctCount.from_state(counter.state())
    assert restored.estimate() == counter.estimate()


def test_the_switch_to_the_sketch_keeps_the_count() -> None:
    counter = DistinctCount()
    for i in range(EXACT_LIMIT + 1):
        counter.add(key(i))
    assert abs(counter.estimate() - (EXACT_LIMIT + 1)) < 0.05 * EXACT_LIMIT


def test_a_state_from_before_the_count_reads_as_empty() -> None:
    assert DistinctCount.from_state(None).estimate() == 0


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=200))
def test_the_kept_sum_and_zero_count_match_the_registers(extra: list[int]) -> None:
    counter = DistinctCount()
    for i in range(EXACT_LIMIT + 1):
        counter.add(key(i))
    for k in extra:
        counter.add(k)
    registers = counter._registers
    assert registers is not None
    assert counter._harmonic == sum(1 << (_SCALE - r) for r in registers)
    assert counter._zeros == registers.count(0)
