"""The crawl process at run time, on Scrapy and Twisted: what the components share.

- :mod:`.crawlservices`: one object per crawler for components Scrapy builds apart;
- :mod:`.internals`: the one module that touches private parts of Scrapy;
- :mod:`.workers`, :mod:`.mergethread`: threads below the reactor's priority;
- :mod:`.gctuning`, :mod:`.lagprobe`: the reactor kept responsive, and measured;
- :mod:`.closing`, :mod:`.openfailure`: a crawl that must stop, or cannot start,
  says why in one line;
- :mod:`.troubles`: refusals and give-ups counted, the first of each kind logged;
- :mod:`.mediatype`: a response's media type.
"""
