"""The robots.txt outcome table, and parsed rules shared between identical bodies."""

from __future__ import annotations

from irlscrapy.scheduler import robots
from irlscrapy.scheduler.robots import ALLOW_ALL, DISALLOW_ALL, PARSE_LIMIT, rules_for

UA = "irlscrapy-test"
BODY = b"User-agent: *\nDisallow: /private/\n"


def test_outcomes_by_status() -> None:
    assert rules_for(404, b"Disallow: /") is ALLOW_ALL
    assert rules_for(503, BODY) is DISALLOW_ALL
    assert not DISALLOW_ALL.allowed("http://a.example/", UA)
    parsed = rules_for(200, BODY)
    assert parsed.outcome == "parsed"
    assert parsed.allowed("http://a.example/public", UA)
    assert not parsed.allowed("http://a.example/private/x", UA)


def test_identical_bodies_share_one_parse_and_different_ones_do_not() -> None:
    assert rules_for(200, BODY) is rules_for(200, bytes(BODY))
    other = rules_for(200, BODY.replace(b"private", b"secret"))
    assert other is not rules_for(200, BODY)
    assert other.allowed("http://a.example/private/x", UA)


def test_the_shared_parses_are_bounded() -> None:
    for n in range(robots.SHARED_BODIES + 10):
        rules_for(200, b"User-agent: *\nDisallow: /p%d/\n" % n)
    assert len(robots._PARSED) <= robots.SHARED_BODIES


def test_only_the_first_500_kib_are_parsed() -> None:
    filler = b"# " + b"x" * (PARSE_LIMIT - 3) + b"\n"
    late = rules_for(200, filler + b"User-agent: *\nDisallow: /\n")
    assert late.allowed("http://a.example/anything", UA)
    assert late is rules_for(200, filler + b"User-agent: *\nDisallow: /other\n")
