"""The robots.txt outcome table (RFC 9309 2.3.1), and the robots cache that stores it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlscrapy.exceptions import ConfigurationError, DirectoryLocked
from irlscrapy.scheduler.hosts import robotscache
from irlscrapy.scheduler.hosts.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    MAX_WILDCARD_RULES,
    PARSE_LIMIT,
    PARSED,
    UNAVAILABLE,
    UNREACHABLE,
    RobotsRules,
    outcome_of,
    parse,
)
from irlscrapy.scheduler.hosts.robotscache import BIG_BODY, RobotsCache

UA = "irlscrapy-test"
BODY = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 7\n"
TTL, RETRY = 1000.0, 10.0


def cache(**kwargs: object) -> RobotsCache:
    options: dict[str, object] = {
        "ttl": TTL,
        "retry_delay": RETRY,
        "retries": 3,
        "ram_hosts": 100,
        "ram_bodies": 10,
    }
    options.update(kwargs)
    return RobotsCache(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, PARSED),
        (204, PARSED),
        (401, UNAVAILABLE),
        (404, UNAVAILABLE),
        (410, UNAVAILABLE),
        (500, UNREACHABLE),
        (503, UNREACHABLE),
        (None, UNREACHABLE),
    ],
)
def test_outcomes_by_status(status: int | None, outcome: str) -> None:
    assert outcome_of(status) == outcome


def test_parsed_rules_answer_urls_and_crawl_delay() -> None:
    rules = parse(BODY)
    assert rules.allowed("http://a.example/public", UA)
    assert not rules.allowed(b"http://a.example/private/x", UA.encode())
    assert rules.crawl_delay(UA) == 7.0
    assert ALLOW_ALL.allowed("http://a.example/private/x", UA)
    assert not DISALLOW_ALL.allowed("http://a.example/", UA)
    assert ALLOW_ALL.crawl_delay(UA) == 0.0


def test_only_the_first_500_kib_are_parsed() -> None:
    filler = b"# " + b"x" * (PARSE_LIMIT - 3) + b"\n"
    assert parse(filler + b"User-agent: *\nDisallow: /\n").allowed("http://a.example/x", UA)


def test_rules_are_a_scrapy_robot_parser() -> None:
    from scrapy.robotstxt import RobotParser

    rules = RobotsRules.from_crawler(None, BODY)
    assert isinstance(rules, RobotParser)
    assert not rules.allowed("http://a.example/private/", UA)


class TestRobotsCache:
    def test_a_host_never_met_is_unknown(self, tmp_path: Path) -> None:
        c = cache()
        c.open(tmp_path)
        assert c.lookup("a.example") == (None, 0.0)
        c.close()

    def test_answers_hold_for_the_ttl(self, tmp_path: Path) -> None:
        c = cache()
        c.open(tmp_path)
        rules, refetch_at = c.learn("a.example", 200, BODY, now=100.0)
        assert rules is not None and rules.outcome == PARSED
        assert refetch_at == 100.0 + TTL
        assert c.learn("b.example", 404, b"nope", now=100.0) == (ALLOW_ALL, 100.0 + TTL)
        assert c.lookup("a.example") == (rules, 100.0 + TTL)
        c.close()

    def test_unreachable_is_retried_with_growing_delays_then_disallows_all(
        self, tmp_path: Path
    ) -> None:
        c = cache(retries=3)
        c.open(tmp_path)
        assert c.learn("a.example", 503, b"", now=0.0) == (None, RETRY)
        assert c.lookup("a.example") == (None, RETRY)  # its URLs wait
        assert c.learn("a.example", None, b"", now=RETRY) == (None, RETRY + 2 * RETRY)
        assert c.learn("a.example", 500, b"", now=50.0) == (DISALLOW_ALL, 50.0 + TTL)
        assert c.learn("a.example", 500, b"", now=2000.0) == (DISALLOW_ALL, 2000.0 + TTL)
        rules, _ = c.learn("a.example", 200, BODY, now=4000.0)  # an answer resets the count
        assert rules is not None and rules.outcome == PARSED
        assert c.learn("a.example", 500, b"", now=5000.0) == (None, 5000.0 + RETRY)
        c.close()

    def test_identical_bodies_share_one_parse(self, tmp_path: Path) -> None:
        c = cache()
        c.open(tmp_path)
        a, _ = c.learn("a.example", 200, BODY, now=0.0)
        b, _ = c.learn("b.example", 200, bytes(BODY), now=0.0)
        other, _ = c.learn("c.example", 200, BODY.replace(b"private", b"secret"), now=0.0)
        assert a is b and other is not a
        c.close()

    def test_records_survive_a_restart_and_ram_is_bounded(self, tmp_path: Path) -> None:
        c = cache(ram_hosts=50, ram_bodies=5)
        c.open(tmp_path)
        for n in range(500):
            c.learn(f"h{n}.example", 200, b"User-agent: *\nDisallow: /p%d/\n" % n, now=n)
        assert len(c) <= 50 and len(c._rules) <= 5
        c.close()
        again = cache(ram_hosts=50, ram_bodies=5)
        again.open(tmp_path)
        for n in (0, 17, 499):
            rules, refetch_at = again.lookup(f"h{n}.example")
            assert rules is not None and refetch_at == n + TTL
            assert not rules.allowed(f"http://h{n}.example/p{n}/x", UA)
            assert rules.allowed(f"http://h{n}.example/p{n + 1}/x", UA)
        again.close()

    def test_ram_holds_bodies_up_to_its_bytes_and_a_big_one_is_never_parsed_again(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Parsed rules are bounded by their bodies' bytes as well as their count (a
        parse takes about 8 times its body), and a body over BIG_BODY that RAM let go
        of is not parsed again on lookup (50 to 250 ms on the reactor's thread): its
        robots.txt is fetched again instead. A smaller one is parsed from disk."""
        big = b"User-agent: *\n" + b"".join(b"Disallow: /s/%d/\n" % n for n in range(4000))
        assert len(big) > BIG_BODY
        small = b"User-agent: *\nDisallow: /p/\n"
        c = cache(ram_bodies=100, ram_bytes=len(big) + 100)
        c.open(tmp_path)
        rules, _ = c.learn("big.example", 200, big, now=0.0, parsed=parse(big))
        assert rules is not None and not rules.allowed("http://big.example/s/17/x", UA)
        for n in range(3):  # bodies that push the big one out of RAM's bytes
            c.learn(f"s{n}.example", 200, small + b"# %d" % n + b"x" * 60, now=0.0)
        assert c._rule_bytes <= len(big) + 100
        parses: list[bytes] = []
        monkeypatch.setattr(robotscache, "parse", lambda body: parses.append(body) or parse(body))
        assert c.lookup("big.example") == (None, 0.0)
        assert parses == []
        assert c.lookup("s0.example")[0] is not None  # in RAM, or parsed from disk
        c.close()

    def test_a_body_over_the_bytes_is_held_alone(self) -> None:
        c = cache(ram_bytes=10)
        rules, _ = c.learn("a.example", 200, BODY, now=0.0)
        assert rules is not None and len(c._rules) == 1
        c.learn("b.example", 200, BODY + b"#", now=0.0)
        assert len(c._rules) == 1

    def test_a_big_body_forgotten_stays_unknown_when_another_host_brings_it_back(
        self, tmp_path: Path
    ) -> None:
        """After a restart, a host whose big robots.txt is on disk only is unknown (to be
        fetched again); another host with the same body then puts the rules back in RAM,
        and the first host must stay unknown until its own answer: the frontier admitted
        its URLs unfiltered meanwhile, and drops the disallowed ones only when it learns
        that host's rules (the fault campaign fetched a disallowed page so)."""
        big = b"User-agent: *\nDisallow: /private/\n" + b"# pad\n" * (BIG_BODY // 6 + 1)
        before = cache()
        before.open(tmp_path)
        before.learn("a.example", 200, big, now=0.0, parsed=parse(big))
        before.close()  # (or a kill -9: the record is in LevelDB either way)
        after = cache()
        after.open(tmp_path)
        assert after.lookup("a.example") == (None, 0.0)
        rules, _ = after.learn("b.example", 200, big, now=1.0, parsed=parse(big))
        assert rules is not None and not rules.allowed("http://b.example/private/x", UA)
        assert after.lookup("a.example") == (None, 0.0)
        after.close()
        again = cache()
        again.open(tmp_path)
        assert again.lookup("a.example") == (None, 0.0)  # forgotten on disk too
        again.close()

    def test_without_a_directory_what_ram_forgets_is_unknown(self) -> None:
        c = cache(ram_hosts=2)
        for host in ("a", "b", "c"):
            c.learn(host, 404, b"", now=0.0)
        assert c.lookup("a") == (None, 0.0)
        assert c.lookup("c") == (ALLOW_ALL, TTL)

    def test_a_second_process_is_refused(self, tmp_path: Path) -> None:
        first = cache()
        first.open(tmp_path)
        with pytest.raises(DirectoryLocked):
            cache().open(tmp_path)
        first.close()

    def test_bad_configuration_is_explained(self) -> None:
        with pytest.raises(ConfigurationError, match="IRL_ROBOTS_TTL"):
            cache(ttl=0)
        with pytest.raises(ConfigurationError, match="IRL_ROBOTS_RETRIES"):
            cache(retries=0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from([200, 404, 500, None]),
            st.sampled_from([b"Disallow: /x\n", b"Disallow: /y\n"]),
        ),
        max_size=30,
    )
)
def test_lookup_answers_the_last_learned_even_from_a_tiny_ram(
    answers: list[tuple[str, int | None, bytes]],
) -> None:
    """Model: the outcome and refetch time of each host's last answer, with the count of
    unreachable answers in a row; a one-host RAM must answer the same as the model."""
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        c = cache(ram_hosts=1, ram_bodies=1)
        c.open(Path(directory))
        model: dict[str, tuple[str | None, float]] = {}
        failures: dict[str, int] = {}
        for now, (host, status, body) in enumerate(answers):
            rules, refetch_at = c.learn(host, status, b"User-agent: *\n" + body, float(now))
            outcome = outcome_of(status)
            failures[host] = failures.get(host, 0) + 1 if outcome == UNREACHABLE else 0
            waiting = outcome == UNREACHABLE and failures[host] < 3
            expected_at = now + (RETRY * 2 ** (failures[host] - 1) if waiting else TTL)
            model[host] = (None if waiting else outcome, expected_at)
            assert (rules.outcome if rules else None, refetch_at) == model[host]
        for host, expected in model.items():
            rules, refetch_at = c.lookup(host)
            assert (rules.outcome if rules else None, refetch_at) == expected
        c.close()


def test_a_robots_txt_of_too_many_wildcard_rules_disallows_all() -> None:
    """Each wildcard rule is a regular expression Protego tries in turn: past
    MAX_WILDCARD_RULES of them a URL check costs over a millisecond, so the robots.txt
    is read as disallowing all (the polite side); prefix rules are not capped."""
    wildcards = [b"Disallow: /*a*b%d\n" % n for n in range(MAX_WILDCARD_RULES)]
    at_cap = parse(b"User-agent: *\n" + b"".join(wildcards))
    assert not at_cap.costly
    assert not at_cap.allowed("http://h.example/xa/yb7", UA)
    assert at_cap.allowed("http://h.example/plain", UA)
    over = parse(b"User-agent: *\n" + b"".join(wildcards) + b"Allow: /ok$\n")
    assert over.costly and over.outcome == PARSED
    assert not over.allowed("http://h.example/ok", UA)
    prefixes = parse(b"User-agent: *\n" + b"".join(b"Disallow: /p%d/\n" % n for n in range(30_000)))
    assert not prefixes.costly and prefixes.allowed("http://h.example/q/", UA)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a.example", "b.example", "c.example"]),
            st.sampled_from([None, 200, 404, 503]),
        ),
        max_size=40,
    )
)
def test_a_host_remembered_absent_is_found_once_learned(
    steps: list[tuple[str, int | None]],
) -> None:
    """Lookups of hosts not learned yet (status None here: a lookup, not an answer)
    between answers: each lookup answers what the last answer stored, or unknown,
    with an absent memo of one host (ram_hosts=1: emptied as often as it can be)."""
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        c = cache(ram_hosts=1, ram_bodies=1)
        c.open(Path(directory))
        learned: dict[str, str | None] = {}  # what each answer's learn() returned
        for now, (host, status) in enumerate(steps):
            if status is None:
                rules, _ = c.lookup(host)
                assert (rules.outcome if rules else None) == learned.get(host), host
            else:
                rules, _ = c.learn(host, status, BODY, float(now))
                learned[host] = rules.outcome if rules else None
        c.close()


def test_a_host_never_learned_asks_leveldb_once(tmp_path: Path) -> None:
    c = cache()
    c.open(tmp_path)
    gets: list[bytes] = []
    store = c._hosts

    class Counting:
        def get(self, key: bytes) -> bytes | None:
            gets.append(key)
            return store.get(key)

        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

    c._hosts = Counting()
    for _ in range(5):
        assert c.lookup("new.example") == (None, 0.0)
    assert gets == [b"new.example"]
    c.learn("new.example", 404, b"", now=1.0)
    assert c.lookup("new.example") == (ALLOW_ALL, 1.0 + TTL)
    c.close()
