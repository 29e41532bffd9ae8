"""Start requests, taken in once per state directory (irlscrapy.scheduler.startrequests):
the keys a run gives its start requests are the keys a rerun gives them."""

from __future__ import annotations

from scrapy import Request

from irlscrapy.scheduler.startrequests import StartRequests, start_key


def test_a_rerun_gives_its_start_requests_the_keys_of_the_run_before() -> None:
    first, rerun = StartRequests(enabled=True), StartRequests(enabled=True)
    keys = [first.key(k) for k in (7, 7, 9)]
    assert len(set(keys)) == 3  # (7 yielded twice: two keys, as Scrapy fetches it twice)
    assert [rerun.key(k) for k in (7, 9, 7)] == [keys[0], keys[2], keys[1]]
    assert 7 not in keys and 9 not in keys  # a link to the URL is checked under its own


def test_the_keys_of_occurrences_differ_and_stay_64_bit() -> None:
    keys = {start_key(2**64 - 1, n) for n in range(10_000)}
    assert len(keys) == 10_000 and max(keys) < 2**64


def test_only_start_requests_with_a_jobdir_are_taken_once() -> None:
    start = Request("http://example.com/", dont_filter=True, meta={"is_start_request": True})
    other = Request("http://example.com/", dont_filter=True)
    assert StartRequests(enabled=True).taken_once(start)
    assert not StartRequests(enabled=True).taken_once(other)
    assert not StartRequests(enabled=False).taken_once(start)
