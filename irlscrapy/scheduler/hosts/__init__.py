"""What the crawler knows of each host, and the rules it keeps with it:

- :mod:`.dns`: the DNS cache (the scheduler's, the WARC writer's, and the
  downloader's through its IRLResolver, ``TWISTED_DNS_RESOLVER``);
- :mod:`.resolver` and :mod:`.dnsclient`: asking DNS servers (or getaddrinfo) for it;
- :mod:`.robots` and :mod:`.robotscache`: robots.txt rules and their cache;
- :mod:`.hosthealth`: back-off and retirement of failing hosts and origins;
- :mod:`.addressguard`: the addresses a crawl may not connect to;
- :mod:`.delays`: the one politeness delay function (per host and per IP);
- :mod:`.services`: all of them, built and opened together for one crawl.
"""
