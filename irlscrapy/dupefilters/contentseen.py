"""ContentSeen: which downloaded bodies were downloaded before (exact duplicates).

A DRUM (:mod:`irlscrapy.dupefilters.drum`) keyed by the first 64 bits of each body's
SHA-1, valued by the time of the body's first capture, combined ``first`` (the first
capture's time is kept). :meth:`ContentSeen.check` takes a batch of digests with their
capture times, applies it (check+update) and answers for each: new, or the time of the
capture it repeats. One batch is one DRUM generation: the batches are what arrived
while the previous one was being checked, tens of keys, so the DRUM has one bucket and
small cache chunks (a batch rewrites at most one chunk of up to 64 KB per key).

Plain and synchronous; :class:`irlscrapy.warc.recorder.ExchangeRecorder` runs it in its
worker thread.

Files: ``<state dir>/contentseen/`` is the DRUM's directory (its files are listed in
:mod:`irlscrapy.dupefilters.drum`).

Collisions: two different bodies with the same 64-bit prefix are taken for one; the
chance that a crawl of n bodies meets any such pair is about n^2 / 2^65 (1 in 37 at a
billion bodies). The WARC revisit record carries the body's full SHA-1, so a reader can
tell.

Crash semantics: a batch is applied when :meth:`check` returns; the worker writes its
records after. A kill -9 between the two leaves digests that are marked seen but whose
records were never written; their re-fetch after resume (requests in flight at a crash
are fetched again) is recorded as a revisit of a capture the WARC files do not hold.
That is at most the batches in the worker at the kill. :meth:`open` acknowledges what a
killed run left unread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irlscrapy.dupefilters.drum import CHECK_UPDATE, DRUM

#: DRUM geometry for batches of tens of keys.
BUCKET_BYTES = 1 << 20
CHUNK_KEYS = 2048


@dataclass(frozen=True)
class Verdict:
    """``first``: the first capture's time (epoch seconds); equal to the capture's own
    time when ``duplicate`` is False."""

    duplicate: bool
    first: float


def digest_key(sha1: bytes) -> int:
    """The DRUM key of a body's SHA-1 digest: its first 64 bits."""
    return int.from_bytes(sha1[:8], "big")


class ContentSeen:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.drum: DRUM | None = None

    def open(self) -> None:
        self.drum = DRUM(
            self.path,
            buckets=1,
            bucket_bytes=BUCKET_BYTES,
            chunk_keys=CHUNK_KEYS,
            value_dtype="<u8",
            combine="first",
        )
        self.drum.open()
        if self.drum.should_merge():
            self.drum.merge()
        self.drum.ack_merged()

    def close(self) -> None:
        if self.drum is not None:
            self.drum.close()
            self.drum = None

    @property
    def stored(self) -> int:
        """Distinct bodies seen."""
        assert self.drum is not None, "open() first"
        return self.drum.stored_keys

    def check(self, sha1s: list[bytes], times: list[float]) -> list[Verdict]:
        """Apply a batch; one verdict per digest, in order (a digest repeated within the
        batch is a duplicate of its first occurrence)."""
        drum = self.drum
        assert drum is not None, "open() first"
        if not sha1s:
            return []
        keys = np.fromiter((digest_key(d) for d in sha1s), dtype=np.uint64, count=len(sha1s))
        seconds = np.asarray([int(t) for t in times], dtype=np.uint64)
        seq = drum.submit(keys, CHECK_UPDATE, values=seconds)
        drum.merge()
        verdicts: list[Verdict] = []
        for batch in drum.results():
            if batch.seq != seq:  # cannot happen: open() acknowledged everything older
                continue
            assert batch.values is not None
            verdicts = [
                Verdict(not bool(unique), float(first))
                for unique, first in zip(batch.unique, batch.values, strict=True)
            ]
        drum.ack(seq)
        assert len(verdicts) == len(sha1s)
        return verdicts
