"""The add-on: ``ADDONS = {"irlscrapy.Addon": 0}`` switches irlscrapy on in any project.

Every setting it changes, and why (all at Scrapy's "addon" priority, so a project's own
settings still win):

- ``SCHEDULER``, ``DUPEFILTER_CLASS``: the IRL scheduler on its DRUM dupefilter.
- ``TWISTED_DNS_RESOLVER``: the IRL resolver, answering from the scheduler's DNS cache,
  so the downloader connects to the address the workbench grouped a host under.
- ``DOWNLOADER_MIDDLEWARES``: Scrapy's RobotsTxtMiddleware off (it would fetch robots.txt
  behind the scheduler's back, outside politeness; the scheduler fetches it first and
  obeys it when ``ROBOTSTXT_OBEY`` is true); FetchEndMiddleware on, outermost, to release
  a host whose request ends before reaching the downloader; HostHealthMiddleware on,
  inside RetryMiddleware, to back off hosts that answer 429/503 or fail (one retry
  policy: host health decides when a host or origin is tried again, RetryMiddleware, as
  the project configures it, whether a URL is; its retry waits at the front of the host
  for the back-off; robots.txt fetches carry ``dont_retry``, the robots cache retries
  them);
  DuplicateContentMiddleware, just inside HostHealthMiddleware, off unless
  ``IRL_CONTENTSEEN_ENABLED``, which flags a response whose body was downloaded before
  (``meta["irl_duplicate_of"]``).
- ``DOWNLOAD_HANDLERS`` for http and https: Scrapy's HTTP/1.1 handler without Twisted's
  silent re-send of a request whose reused connection failed (that re-send reaches the
  server with no delay: a politeness violation; see irlscrapy/runtime/internals.py); with
  ``IRL_WARC_DIR`` or ``IRL_CONTENTSEEN_ENABLED`` it also hands every response, as received,
  to the WARC writer and content dedup (irlscrapy/warc/handler.py, recorder.py).
  Scrapy's HttpCompressionMiddleware is replaced, at its own order, by
  irlscrapy.middlewares.decompression's subclass, which does not guess the charset of
  the compressed body (Scrapy does, and throws the guess away: 7% of a broad crawl's
  CPU); a project that sets Scrapy's middleware in DOWNLOADER_MIDDLEWARES keeps it.
- ``SPIDER_MIDDLEWARES``: StarMiddleware, which counts each page's PLD edges for STAR's
  budgets and hands ``Links`` to the scheduler; PageDoneMiddleware, outermost, which
  tells the scheduler a page's links are all in.
- ``AUTOTHROTTLE_ENABLED`` off and ``CONCURRENT_REQUESTS_PER_IP`` 0 (Scrapy's defaults,
  set so that another add-on's do not slip in): the workbench decides when a host and
  an IP may be fetched (one request at a time per host and per IP). AutoThrottle would
  add its delays in the downloader, after the workbench handed a request out, where
  the workbench cannot see them. The add-on leaves ``DOWNLOAD_DELAY`` and
  ``CONCURRENT_REQUESTS_PER_DOMAIN`` alone: they are the project's pace, which the
  scheduler reads (irlscrapy/scheduler/hosts/pace.py: the project's ``DOWNLOAD_DELAY``
  becomes the per-host delay unless ``IRL_HOST_DELAY`` is set).
- ``EXTENSIONS``: CrawlProgress, the progress line every ``IRL_PROGRESS_INTERVAL``
  seconds and a summary at close (off with ``IRL_PROGRESS_INTERVAL = 0``), so a crawl
  paced by politeness never looks hung; GCTuning, which keeps CPython's full GC
  collections from stalling the reactor (start-up objects frozen out of them, and fewer
  of them; ``IRL_GC_FREEZE``,
  ``IRL_GC_FULL_EVERY``); StatusServer, the status endpoint on loopback, which stays
  off unless ``IRL_STATUS_PORT`` is set; CrawlRecorder, which leaves the records of the
  crawl report under the state directory (a line every ``IRL_REPORT_INTERVAL`` seconds)
  and renders the report at close into ``IRL_REPORT_DIR`` if set; IdleWatch, which
  counts the seconds the crawler sits idle while fetchable work waits
  (``irl/scheduler/idle_with_work_windows``; ``IRL_IDLE_WATCH_INTERVAL``);
  CloseCutoff, which ends the downloads still in flight ``IRL_CLOSE_GRACE`` seconds
  after the spider starts closing, where Scrapy would wait up to ``DOWNLOAD_TIMEOUT``
  for each (irlscrapy/runtime/closing.py);
  Scrapy's SpiderState is replaced by irlscrapy.state.spiderstate's subclass, which writes
  ``JOBDIR/spider.state`` whole or not at all (Scrapy's is left empty by a full disk);
  a project that sets Scrapy's in EXTENSIONS keeps it.
- ``COOKIES_ENABLED`` off: a broad crawl has no sessions, and a cookie jar per domain
  grows without bound.

Before it changes anything, the add-on checks every setting (irlscrapy.startcheck): a
misspelt ``IRL_*`` name, a value of the wrong type or range, a directory that cannot be
written, and Scrapy's reactorless mode (``TWISTED_REACTOR_ENABLED = False``: the download
handler, the resolver and the WARC capture are Twisted code) stop the crawl with one
line naming the setting.
"""

from __future__ import annotations

from typing import Any

SCHEDULER = "irlscrapy.scheduler.irl.IRLScheduler"
DUPEFILTER = "irlscrapy.dupefilters.urlseen.DRUMDupeFilter"
RESOLVER = "irlscrapy.scheduler.hosts.dns.IRLResolver"
FETCH_END_MIDDLEWARE = "irlscrapy.middlewares.fetchend.FetchEndMiddleware"
FETCH_END_ORDER = 10  # irlscrapy.middlewares.fetchend (not imported: keep this light)
PAGE_DONE_MIDDLEWARE = "irlscrapy.middlewares.fetchend.PageDoneMiddleware"
PAGE_DONE_ORDER = 5
HOST_HEALTH_MIDDLEWARE = "irlscrapy.middlewares.fetchend.HostHealthMiddleware"
HOST_HEALTH_ORDER = 880  # irlscrapy.middlewares.fetchend.HOST_HEALTH_ORDER
HTTP_HANDLER = "irlscrapy.warc.handler.RecordingDownloadHandler"
DUPLICATE_MIDDLEWARE = "irlscrapy.middlewares.duplicates.DuplicateContentMiddleware"
DUPLICATE_ORDER = 870  # irlscrapy.middlewares.duplicates.ORDER
ROBOTS_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
SCRAPY_DECOMPRESSION = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"
DECOMPRESSION_MIDDLEWARE = "irlscrapy.middlewares.decompression.HttpCompressionMiddleware"
SCRAPY_SPIDER_STATE = "scrapy.extensions.spiderstate.SpiderState"
SPIDER_STATE_EXTENSION = "irlscrapy.state.spiderstate.SpiderState"
DECOMPRESSION_ORDER = 590  # irlscrapy.middlewares.decompression.ORDER
STAR_MIDDLEWARE = "irlscrapy.middlewares.star.StarMiddleware"
STAR_ORDER = 950  # irlscrapy.middlewares.star.ORDER (not imported: keep this light)
GC_TUNING_EXTENSION = "irlscrapy.runtime.gctuning.GCTuning"
STATUS_EXTENSION = "irlscrapy.report.status.StatusServer"
RECORDER_EXTENSION = "irlscrapy.report.timeline.CrawlRecorder"
RECORDER_ORDER = 1000  # built last: at spider_closed it runs (and logs) after the others
IDLE_WATCH_EXTENSION = "irlscrapy.report.idlewatch.IdleWatch"
CLOSE_CUTOFF_EXTENSION = "irlscrapy.runtime.closing.CloseCutoff"
PROGRESS_EXTENSION = "irlscrapy.report.progress.CrawlProgress"
PROGRESS_ORDER = 500


class Addon:
    def update_settings(self, settings: Any) -> None:
        from irlscrapy.startcheck import check_settings

        # every mistake in one line, before anything is built
        check_settings(settings, needs_reactor=True)
        for name, value in (
            ("SCHEDULER", SCHEDULER),
            ("DUPEFILTER_CLASS", DUPEFILTER),
            ("TWISTED_DNS_RESOLVER", RESOLVER),
            ("AUTOTHROTTLE_ENABLED", False),
            ("CONCURRENT_REQUESTS_PER_IP", 0),
            ("COOKIES_ENABLED", False),
        ):
            settings.set(name, value, priority="addon")
        handlers = settings.getdict("DOWNLOAD_HANDLERS")
        for scheme in ("http", "https"):
            handlers.setdefault(scheme, HTTP_HANDLER)
        settings.set("DOWNLOAD_HANDLERS", handlers, priority="addon")
        if SCRAPY_DECOMPRESSION not in settings.getdict("DOWNLOADER_MIDDLEWARES"):
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES", SCRAPY_DECOMPRESSION, None
            )
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES", DECOMPRESSION_MIDDLEWARE, DECOMPRESSION_ORDER
            )
        if SCRAPY_SPIDER_STATE not in settings.getdict("EXTENSIONS"):
            settings.setdefault_in_component_priority_dict("EXTENSIONS", SCRAPY_SPIDER_STATE, None)
            settings.setdefault_in_component_priority_dict("EXTENSIONS", SPIDER_STATE_EXTENSION, 0)
        # In place, keeping what the project set for the same component.
        for setting, component, order in (
            ("DOWNLOADER_MIDDLEWARES", ROBOTS_MIDDLEWARE, None),
            ("DOWNLOADER_MIDDLEWARES", FETCH_END_MIDDLEWARE, FETCH_END_ORDER),
            ("DOWNLOADER_MIDDLEWARES", HOST_HEALTH_MIDDLEWARE, HOST_HEALTH_ORDER),
            ("DOWNLOADER_MIDDLEWARES", DUPLICATE_MIDDLEWARE, DUPLICATE_ORDER),
            ("SPIDER_MIDDLEWARES", STAR_MIDDLEWARE, STAR_ORDER),
            ("SPIDER_MIDDLEWARES", PAGE_DONE_MIDDLEWARE, PAGE_DONE_ORDER),
            ("EXTENSIONS", PROGRESS_EXTENSION, PROGRESS_ORDER),
            ("EXTENSIONS", GC_TUNING_EXTENSION, 0),
            ("EXTENSIONS", STATUS_EXTENSION, 0),
            ("EXTENSIONS", RECORDER_EXTENSION, RECORDER_ORDER),
            ("EXTENSIONS", IDLE_WATCH_EXTENSION, 0),
            ("EXTENSIONS", CLOSE_CUTOFF_EXTENSION, 0),
        ):
            settings.setdefault_in_component_priority_dict(setting, component, order)
