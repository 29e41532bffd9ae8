"""What the IRL scheduler shares with the crawl's other components by name: the keys
it sets in and reads from ``Request.meta``, and the signal it sends. Those components
(the WARC recorder, STAR, the fetch-end middlewares, the crawl report) import them from
here, not from :mod:`irlscrapy.scheduler.irl`."""

#: meta key of the fetch a request belongs to (removed before a request is stored)
FETCH_KEY = "irl_fetch"
#: meta key of the address the workbench holds the request's host under, where the IRL
#: resolver connects (the WARC recorder's WARC-IP-Address; removed with FETCH_KEY)
ADDRESS_KEY = "irl_address"
#: meta key of a robots.txt fetch: the host whose rules it fetches
ROBOTS_KEY = "irl_robots"
#: meta key of a request refused by robots.txt or DNS (see FetchEndMiddleware)
REFUSED_KEY = "irl_refused"

#: Signal sent with ``state_dir``, ``temporary`` and the spider's close ``reason`` once the
#: scheduler has closed its state directory (lock released), before it removes a
#: temporary one: the last moment to read it (the crawl report,
#: irlscrapy.report.timeline, renders from it then).
state_closed = object()
