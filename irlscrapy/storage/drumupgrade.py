"""DRUM format 1 to 2: the cache's chunks, once LevelDB values, rewritten as runs.

Format 1 kept each bucket's cache in the DRUM's LevelDB as sorted chunks of at most
131,072 keys, under ``b"C" bucket: u32 first_key: u64`` (big-endian) ->
``n: u32le, keys: n * u64le, [values: n * value]``, and its key count under
``b"Mkeys"``. LevelDB's log and compactions wrote each key three to four times more
than DRUM's own merges (issue 22, DRUM at a billion keys), so format 2 keeps a bucket's
cache as one flat sorted run (:mod:`irlscrapy.storage.drumcache`).

:func:`upgrade` runs at open, once: each bucket's chunks, read in key order, become the
bucket's run, which is recorded; then one transaction deletes the chunks and
``Mkeys``, sets the format to 2 and marks the chunks' space to be reclaimed
(``Mreclaim``). A kill -9 before that transaction leaves format 1 with its chunks: the
upgrade starts again, and writes the same runs again. :func:`reclaim` compacts the
chunks' key range away and then drops the mark, at every open until it is done: a
kill during the compaction (minutes for a large store) leaves the mark.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from irlscrapy.exceptions import DrumFormatError
from irlscrapy.storage.drumcache import RunWriter, encode_run, run_key, run_path

CHUNK = b"C"
RECLAIM = b"Mreclaim"
_COUNT = struct.Struct("<I")
_U32 = struct.Struct(">I")
_DONE = b"done"


def upgrade(db: Any, path: Path, runs: Path, record: np.dtype[Any], merged: int) -> None:
    """Rewrite a format 1 DRUM's chunks as runs of generation ``merged``, and mark the
    DRUM format 2 (see the module docstring)."""
    cut_short = [k for k, v in db.iterator(prefix=b"A") if v != _DONE]
    if cut_short:
        raise DrumFormatError(
            f"{path}: a merge of DRUM format 1 was cut short there; finish it with the "
            "irlscrapy version that began it (run the crawl again), then upgrade"
        )
    runs.mkdir(exist_ok=True)
    writer: RunWriter | None = None
    current = -1
    with db.write_batch(transaction=True) as wb:
        for key, raw in db.iterator(prefix=CHUNK):
            bucket = _U32.unpack(key[1:5])[0]
            if bucket != current:
                if writer is not None:
                    wb.put(run_key(current), encode_run(merged, writer.finish()))
                writer = RunWriter(run_path(runs, bucket, merged), record)
                current = bucket
            assert writer is not None
            writer.append(_chunk_records(raw, record))
            wb.delete(key)
        if writer is not None:
            wb.put(run_key(current), encode_run(merged, writer.finish()))
        wb.delete(b"Mkeys")
        wb.put(b"Mformat", b"2")
        wb.put(RECLAIM, b"")


def reclaim(db: Any) -> None:
    """Give the deleted chunks' disk space back, if an upgrade left them (see above)."""
    if db.get(RECLAIM) is not None:
        db.compact_range(start=CHUNK, stop=CHUNK + b"\xff")
        db.delete(RECLAIM)


def _chunk_records(raw: bytes, record: np.dtype[Any]) -> np.ndarray:
    """A format 1 chunk's keys (and values) as run records."""
    (n,) = _COUNT.unpack_from(raw)
    records = np.empty(n, record)
    records["key"] = np.frombuffer(raw, "<u8", n, 4)
    if record.itemsize > 8:  # a key and a value
        records["value"] = np.frombuffer(raw, record["value"], n, 4 + 8 * n)
    return records
