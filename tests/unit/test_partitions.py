"""Ownership of PLDs across agents (irlscrapy.distributed.partitions)."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.distributed.partitions import (
    assignment,
    check_partitions,
    owner,
    partition_of,
    weight,
)
from irlscrapy.exceptions import ConfigurationError

agent_ids = st.sets(st.text("abcdefgh0123456789-", min_size=1, max_size=8), min_size=1, max_size=9)
partition_counts = st.integers(1, 300)


@given(agent_ids, partition_counts)
def test_every_partition_has_exactly_one_live_owner(agents: set[str], partitions: int) -> None:
    owned = assignment(agents, partitions)
    assert set(owned) == agents
    everything = [p for parts in owned.values() for p in parts]
    assert sorted(everything) == list(range(partitions))


@given(agent_ids, partition_counts, st.data())
def test_a_leaving_agent_moves_only_its_partitions(
    agents: set[str], partitions: int, data: st.DataObject
) -> None:
    if len(agents) < 2:
        return
    leaving = data.draw(st.sampled_from(sorted(agents)))
    before = assignment(agents, partitions)
    after = assignment(agents - {leaving}, partitions)
    for agent in agents - {leaving}:
        assert before[agent] <= after[agent]
        assert after[agent] - before[agent] <= before[leaving]


@given(agent_ids, partition_counts, st.text("xyz", min_size=1, max_size=4))
def test_a_joining_agent_takes_partitions_and_nothing_else_moves(
    agents: set[str], partitions: int, newcomer: str
) -> None:
    if newcomer in agents:
        return
    before = assignment(agents, partitions)
    after = assignment(agents | {newcomer}, partitions)
    for agent in agents:
        assert after[agent] <= before[agent]
    assert after[newcomer] == frozenset().union(*(before[a] - after[a] for a in agents))


@given(agent_ids, partition_counts)
def test_the_assignment_does_not_depend_on_the_order_of_the_ids(
    agents: set[str], partitions: int
) -> None:
    ordered = sorted(agents)
    assert assignment(ordered, partitions) == assignment(reversed(ordered), partitions)
    for p in range(min(partitions, 20)):
        assert owner(p, ordered) == owner(p, reversed(ordered))


def test_partitions_spread_evenly_over_agents_and_plds_over_partitions() -> None:
    owned = assignment([f"agent-{n}" for n in range(4)], 1024)
    sizes = [len(parts) for parts in owned.values()]
    assert min(sizes) > 0.8 * 256 and max(sizes) < 1.2 * 256
    counts = [0] * 64
    for n in range(64_000):
        counts[partition_of(f"site{n}.example", 64)] += 1
    assert statistics.pstdev(counts) < 3 * statistics.mean(counts) ** 0.5


def test_the_partition_function_never_changes() -> None:
    """Agents of one crawl, run by different releases, must agree: these values are part
    of what PARTITION_FUNCTION names (the stable domain key, never the builtin hash())."""
    assert [partition_of(name, 97) for name in ("example.com", "w0.com", "s1x2.co.uk")] == [
        54,
        33,
        26,
    ]
    assert weight("agent-1", 5) == 13650219934935705365


@pytest.mark.parametrize("bad", [0, -1, (1 << 16) + 1])
def test_a_partition_count_out_of_range_is_refused(bad: int) -> None:
    with pytest.raises(ConfigurationError, match="IRL_AGENT_PARTITIONS"):
        check_partitions(bad)


def test_no_agent_no_owner() -> None:
    with pytest.raises(ValueError, match="no live agent"):
        owner(0, [])
