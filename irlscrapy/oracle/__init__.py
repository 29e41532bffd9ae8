"""The oracle of the in-vitro web: what a correct crawl of it requests and how.

- :mod:`~irlscrapy.oracle.groundtruth`: the URLs a crawler with a given policy requests
  (robots.txt, DNS, link filters, traps), computed without a network.
- :mod:`~irlscrapy.oracle.audit`: a crawl held to its contracts (politeness,
  robots.txt) from the in-vitro server's request log.

It applies the crawler's own rules to the web, so it lives outside
:mod:`irlscrapy.invitro`, which knows nothing of the crawler.
"""
