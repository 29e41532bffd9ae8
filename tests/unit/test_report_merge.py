"""One report of a multi-agent crawl from its agents' records: STAR stores merged in key
order (a PLD once, however the stores are chunked), the per-PLD tables over the union
of the agents' PLDs, the agents' timelines summed on one time grid; and two agents'
synthetic JOBDIRs reported together, every figure checked against a count by hand."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.cli import main
from irlscrapy.domains import domain_key
from irlscrapy.exceptions import ReportError
from irlscrapy.report.analysis import (
    InDegreeBins,
    Sample,
    covered_seconds,
    grid_rates,
    grid_uniqueness,
    on_grid,
)
from irlscrapy.report.merge import agents_data
from irlscrapy.report.plds import Block, PLDTables, Ranking, merged_chunks
from irlscrapy.report.reader import read_crawls
from irlscrapy.report.render import PNG_PLDS, PNG_RATE, SUMMARY_LABELS, write_agents_report
from irlscrapy.scheduler.hosts.delays import Politeness
from tests.reportdirs import (
    SETTINGS,
    TWO_AGENTS,
    TWO_AGENTS_PLDS,
    agent_settings,
    write_state_dir,
    write_two_agents,
)

POLITENESS = Politeness(
    host_delay=40.0, host_delay_min=2.0, ip_delay=1.0, ip_delay_min=0.1, default_budget=10
)

# -- STAR's stores, merged -------------------------------------------------------------
#: A store: PLD key -> (in-degree, pages); keys from a small range, so stores overlap.
stores_st = st.lists(
    st.dictionaries(st.integers(0, 40), st.tuples(st.integers(0, 9), st.integers(0, 5))),
    min_size=1,
    max_size=4,
)


def chunked(store: dict[int, tuple[int, int]], cuts: list[int]) -> list[Any]:
    """The store as its DRUM yields it: ascending keys, cut into chunks at ``cuts``."""
    keys = sorted(store)
    bounds = [0, *sorted({c % (len(keys) + 1) for c in cuts}), len(keys)]
    return [
        (
            np.array(keys[lo:hi], np.uint64),
            np.array([store[k][0] for k in keys[lo:hi]], np.uint64),
            np.array([store[k][1] for k in keys[lo:hi]], np.uint64),
        )
        for lo, hi in itertools.pairwise(bounds)
    ]


@given(stores_st, st.lists(st.integers(0, 50), max_size=6))
def test_merged_blocks_hold_every_record_once_in_key_order_each_key_in_one_block(
    stores: list[dict[int, tuple[int, int]]], cuts: list[int]
) -> None:
    blocks = list(merged_chunks([chunked(store, cuts) for store in stores]))
    got = Counter()
    block_of: dict[int, int] = {}
    previous = -1
    for i, block in enumerate(blocks):
        keys = block.keys.tolist()
        assert keys == sorted(keys) and (not keys or keys[0] > previous)
        previous = keys[-1] if keys else previous
        for key, d, p, s in zip(keys, block.in_degrees, block.pages, block.stores, strict=True):
            assert block_of.setdefault(key, i) == i  # all of a key's records in one block
            got[(key, int(s), int(d), int(p))] += 1
    expected = Counter(
        (key, s, d, p) for s, store in enumerate(stores) for key, (d, p) in store.items()
    )
    assert got == expected


def test_a_store_out_of_key_order_is_refused() -> None:
    chunks = [
        (np.array([5, 9], np.uint64), np.zeros(2, np.uint64), np.zeros(2, np.uint64)),
        (np.array([7], np.uint64), np.zeros(1, np.uint64), np.zeros(1, np.uint64)),
    ]
    with pytest.raises(ReportError, match="store 1 yields PLD keys out of order"):
        list(merged_chunks([chunks]))


def ranking_of(store: dict[int, tuple[int, int]], top: int) -> Ranking:
    """The store's ranking as STAR makes it (in-degree >= 1, highest first, ties by
    key), each ranked PLD's budget 100 + its key + 1000 * its store's rank."""
    ranked = sorted((k for k, (d, _) in store.items() if d >= 1), key=lambda k: (-store[k][0], k))
    ranked = ranked[:top]
    return Ranking(ranked, [f"p{k}" for k in ranked], [100 + k for k in ranked], default=10)


@given(stores_st, st.lists(st.integers(0, 50), max_size=6), st.integers(1, 6))
def test_pld_tables_count_each_pld_once_largest_in_degree_summed_pages_largest_budget(
    stores: list[dict[int, tuple[int, int]]], cuts: list[int], top: int
) -> None:
    rankings = [ranking_of(store, top) for store in stores]
    tables = PLDTables(rankings, top)
    for block in merged_chunks([chunked(store, cuts) for store in stores]):
        tables.add(block)
    records = tables.records(POLITENESS)
    # the brute-force model: a dict over the union of the stores' PLDs
    union: dict[int, tuple[int, int, int]] = {}
    for store, ranking in zip(stores, rankings, strict=True):
        budgets = dict(zip(ranking.keys, ranking.budgets, strict=True))
        for key, (d, p) in store.items():
            d0, p0, b0 = union.get(key, (0, 0, 0))
            union[key] = (max(d0, d), p0 + p, max(b0, budgets.get(key, 10)))
    assert records.plds == len(union)
    assert records.shared_plds == sum(
        1 for key in union if sum(key in store for store in stores) > 1
    )
    assert records.crawled_plds == sum(1 for _, p, _ in union.values() if p > 0)
    bins = InDegreeBins()
    keys = sorted(union)
    bins.add(np.array([union[k][0] for k in keys]), np.array([union[k][1] for k in keys]))
    assert records.bins.bins() == bins.bins()
    delays = Counter(POLITENESS.host(b) for _, p, b in union.values() if p > 0)
    assert records.host_delays == dict(sorted(delays.items()))
    # the top PLDs of the union: of every store's ranked ones, the best ``top``
    candidates = {k for ranking in rankings for k in ranking.keys}
    best = sorted(candidates, key=lambda k: (-union[k][0], k))[:top]
    assert records.leaders == [
        (rank, f"p{k}", union[k][0], union[k][2], union[k][1]) for rank, k in enumerate(best, 1)
    ]


def test_an_empty_block_changes_nothing() -> None:
    tables = PLDTables([Ranking([], [], [], 10)], 5)
    empty = np.zeros(0, np.uint64)
    tables.add(Block(empty, empty, empty, np.zeros(0, np.int64)))
    assert (tables.plds, tables.records(POLITENESS).leaders) == (0, [])


# -- timelines on one grid -------------------------------------------------------------
def steady(run: int, t0: float, t1: float, step: float, rate: float) -> list[Sample]:
    """A run growing ``rate`` pages/s (and as many URLs, a quarter duplicates), sampled
    every ``step`` seconds from ``t0``."""
    times = np.arange(t0, t1 + step / 2, step).tolist()
    return [
        Sample(t, run, (t - t0) * rate, (t - t0) * rate * 0.75, (t - t0) * rate / 4) for t in times
    ]


def test_the_grid_rate_is_the_sum_of_the_agents_rates_however_they_are_sampled() -> None:
    a = steady(1, 0.0, 100.0, 10.0, 3.0)
    b = steady(1, 3.0, 93.0, 7.5, 5.0)  # other instants, another period
    rates = grid_rates(on_grid([a, b], 10.0))
    # bins both agents cover in full: 3 + 5 pages/s
    inner = [r.pages_per_second for r in rates if 20.0 <= r.t <= 90.0]
    assert inner == pytest.approx([8.0] * 8)
    first, last = rates[0], rates[-1]
    assert first.t == 10.0 and first.pages_per_second == pytest.approx(3.0 + 5.0 * 0.7)
    assert last.t == 100.0 and last.pages_per_second == pytest.approx(3.0 + 5.0 * 0.3)


def test_the_grid_loses_no_growth_and_skips_time_no_agent_ran() -> None:
    a = steady(1, 0.0, 20.0, 10.0, 2.0) + steady(2, 50.0, 60.0, 5.0, 4.0)
    b = steady(1, 5.0, 25.0, 10.0, 1.0)
    bins = on_grid([a, b], 10.0)
    assert [b.end for b in bins] == [10.0, 20.0, 30.0, 60.0]  # [30, 50): nobody ran
    assert [b.seconds for b in bins] == [10.0, 10.0, 5.0, 10.0]
    assert sum(b.pages for b in bins) == pytest.approx(40 + 40 + 20)
    points = grid_uniqueness(bins)
    assert [u.pages for u in points] == pytest.approx([25.0, 55.0, 60.0, 100.0])
    assert all(u.p == pytest.approx(0.75 / (0.75 + 0.25)) for u in points)
    assert covered_seconds([(0.0, 20.0), (5.0, 25.0), (50.0, 60.0)]) == 35.0


def test_one_timeline_on_the_grid_keeps_its_own_rates() -> None:
    a = [Sample(0.0, 1), Sample(10.0, 1, pages=50, bytes=1000), Sample(20.0, 1, 70, bytes=1400)]
    rates = [list(r) for r in grid_rates(on_grid([a], 10.0))]
    assert rates == [[10.0, 5.0, 800.0], [20.0, 2.0, 320.0]]
    assert on_grid([[Sample(5.0, 1)]], 10.0) == []


# -- two agents' JOBDIRs ---------------------------------------------------------------
@pytest.fixture
def two_agents(tmp_path: Path) -> tuple[Path, Path]:
    return write_two_agents(tmp_path)


def test_two_agents_report_sums_counters_and_bins_rates_on_one_grid(
    two_agents: tuple[Path, Path],
) -> None:
    crawls, star = read_crawls(list(two_agents))
    data = agents_data(crawls, star)
    summary = data["summary"]
    for figure in ("pages", "unique_urls", "duplicates", "seconds_crawling"):
        assert summary[figure] == TWO_AGENTS[figure], figure
    assert summary["p"] == TWO_AGENTS["unique_urls"] / (
        TWO_AGENTS["unique_urls"] + TWO_AGENTS["duplicates"]
    )
    assert (summary["agents"], summary["runs"], summary["finish_reason"]) == (2, 3, "finished")
    assert data["status"] == TWO_AGENTS["status"]
    assert data["restarts"] == TWO_AGENTS["restarts"]
    assert data["grid_seconds"] == 10.0 and data["start"] == 1000.0
    assert data["download_rate"] == TWO_AGENTS["download_rate"]
    assert data["uniqueness"] == TWO_AGENTS["uniqueness"]
    agents = [(a["agent"], a["runs"], a["restarts"], a["pages"]) for a in data["agents"]]
    assert agents == [("a", 2, [1040.0], 350), ("b", 1, [], 150)]


def test_two_agents_pld_tables_are_the_union_with_a_shared_pld_counted_once(
    two_agents: tuple[Path, Path],
) -> None:
    crawls, star = read_crawls(list(two_agents))
    data = agents_data(crawls, star)
    plds = TWO_AGENTS_PLDS
    assert data["summary"]["plds"] == len(plds) == 6
    assert data["summary"]["crawled_plds"] == sum(1 for _, p in plds.values() if p) == 5
    assert data["summary"]["shared_plds"] == 1
    assert any("1 PLD(s) were in more than one agent's STAR store" in n for n in data["notes"])
    # in-degree 0: b1.com (2 pages); 1: a2.com (1); 2-3: a1 3, a3 0, b2 1, moved 3
    assert data["in_degree_bins"] == [
        [0, 0, 1, 2, 2.0, 2.0],
        [1, 1, 1, 1, 1.0, 1.0],
        [2, 3, 4, 7, 1.75, 2.0],
    ]
    # each PLD's budget is its owner's (leaders.json, rewritten as the report opened the
    # store); moved.com, ranked by both, has the larger
    budgets: dict[str, int] = {}
    for job in two_agents:
        for row in json.loads((job / "star" / "leaders.json").read_text()):
            budgets[row["pld"]] = max(budgets.get(row["pld"], 0), row["budget"])
    ranked = sorted(
        (pld for pld in plds if plds[pld][0] > 0), key=lambda x: (-plds[x][0], domain_key(x))
    )
    assert data["top_plds"] == [
        [rank, pld, plds[pld][0], budgets[pld], plds[pld][1]] for rank, pld in enumerate(ranked, 1)
    ]
    politeness = Politeness(
        host_delay=40.0,
        host_delay_min=SETTINGS["IRL_HOST_DELAY_MIN"],
        ip_delay=SETTINGS["IRL_IP_DELAY"],
        ip_delay_min=SETTINGS["IRL_IP_DELAY_MIN"],
        default_budget=SETTINGS["IRL_BUDGET_DEFAULT"],
    )
    crawled = [pld for pld, (_, pages) in plds.items() if pages]
    delays = Counter(politeness.host(budgets.get(pld, 10)) for pld in crawled)
    assert data["host_delays"] == {str(k): v for k, v in sorted(delays.items())}


def test_two_agents_report_names_them_and_marks_each_ones_restarts(
    two_agents: tuple[Path, Path], tmp_path: Path
) -> None:
    page = write_agents_report(list(two_agents), tmp_path / "out")
    html = page.read_text()
    assert "One crawl of 2 agents" in html
    for agent, job in zip("ab", two_agents, strict=True):
        assert f"<tr data-key='{agent}'><th>{agent}</th><td><code>{job}</code></td>" in html
    label = SUMMARY_LABELS["pages"]
    assert f"<tr data-key='pages'><th>{label}</th><td>500</td></tr>" in html
    # the stats table has a column per agent
    assert "<tr><th>stat</th><th>a</th><th>b</th></tr>" in html
    assert "<tr><th>response_received_count</th><td>50</td><td>150</td></tr>" in html
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["state_dirs"] == [str(job) for job in two_agents] and "state_dir" not in data
    assert (tmp_path / "out" / PNG_RATE).exists() and (tmp_path / "out" / PNG_PLDS).exists()


def test_agents_without_an_id_are_named_by_their_directory_and_notes_say_what_differs(
    tmp_path: Path,
) -> None:
    run = [(0.0, [(10.0, 10, 10, 0)], {"200": 10})]
    x, y, z = tmp_path / "x" / "job", tmp_path / "y" / "job", tmp_path / "z"
    write_state_dir(x, run, agent_settings(""))  # no agent id: named "job", as y
    write_state_dir(y, run, {**SETTINGS, "IRL_CRAWL_ID": "other"})  # one process
    write_state_dir(z, run, agent_settings("c"), finish_reason=None)  # killed
    crawls, star = read_crawls([x, y, z])
    data = agents_data(crawls, star)
    assert [a["agent"] for a in data["agents"]] == [f"job ({x})", f"job ({y})", "c"]
    assert star is None and data["star"] is False
    notes = "\n".join(data["notes"])
    assert "different crawls (IRL_CRAWL_ID 'example', 'other')" in notes
    assert f"agent job ({y}) ran as a crawl of one process" in notes
    assert "agent c: run 1 did not close cleanly" in notes
    assert data["summary"]["finish_reason"] is None  # c's last run did not close
    assert data["summary"]["pages"] == 30


def test_errors_name_every_directory_that_cannot_be_reported(tmp_path: Path) -> None:
    a, b = write_two_agents(tmp_path)
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "LOCK").write_text("")
    with pytest.raises(ReportError, match=r"bare has no report records \(report/timeline"):
        read_crawls([a, tmp_path / "bare"])
    with pytest.raises(ReportError) as raised:
        read_crawls([a, tmp_path / "absent", b, a])
    message = str(raised.value)
    assert message.startswith("2 problems with the state directories given:")
    assert f"{tmp_path / 'absent'} is not a directory" in message
    assert f"{a} is given twice: give each agent's JOBDIR once" in message
    link = tmp_path / "link"
    link.symlink_to(b)
    with pytest.raises(ReportError, match=f"{link} is the same directory as {b}: give each"):
        read_crawls([b, link])


def test_cli_wants_out_for_several_jobdirs(
    two_agents: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_agents
    assert main(["report", str(a), str(b)]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    assert not (a / "report" / "report.html").exists()
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "report.html")
