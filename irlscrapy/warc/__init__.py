"""What a crawl leaves behind: WARC files, and content dedup of downloaded bodies.

- :mod:`~irlscrapy.warc.exchange`: the bytes of one HTTP exchange as a WARC records them.
- :mod:`~irlscrapy.warc.files`: WARC files on disk (naming, rotation, warcinfo, CDXJ,
  recovery after a crash).
- :mod:`~irlscrapy.warc.handler`: the add-on's download handler, which feeds the recorder.
- :mod:`~irlscrapy.warc.recorder`: the Scrapy-facing part, fed by the download handler
  (:class:`irlscrapy.warc.handler.RecordingDownloadHandler`); it batches exchanges to a
  worker thread that checks bodies against :mod:`irlscrapy.dupefilters.contentseen`
  and writes the records.

The duplicate flag on a response's meta is set by
:class:`irlscrapy.middlewares.duplicates.DuplicateContentMiddleware`.
"""
