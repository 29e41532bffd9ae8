"""ContentSeen: which downloaded bodies were downloaded before (exact duplicates).

A DRUM (:mod:`irlscrapy.storage.drum`) keyed by the first 64 bits of each body's
SHA-1, valued by the time of the body's first capture. :meth:`ContentSeen.check` takes
a batch of digests with their capture times and answers for each at once: new, or the
time of the capture it repeats. The recorder's batches are small (what arrived while
the previous one was written: a handful of bodies), and a DRUM merge per handful would
cost milliseconds of fixed work each, so the check is IRLbot's split between RAM and
disk:

- a digest submitted since the last merge is answered from :attr:`pending` (RAM: at most
  one DRUM batch: about 43,000 keys, see :data:`BUCKET_BYTES`);
- an older one by one lookup in the DRUM's merged cache (one LevelDB seek and at most
  one chunk read);
- a new digest is remembered in ``pending`` and submitted as an UPDATE tuple (journaled:
  durable on return); when the DRUM's batch is full, it is merged and ``pending`` is
  emptied.

Plain and synchronous; :class:`irlscrapy.warc.recorder.ExchangeRecorder` runs it in its
worker thread.

Files: ``<state dir>/contentseen/`` is the DRUM's directory (its files are listed in
:mod:`irlscrapy.storage.drum`).

Collisions: two different bodies with the same 64-bit prefix are taken for one; the
chance that a crawl of n bodies meets any such pair is about n^2 / 2^65 (1 in 37 at a
billion bodies). The WARC revisit record carries the body's full SHA-1, so a reader can
tell.

Crash semantics: a batch is applied when :meth:`check` returns; the worker writes its
records after. A kill -9 between the two leaves digests that are marked seen but whose
records were never written; their re-fetch after resume (requests in flight at a crash
are fetched again) is recorded as a revisit of a capture the WARC files do not hold.
That is at most the batches in the worker at the kill. :meth:`open` merges what a
killed run submitted, so no digest is lost to the next run's lookups.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from irlscrapy.storage.drum import DRUM, UPDATE

#: One bucket of this many bytes of tuples (24 bytes each) is one merge: about 43,000
#: new bodies, and ``pending`` holds at most that many entries (a few MB).
BUCKET_BYTES = 1 << 20


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
    """Invariant: *a digest is answered "new" once, at its first check, across restarts.*"""

    def __init__(self, path: Path | str, bucket_bytes: int = BUCKET_BYTES) -> None:
        self.path = Path(path)
        self.bucket_bytes = bucket_bytes
        self.drum: DRUM | None = None
        #: digest key -> first capture time, for the digests not merged yet
        self.pending: dict[int, int] = {}

    def open(self) -> None:
        self.drum = DRUM(
            self.path,
            buckets=1,
            bucket_bytes=self.bucket_bytes,
            value_dtype="<u8",
            combine="first",
        )
        self.drum.open()
        if self.drum.pending or self.drum.should_merge():  # what a previous run submitted
            self.drum.merge()
        self.drum.ack_merged()
        self.pending = {}

    def close(self) -> None:
        if self.drum is not None:
            self.drum.close()
            self.drum = None
        self.pending = {}

    @property
    def stored(self) -> int:
        """Distinct bodies seen."""
        assert self.drum is not None, "open() first"
        return self.drum.stored_keys + len(self.pending)

    def check(self, sha1s: list[bytes], times: list[float]) -> list[Verdict]:
        """One verdict per digest, in order (a digest repeated within the batch is a
        duplicate of its first occurrence)."""
        drum = self.drum
        assert drum is not None, "open() first"
        verdicts: list[Verdict] = []
        new_keys: list[int] = []
        new_times: list[int] = []
        for sha1, when in zip(sha1s, times, strict=True):
            key = digest_key(sha1)
            first = self.pending.get(key)
            if first is None:
                first = drum.lookup(key)
            if first is not None:
                verdicts.append(Verdict(True, float(first)))
                continue
            self.pending[key] = int(when)
            new_keys.append(key)
            new_times.append(int(when))
            verdicts.append(Verdict(False, float(int(when))))
        if new_keys:
            drum.submit(new_keys, UPDATE, values=new_times)
            if drum.should_merge():
                drum.merge()
                drum.ack_merged()
                self.pending = {}
        return verdicts
