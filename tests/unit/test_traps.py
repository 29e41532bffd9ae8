"""Crawler-trap limits on a URL's path: depth and repeated segments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.scheduler.frontier.traps import (
    PATH_DEPTH,
    REPEATED_SEGMENTS,
    TrapLimits,
    path_segments,
)

LIMITS = TrapLimits(max_depth=4, max_repeats=2)


@pytest.mark.parametrize(
    ("url", "trap"),
    [
        ("http://a.example", None),
        ("http://a.example/", None),
        ("http://a.example/a/b/c/d", None),
        ("http://a.example/a/b/c/d/", None),
        ("http://a.example/a/b/c/d/e", PATH_DEPTH),
        ("http://a.example/lib/more/more/more/", REPEATED_SEGMENTS),
        ("http://a.example/x/x?q=/y/y/y/y/y/y", None),  # the query is not the path
        ("http://a.example?q=/y/y/y/y/y/y", None),
        ("http://a.example#/y/y/y/y/y/y", None),
        ("http://a.example:8080//a//b//", None),  # empty segments do not count
    ],
)
def test_limits(url: str, trap: str | None) -> None:
    assert LIMITS.trap(url) == trap


def test_zero_turns_a_limit_off() -> None:
    assert TrapLimits().trap("http://a.example/" + "x/" * 100) is None
    assert TrapLimits(max_depth=0, max_repeats=3).trap("http://a.example/" + "x/" * 4)


@given(st.lists(st.sampled_from(["a", "b", "c", "dd"]), max_size=12))
def test_matches_a_simple_model(segments: list[str]) -> None:
    url = "http://h.example/" + "/".join(segments)
    if len(segments) > 4:
        expected: str | None = PATH_DEPTH
    elif segments and max(segments.count(s) for s in segments) > 2:
        expected = REPEATED_SEGMENTS
    else:
        expected = None
    assert LIMITS.trap(url) == expected


def _trap_by_splitting(limits: TrapLimits, url: str) -> str | None:
    """The check without its shortcut (a count of slashes): the path split always."""
    segments = path_segments(url)
    if limits.max_depth and len(segments) > limits.max_depth:
        return PATH_DEPTH
    if limits.max_repeats and segments and max(map(segments.count, segments)) > limits.max_repeats:
        return REPEATED_SEGMENTS
    return None


@given(
    st.text(alphabet="ab/?#:.", max_size=30),
    st.sampled_from(["http://h.example", "data:", "", "x://"]),
    st.integers(0, 4),
    st.integers(0, 3),
)
def test_the_slash_count_shortcut_changes_no_verdict(
    tail: str, head: str, depth: int, repeats: int
) -> None:
    limits = TrapLimits(max_depth=depth, max_repeats=repeats)
    url = head + tail
    assert limits.trap(url) == _trap_by_splitting(limits, url)
