"""STAR's in-degree store on real DRUMs: counts equal a brute-force count of the link
stream, across refreshes and close/reopen; budgets follow the ranking."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet import defer

from irlscrapy.domains import domain_key
from irlscrapy.star import indegree as reputation_module
from irlscrapy.star.budgets import BudgetFunction, BudgetScale, budget, paper, share
from irlscrapy.star.indegree import PLDInDegree

PLDS = [f"d{i}.com" for i in range(12)]


def synchronously(f: Any, *args: Any) -> defer.Deferred[Any]:
    return defer.maybeDeferred(f, *args)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(
    clock: Clock, scale: BudgetScale, stats: Any = None, function: BudgetFunction = paper
) -> PLDInDegree:
    return PLDInDegree(
        function,
        scale,
        memory=1 << 20,
        refresh_seconds=3600.0,
        clock=clock,
        stats=stats,
        in_thread=synchronously,
    )


pages = st.tuples(
    st.sampled_from(PLDS), st.lists(st.sampled_from(PLDS), max_size=6)
)  # (the page's PLD, the PLDs of its links)
steps = st.lists(st.one_of(pages, st.just("refresh"), st.just("reopen")), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(stream=steps, function=st.sampled_from([paper, share]))
def test_in_degrees_and_pages_equal_a_brute_force_count(
    stream: list[Any], function: BudgetFunction
) -> None:
    """...and the budgets are the function's over that ranking; ``share``'s over the
    PLDs seen (crawled or linked to) at the refresh."""
    scale = BudgetScale(default=10, maximum=1_000, top=len(PLDS), top_share=0.25)
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        rep = make(clock, scale, function=function)
        rep.open(path)
        sources: dict[str, set[str]] = {}  # target -> linking PLDs
        crawled: dict[str, int] = {}
        for step in [*stream, "refresh"]:
            if step == "reopen":
                rep.close()
                rep = make(clock, scale, function=function)
                rep.open(path)
            elif step == "refresh":
                rep.refresh()
            else:
                source, targets = step
                rep.record_page(source, targets)
                crawled[source] = crawled.get(source, 0) + 1
                for target in targets:
                    if target != source:
                        sources.setdefault(target, set()).add(source)
            if step in ("refresh", "reopen"):  # both leave everything merged
                expected = {
                    pld: (len(sources.get(pld, ())), crawled.get(pld, 0))
                    for pld in set(sources) | set(crawled)
                    if sources.get(pld)
                }
                got = {e.name: (e.in_degree, e.pages) for e in rep.ranked}
                assert got == expected
                order = sorted(expected, key=lambda p: (-expected[p][0], domain_key(p)))
                seen = dataclasses.replace(scale, plds=len(set(sources) | set(crawled)))
                for rank, pld in enumerate(order, 1):
                    want = budget(function, expected[pld][0], rank, seen)
                    assert rep.budget_of(domain_key(pld)) == want
        assert rep.budget_of(domain_key("never-linked.com")) == scale.default
        rep.close()


def test_names_survive_a_restart_without_new_evidence(tmp_path: Path) -> None:
    clock = Clock()
    scale = BudgetScale(default=10, maximum=100, top=3)
    rep = make(clock, scale)
    rep.open(tmp_path)
    for source in ("a.com", "b.com", "c.com"):
        rep.record_page(source, ["hub.com", "mid.com" if source != "c.com" else "hub.com"])
    rep.refresh()
    before = rep.leaders(3)
    assert [name for name, *_ in before] == ["hub.com", "mid.com"]
    rep.close()
    rep = make(clock, scale)
    rep.open(tmp_path)
    assert rep.leaders(3) == before
    rep.close()
    written = json.loads((tmp_path / "leaders.json").read_text())
    assert [(r["pld"], r["in_degree"], r["budget"], r["pages"]) for r in written] == before


def test_refresh_runs_when_due_or_when_the_edge_buffers_fill(tmp_path: Path) -> None:
    clock = Clock()
    rep = PLDInDegree(
        paper,
        BudgetScale(10, 100, 5),
        memory=1 << 20,
        refresh_seconds=10.0,
        clock=clock,
        in_thread=synchronously,
    )
    rep.open(tmp_path)
    rep.record_page("a.com", ["b.com"])
    assert rep.leaders(1) == []  # recorded, not refreshed
    clock.now = 10.0
    rep.record_page("a.com", ["c.com"])
    assert {name for name, *_ in rep.leaders(5)} == {"b.com", "c.com"}
    rep.close()


def test_a_crash_loses_at_most_the_unsubmitted_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What reached the DRUM journals survives without close(); the buffer does not."""
    monkeypatch.setattr(reputation_module, "SUBMIT_EVERY", 4)
    clock = Clock()
    scale = BudgetScale(10, 100, 10)
    rep = make(clock, scale)
    rep.open(tmp_path)
    rep.record_page("a.com", ["x.com", "y.com", "z.com"])  # 1 page + 3 edges: submitted
    rep.record_page("b.com", ["x.com"])  # 1 page + 1 edge: buffered
    assert rep.edges is not None and rep.indegree is not None
    rep.edges.close()  # the process dies: files closed by the OS, nothing flushed by us
    rep.indegree.close()
    rep.names.close()
    rep = make(clock, scale)
    rep.open(tmp_path)
    assert {(name, d) for name, d, _, _ in rep.leaders(10)} == {
        ("x.com", 1),
        ("y.com", 1),
        ("z.com", 1),
    }
    rep.close()


def test_stats_and_budget_distribution(tmp_path: Path) -> None:
    class Stats(dict[str, Any]):
        def set_value(self, key: str, value: Any) -> None:
            self[key] = value

        def inc_value(self, key: str, count: int = 1) -> None:
            self[key] = self.get(key, 0) + count

    stats = Stats()
    rep = make(Clock(), BudgetScale(10, 1_000, 2), stats)
    rep.open(tmp_path)
    for source in ("a.com", "b.com", "c.com"):
        rep.record_page(source, ["hub.com", "big.com" if source != "c.com" else "x.com"])
    rep.refresh()
    # 6 PLDs known (3 crawled, 3 linked); rank 1 hub.com -> 1,000; rank 2 -> 10 (default)
    assert stats["irl/star/plds"] == 6
    assert stats["irl/star/edges"] == 6
    assert stats["irl/star/budget/10"] == 5
    assert stats["irl/star/budget/101-1000"] == 1
    assert stats["irl/star/refreshes"] == 2  # the open's, and this one
    rep.close()
