"""STAR in a real crawl: after the tiny web is crawled completely, every PLD's in-degree
and page count in the crawl's state equal a brute-force count over the ground truth's
pages and links, and top PLDs got larger budgets. (With ``IRL_BUDGET_MODE = "off"`` the
same web is crawled to its ground truth, STAR still counting, in the one-agent crawl of
tests/e2e/test_agents.py.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import QUICK_IRL, crawl_tiny, side_by_side
from .startruth import TOP, assert_counts_equal, star_counts, star_truth


@side_by_side(seconds=53)
def crawl(root: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The crawl, side by side with the others (conftest.side_by_side)."""
    return crawl_tiny(
        root / "requests.jsonl",
        *QUICK_IRL,
        f"IRL_STATE_DIR={root / 'state'}",
        f"IRL_STAR_TOP_DOMAINS={TOP}",
        "IRL_STAR_REFRESH=1",
    ), root / "state"


def test_in_degrees_and_pages_equal_the_ground_truth(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, state = crawl
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'irl/star/refreshes'" in result.stderr
    assert_counts_equal(star_counts(state / "star"), star_truth())


def test_stats_show_the_budgets_given(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = crawl
    assert "'irl/star/budget/1001-10000'" in result.stderr
    assert "'irl/star/edges'" in result.stderr
