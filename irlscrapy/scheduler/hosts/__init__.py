"""What the crawler knows of each host, and the rules it keeps with it:

- :mod:`.dns`: the DNS cache and resolver (the scheduler's, the downloader's as
  ``TWISTED_DNS_RESOLVER``, and the WARC writer's), over :mod:`.dnsclient`;
- :mod:`.robots` and :mod:`.robotscache`: robots.txt rules and their cache;
- :mod:`.hosthealth`: back-off and retirement of failing hosts and origins;
- :mod:`.addressguard`: the addresses a crawl may not connect to;
- :mod:`.delays`: the one politeness delay function (per host and per IP).
"""
