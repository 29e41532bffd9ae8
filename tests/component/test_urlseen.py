"""DRUMDupeFilter as Scrapy's DUPEFILTER_CLASS, through get_crawler and the stock scheduler."""

from __future__ import annotations

import gc
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.core.scheduler import Scheduler
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler
from twisted.internet import defer

from irlscrapy.dupefilters.identity import RequestIdentity
from irlscrapy.dupefilters.urlkey import url_keys
from irlscrapy.dupefilters.urlseen import EARLY_MERGE_MIN, EARLY_MERGE_SHARE, DRUMDupeFilter
from irlscrapy.exceptions import ConfigurationError

DUPEFILTER = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"


def synchronous(f: Any, *args: Any) -> defer.Deferred[Any]:
    return defer.maybeDeferred(f, *args)


def make_filter(path: Path | None, memory: int = 64 << 20, batched: bool = False) -> DRUMDupeFilter:
    df = DRUMDupeFilter(
        path, RequestIdentity(RequestFingerprinter()), memory=memory, in_thread=synchronous
    )
    df.batched = batched
    df.open()
    return df


class TestRequestSeen:
    def test_first_sight_is_unseen_and_equivalent_requests_are_seen(self, tmp_path: Path) -> None:
        df = make_filter(tmp_path)
        try:
            assert not df.request_seen(Request("http://h.com/a?b=1&a=2"))
            assert df.request_seen(Request("http://H.com/a?a=2&b=1#frag"))
            assert not df.request_seen(Request("http://h.com/a", method="POST", body=b"x"))
            assert df.request_seen(Request("http://h.com/a", method="POST", body=b"x"))
            assert not df.request_seen(Request("http://h.com/a", method="POST", body=b"y"))
            assert not df.request_seen(Request("http://h.com/a"))
        finally:
            df.close("finished")

    def test_keys_survive_merges_and_stay_seen(self, tmp_path: Path) -> None:
        df = make_filter(tmp_path, memory=128 * 50)  # a merge every 50 new keys
        try:
            urls = [f"http://h{i % 7}.com/p{i}" for i in range(400)]
            assert not any(df.request_seen(Request(u)) for u in urls)
            assert df.stats is None and df.drum is not None and df.drum.stored_keys >= 350
            assert all(df.request_seen(Request(u)) for u in urls)
        finally:
            df.close("finished")

    def test_jobdir_resume_remembers_everything(self, tmp_path: Path) -> None:
        df = make_filter(tmp_path, memory=128 * 30)
        urls = [f"http://h.com/{i}" for i in range(100)]
        for u in urls:
            df.request_seen(Request(u))
        df.close("shutdown")
        again = make_filter(tmp_path, memory=128 * 30)
        try:
            assert all(again.request_seen(Request(u)) for u in urls)
            assert not again.request_seen(Request("http://h.com/new"))
        finally:
            again.close("finished")

    def test_without_a_state_dir_a_temporary_directory_is_removed_at_close(self) -> None:
        df = make_filter(None)
        path = df.path
        assert path is not None and path.exists()
        df.close("finished")
        assert not path.exists()

    def test_one_collected_unclosed_lets_go_of_its_files_quietly(self) -> None:
        """A URLseen dropped without close (its crawl failed to start, a test failed)
        leaves no file open to warn about at the next collection, and no temporary
        directory behind (Scrapy's test_dupefilters fails the next test otherwise)."""
        df = make_filter(None)
        assert not df.request_seen(Request("http://h.com/a"))
        path = df.path
        assert path is not None and path.exists()
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            del df
            gc.collect()
        assert not path.exists()


class TestWithStockScheduler:
    def test_scheduler_filters_duplicates_and_counts_them(self, tmp_path: Path) -> None:
        crawler = get_crawler(
            Spider,
            {
                "DUPEFILTER_CLASS": DUPEFILTER,
                "JOBDIR": str(tmp_path),
                # the default DownloaderAwarePriorityQueue needs a running engine
                "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
            },
        )
        crawler.spider = Spider("s")
        crawler.spider.crawler = crawler
        scheduler = Scheduler.from_crawler(crawler)
        scheduler.open(crawler.spider)
        try:
            assert isinstance(scheduler.df, DRUMDupeFilter)
            assert scheduler.enqueue_request(Request("http://h.com/a"))
            assert not scheduler.enqueue_request(Request("http://h.com/a#x"))
            assert scheduler.enqueue_request(Request("http://h.com/a#x", dont_filter=True))
            assert crawler.stats.get_value("dupefilter/filtered") == 1
        finally:
            scheduler.close("finished")
        assert (tmp_path / "urlseen" / "cache").is_dir()

    def test_duplicates_are_logged_where_scrapy_logs_them(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """DUPEFILTER_DEBUG logs each duplicate under ``scrapy.dupefilters``, as
        RFPDupeFilter does (Scrapy's test_dupefilters::test_log_debug)."""
        crawler = get_crawler(
            Spider,
            {"DUPEFILTER_CLASS": DUPEFILTER, "DUPEFILTER_DEBUG": True, "JOBDIR": str(tmp_path)},
        )
        spider = Spider.from_crawler(crawler, "s")
        df = DRUMDupeFilter.from_crawler(crawler)
        df.open()
        request = Request("http://h.com/a", headers={"Referer": "http://h.com/"})
        try:
            with caplog.at_level(logging.DEBUG, logger="scrapy.dupefilters"):
                df.log(request, spider)
        finally:
            df.close("finished")
        assert caplog.record_tuples == [
            (
                "scrapy.dupefilters",
                logging.DEBUG,
                "Filtered duplicate request: <GET http://h.com/a> (referer: http://h.com/)",
            )
        ]
        assert crawler.stats.get_value("dupefilter/filtered") == 1

    def test_irl_state_dir_takes_precedence_over_jobdir(self, tmp_path: Path) -> None:
        crawler = get_crawler(
            Spider, {"JOBDIR": str(tmp_path / "job"), "IRL_STATE_DIR": str(tmp_path / "state")}
        )
        df = DRUMDupeFilter.from_crawler(crawler)
        assert df.path == tmp_path / "state" / "urlseen"


class TestBatchedApi:
    def test_urls_are_checked_in_batches_with_their_text(self, tmp_path: Path) -> None:
        df = make_filter(tmp_path, batched=True)
        try:
            first = df.submit_urls(["http://h.com/a", "http://h.com/b", "http://h.com/a#x"])
            second = df.submit_urls(["http://h.com/b", "http://h.com/c"])
            merged: list[int] = []
            df.flush().addCallback(merged.append)
            assert merged == [5]
            batches = list(df.results())
            assert [b.seq for b in batches] == [first, second]
            assert batches[0].unique.tolist() == [True, True, False]
            assert batches[0].aux == [b"http://h.com/a", b"http://h.com/b", b"http://h.com/a#x"]
            assert batches[1].unique.tolist() == [False, True]
            df.ack(second)
        finally:
            df.close("finished")

    def test_keys_handed_over_are_seen_and_come_back_with_an_empty_aux(
        self, tmp_path: Path
    ) -> None:
        """An heir stores the keys an agent that left had seen (irlscrapy.distributed
        .handover); a URL among them is a duplicate from then on."""
        df = make_filter(tmp_path, batched=True)
        try:
            keys = url_keys(["http://h.com/seen", "http://h.com/also"])
            handed = df.submit_keys(keys)
            after = df.submit_urls(["http://h.com/seen", "http://h.com/new"])
            df.flush()
            batches = list(df.results())
            assert [b.seq for b in batches] == [handed, after]
            assert batches[0].aux == [b"", b""], "nothing to store: the intake skips it"
            assert batches[1].unique.tolist() == [False, True]
        finally:
            df.close("finished")

    def test_a_batch_a_quarter_of_the_store_merges_before_the_buckets_fill(
        self, tmp_path: Path
    ) -> None:
        """EARLY_MERGE_MIN URLs merge into an empty store; then a quarter of the store
        (here 40,000 keys: 10,000 more, then 12,500 with 50,000 stored). The buckets of
        64 MB hold about 800,000, so only the early rule can say so."""
        df = make_filter(tmp_path, batched=True)
        try:
            assert EARLY_MERGE_MIN == 10_000 and EARLY_MERGE_SHARE == 0.25
            urls = [f"http://h{n % 97}.com/{n}" for n in range(62_500)]
            df.submit_urls(urls[:9_999])
            assert not df.should_merge()
            df.submit_urls(urls[9_999:40_000])
            assert df.should_merge()
            df.flush()
            df.ack(max(b.seq for b in df.results()))
            df.submit_urls(urls[40_000:49_999])
            assert not df.should_merge()
            df.submit_urls(urls[49_999:50_000])
            assert df.should_merge()
            df.flush()
            df.ack(max(b.seq for b in df.results()))
            df.submit_urls(urls[50_000:62_499])
            assert not df.should_merge()
            df.submit_urls(urls[62_499:])
            assert df.should_merge()
        finally:
            df.close("finished")

    def test_behind_once_a_whole_batch_waits_for_a_running_merge(self, tmp_path: Path) -> None:
        held: list[defer.Deferred[Any]] = []

        def in_thread(f: Any, *args: Any) -> defer.Deferred[Any]:
            d: defer.Deferred[Any] = defer.Deferred()  # the merge runs when the test says
            held.append(d)
            d.addCallback(lambda _: f(*args))
            return d

        df = DRUMDupeFilter(
            tmp_path, RequestIdentity(RequestFingerprinter()), memory=1, in_thread=in_thread
        )
        df.batched = True
        df.open()
        try:
            assert df.drum is not None
            batch = df.drum.batch_tuples
            urls = [f"http://h.com/{i}" for i in range(3 * batch)]
            df.submit_urls(urls[:batch])
            assert not df.behind()  # a full batch, but no merge running: time to merge
            df.flush()
            df.submit_urls(urls[batch : 2 * batch - 1])
            assert not df.behind()  # the merge runs; one tuple short of a batch more
            df.submit_urls(urls[2 * batch - 1 : 2 * batch])
            assert df.behind()
            held[0].callback(None)  # the merge ends
            assert not df.behind()
        finally:
            for d in held:
                if not d.called:
                    d.callback(None)
            df.close("finished")

    def test_unacknowledged_results_come_back_after_a_restart(self, tmp_path: Path) -> None:
        df = make_filter(tmp_path, batched=True)
        seq = df.submit_urls(["http://h.com/a"])
        df.flush()
        assert [b.seq for b in df.results()] == [seq]
        df.close("shutdown")  # killed before the consumer stored them: no ack
        again = make_filter(tmp_path, batched=True)
        try:
            assert [(b.seq, b.unique.tolist()) for b in again.results()] == [(seq, [True])]
        finally:
            again.close("finished")

    def test_custom_fingerprinter_refuses_the_url_fast_path(self, tmp_path: Path) -> None:
        class Custom(RequestFingerprinter):
            pass

        df = DRUMDupeFilter(tmp_path, RequestIdentity(Custom()), in_thread=synchronous)
        df.open()
        try:
            with pytest.raises(ConfigurationError, match="must become Requests"):
                df.submit_urls(["http://h.com/a"])
            assert not df.request_seen(Request("http://h.com/a"))  # the Request path works
            assert df.request_seen(Request("http://h.com/a"))
        finally:
            df.close("finished")
