"""The crawl's storage engine: data structures on disk that know nothing of Scrapy or
Twisted (the layering test holds them to it).

- :mod:`.drum` with :mod:`.drumcache`, :mod:`.drumfiles`, :mod:`.drummerge`,
  :mod:`.drumjournal`, :mod:`.drumupgrade`, :mod:`.drumsizing`: DRUM, IRLbot's batched
  check+update of 64-bit keys on disk (URLseen, STAR's in-degrees, content dedup);
- :mod:`.recordfile`: append-only files of checksummed records (journals, BEAST);
- :mod:`.cachedb`: LevelDB databases with a format version (DNS, robots.txt, DRUM's
  disk cache);
- :mod:`.dirlock`: one process per state directory;
- :mod:`.jsonfile`: small JSON state files, replaced whole;
- :mod:`.recovery`: what an open mends after a kill -9, counted and told;
- :mod:`.tablepages`, :mod:`.glibcheap`: memory given back to the OS (LevelDB's mapped
  pages, glibc's free heap);
- :mod:`.faulthooks`: test-only pauses at the crash points, for fault tests.
"""
