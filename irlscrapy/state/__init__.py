"""The state directory: where a crawl keeps its state, and its check and repair.

- :mod:`.directory`: ``StateDirectory``, resolved, locked and cleaned up in one place,
  with the map of its files;
- :mod:`.check`: ``irlscrapy check`` and ``irlscrapy repair``;
- :mod:`.spiderstate`: ``spider.state`` that a full disk or a crash cannot half-write.
"""
