"""The frontier's structures, as the papers define them: plain data structures over
files, importing no Scrapy or Twisted (tests/unit/test_layering.py asserts it).

- :mod:`.beast`: BEAST, the budget-enforced disk queues (IRLbot VII);
- :mod:`.workbench`: BUbiNG's workbench of visit states, by host and by IP;
- :mod:`.admitted`: the journal of URLs that left BEAST for RAM (crash-safe resume);
- :mod:`.parking`: URLs held out of their host (origins in back-off) or parked on disk;
- :mod:`.distinct`: the distinct-count sketch of an IP's hosts;
- :mod:`.traps`: the URL shapes of crawler traps;
- :mod:`.horizon`: how much of BEAST the workbench takes (what is fetched soon);
- :mod:`.loadgovernor`: the cap on fetches in flight from the reactor's lag.

:mod:`irlscrapy.scheduler.stages` joins them with the host services into the path a
URL takes: BEAST -> DNS -> robots.txt -> workbench.
"""
