"""STAR's budget functions and the ranking they are evaluated over."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.star.budgets import (
    UNLIMITED,
    BudgetScale,
    Ranked,
    TopDomains,
    best_first,
    budget,
    budget_function,
    budget_mode,
    budget_sources,
    budgets,
    constant,
    logarithmic,
    paper,
    proportional,
    share,
)

PAPER = BudgetScale(default=10, maximum=10_000, top=10_000)


class TestPaperFunction:
    """seeds/003 VIII.B: the top 10K PLDs get budgets linearly interpolated between 10
    and 10K pages; all other PLDs get B0 = 10."""

    def test_rank_one_gets_ten_thousand(self) -> None:
        assert budget(paper, 2_948_085, 1, PAPER) == 10_000  # microsoft.com, Table VIII

    def test_rank_ten_thousand_gets_the_default(self) -> None:
        assert budget(paper, 40, 10_000, PAPER) == 10

    def test_linear_in_rank(self) -> None:
        step = (10_000 - 10) / 9_999
        for rank in (2, 10, 100, 1_000, 5_000, 5_001, 9_999):
            assert budget(paper, 1, rank, PAPER) == round(10_000 - (rank - 1) * step)
        assert budget(paper, 1, 5_000, PAPER) == 5_005  # the midpoint, nearly
        values = [budget(paper, 1, r, PAPER) for r in range(1, 10_001)]
        assert values == sorted(values, reverse=True)

    def test_only_the_ranked_differ_from_the_default(self) -> None:
        ranked = [Ranked(key, "", 10_000 - key, 0) for key in range(10_000)]
        table = budgets(ranked, paper, PAPER)
        assert len(table) == 9_999  # rank 10,000 has the default: not stored
        assert table[0] == 10_000 and 9_999 not in table

    def test_a_top_of_one(self) -> None:
        assert budget(paper, 5, 1, BudgetScale(10, 500, 1)) == 500


class TestShareFunction:
    """The default: the paper's line over the top IRL_STAR_TOP_SHARE of the PLDs seen."""

    def test_at_the_papers_scale_it_is_the_papers_function(self) -> None:
        irlbot = dataclasses.replace(PAPER, plds=89_652_630)  # seeds/003 VIII
        assert irlbot.crawl_top == 10_000
        for rank in (1, 2, 100, 5_000, 9_999, 10_000):
            assert abs(budget(share, 1, rank, irlbot) - budget(paper, 1, rank, PAPER)) <= 1
        assert budget(share, 1, 10_000, irlbot) == 11 and budget(share, 1, 10_001, irlbot) == 10

    def test_a_small_crawl_raises_only_its_own_top(self) -> None:
        """Issue 37: at 25,000 PLDs seen the paper's count gave rank 100 (where the spam
        web's farms ranked) a budget of 9,901; the share raises three ranks."""
        small = dataclasses.replace(PAPER, plds=25_000)
        assert small.crawl_top == 3
        assert budget(paper, 40, 100, small) == 9_901
        raised = [budget(share, 40, r, small) for r in (1, 2, 3, 4, 100)]
        assert raised == [10_000, 6_670, 3_340, 10, 10]

    def test_one_plds_at_least_and_the_ranked_at_most(self) -> None:
        assert dataclasses.replace(PAPER, plds=0).crawl_top == 1
        assert budget(share, 1, 1, dataclasses.replace(PAPER, plds=0)) == 10_000
        huge = BudgetScale(default=10, maximum=10_000, top=50, top_share=0.5, plds=10**9)
        assert huge.crawl_top == 50

    def test_the_share_is_validated(self) -> None:
        for bad in (0.0, -0.1, 1.5):
            with pytest.raises(ConfigurationError, match="IRL_STAR_TOP_SHARE"):
                BudgetScale(default=10, maximum=50, top=10, top_share=bad)


@settings(max_examples=200, deadline=None)
@given(
    plds=st.integers(0, 10**9),
    top=st.integers(1, 20_000),
    top_share=st.floats(1e-6, 1.0),
    maximum=st.integers(10, 10_000),
)
def test_share_falls_with_rank_from_the_maximum_to_the_default(
    plds: int, top: int, top_share: float, maximum: int
) -> None:
    scale = BudgetScale(default=10, maximum=maximum, top=top, top_share=top_share, plds=plds)
    raised = scale.crawl_top
    assert 1 <= raised <= top and raised <= max(1, round(top_share * plds))
    assert budget(share, 1, 1, scale) == maximum
    ranks = sorted({1, 2, raised - 1, raised, raised + 1, top} - {0})
    values = [budget(share, 1, rank, scale) for rank in ranks]
    assert values == sorted(values, reverse=True)
    step = (maximum - 10) / raised  # what the lowest raised rank keeps above the default
    for rank, value in zip(ranks, values, strict=True):  # exactly ``raised`` ranks rise
        assert value == 10 if rank > raised else value >= 10 + round(step)


class TestOtherFunctions:
    def test_constant(self) -> None:
        assert {budget(constant, d, r, PAPER) for d, r in [(1, 1), (10**6, 1), (3, 9)]} == {10}
        ranked = [Ranked(k, "", 100, 0) for k in range(5)]
        assert budgets(ranked, constant, PAPER) == {}

    def test_proportional_to_in_degree_up_to_the_maximum(self) -> None:
        assert budget(proportional, 1, 1, PAPER) == 10
        assert budget(proportional, 7, 1, PAPER) == 70
        assert budget(proportional, 5_000, 1, PAPER) == 10_000

    def test_logarithmic(self) -> None:
        assert budget(logarithmic, 1, 1, PAPER) == 10
        assert budget(logarithmic, 8, 1, PAPER) == 40
        assert budget(logarithmic, 1_000_000, 1, PAPER) == round(10 * (1 + math.log2(10**6)))

    def test_named_and_imported(self) -> None:
        assert budget_function("paper") is paper
        assert budget_function("irlscrapy.star.budgets.logarithmic") is logarithmic
        assert budget_function("irlscrapy.star.budgets:proportional") is proportional

    def test_bad_names_are_explained(self) -> None:
        with pytest.raises(ConfigurationError, match="choose one of share, paper, constant"):
            budget_function("pagerank")
        with pytest.raises(ConfigurationError, match="no_such_module"):
            budget_function("no_such_module.f")
        with pytest.raises(ConfigurationError, match="not callable"):
            budget_function("irlscrapy.star.budgets.FUNCTIONS")

    def test_a_user_function_is_clipped_and_checked(self) -> None:
        assert budget(lambda d, r, s: -5, 1, 1, PAPER) == 1
        assert budget(lambda d, r, s: 10**9, 1, 1, PAPER) == 10_000
        assert budget(lambda d, r, s: np.int64(70), 1, 1, PAPER) == 70
        with pytest.raises(ConfigurationError, match="returned inf"):
            budget(lambda d, r, s: math.inf, 1, 1, PAPER)
        with pytest.raises(ConfigurationError, match="returned 'many'"):
            budget(lambda d, r, s: "many", 1, 1, PAPER)  # type: ignore[arg-type,return-value]

    def test_scale_is_validated(self) -> None:
        with pytest.raises(ConfigurationError, match="IRL_BUDGET_MAX"):
            BudgetScale(default=10, maximum=5, top=10)
        with pytest.raises(ConfigurationError, match="IRL_STAR_TOP_DOMAINS"):
            BudgetScale(default=10, maximum=50, top=0)


# -- TopDomains against a brute-force count ---------------------------------------------
#: A stream of batches; each tuple is (PLD, in-links added, pages added) for one update.
updates = st.lists(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 3), st.integers(0, 2)),
        min_size=1,
        max_size=30,
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 8), stream=updates)
def test_top_domains_holds_the_largest_in_degrees(
    size: int, stream: list[list[tuple[int, int, int]]]
) -> None:
    top = TopDomains(size)
    degree: dict[int, int] = {}
    pages: dict[int, int] = {}
    for batch in stream:
        keys, degrees, page_counts, names = [], [], [], []
        for pld, links, crawled in batch:  # totals after each update, as DRUM returns them
            degree[pld] = degree.get(pld, 0) + links
            pages[pld] = pages.get(pld, 0) + crawled
            keys.append(pld)
            degrees.append(degree[pld])
            page_counts.append(pages[pld])
            names.append(f"p{pld}.com".encode())
        top.offer(
            np.array(keys, np.uint64),
            np.array(degrees, np.uint64),
            np.array(page_counts, np.uint64),
            names,
        )
        assert len(top) <= 2 * size
        ranked = top.ranked()
        linked = sorted((d for d in degree.values() if d > 0), reverse=True)
        assert [r.in_degree for r in ranked] == linked[:size]
        for r in ranked:  # each entry carries its PLD's current totals and name
            assert (r.in_degree, r.pages, r.name) == (degree[r.key], pages[r.key], f"p{r.key}.com")


def test_an_empty_name_keeps_the_known_one() -> None:
    top = TopDomains(4)
    one = np.array([7], np.uint64)
    top.offer(one, one, one, [b"a.com"])
    top.offer(one, one + 1, one, [b""])
    assert top.ranked() == [Ranked(7, "a.com", 8, 7)]
    assert top.unnamed() == []
    top.offer(np.array([9], np.uint64), one, one, [b""])
    assert top.unnamed() == [9]
    top.name(9, "b.com")
    assert top.ranked()[1].name == "b.com"


class TestBudgetModes:
    """IRL_BUDGET_MODE: (BEAST's budget, the budget that scales delays) per mode."""

    def star(self, key: int) -> int:
        return 500 if key == 1 else 10

    def test_star_uses_the_ranking_for_both(self) -> None:
        beast, delays = budget_sources("star", self.star, 10)
        assert (beast(1), delays(1), beast(2)) == (500, 500, 10)

    def test_constant_gives_every_pld_the_default(self) -> None:
        beast, delays = budget_sources("constant", self.star, 10)
        assert (beast(1), delays(1)) == (10, 10)

    def test_off_lifts_beasts_limit_but_keeps_the_default_delays(self) -> None:
        beast, delays = budget_sources("off", self.star, 10)
        assert (beast(1), beast(2), delays(1)) == (UNLIMITED, UNLIMITED, 10)

    def test_star_without_a_star_store_is_constant(self) -> None:
        beast, delays = budget_sources("star", None, 10)
        assert (beast(1), delays(1)) == (10, 10)

    def test_an_unknown_mode_is_refused(self) -> None:
        assert budget_mode("off") == "off"
        with pytest.raises(ConfigurationError, match="IRL_BUDGET_MODE='none': choose one of star"):
            budget_mode("none")


@given(
    st.dictionaries(
        st.integers(0, 2**64 - 1) | st.integers(0, 5),
        st.tuples(st.integers(0, 4), st.integers(0, 3), st.sampled_from(["", "a.com"])),
    ),
    st.integers(1, 8),
)
def test_best_first_is_the_sort_by_in_degree_then_key(
    entries: dict[int, tuple[int, int, str]], size: int
) -> None:
    expected = sorted(entries.items(), key=lambda item: (-item[1][0], item[0]))[:size]
    assert best_first(entries, size) == expected
