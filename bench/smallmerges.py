"""DRUM's small merges (issue 40, part 2): a young crawl merges URLseen every few
thousand URLs, and each merge partitioned its generation into ``k`` bucket files,
created and deleted for a few thousand keys (``ext4_create`` was a third of a merge
thread's profile). A generation of at most ``spill_bytes`` of tuples is now partitioned
in RAM.

    python bench/smallmerges.py [--keys 5000] [--merges 60] [--rounds 3]

The real :class:`irlscrapy.storage.drum.DRUM` with URLseen's 64 buckets on a temporary
directory: ``--merges`` generations of ``--keys`` random check+update keys each, every
merge's results read and acknowledged, timed from ``merge()`` to the last ack. Two
variants, alternated ``--rounds`` times in one process: ``in_ram`` (the default
``spill_bytes``) and ``bucket_files`` (``spill_bytes=1``: every generation goes through
its bucket files, as before). Figures: the median merge of each round in milliseconds,
and the median over rounds of in_ram / bucket_files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import emit  # noqa: E402

from irlscrapy.storage.drum import CHECK_UPDATE, DRUM  # noqa: E402

BUCKETS = 64  # URLseen's (irlscrapy.storage.drumsizing)


def median_merge_ms(spill_bytes: int | None, keys: int, merges: int) -> float:
    with tempfile.TemporaryDirectory() as directory:
        options = {} if spill_bytes is None else {"spill_bytes": spill_bytes}
        drum = DRUM(Path(directory), buckets=BUCKETS, **options)  # type: ignore[arg-type]
        drum.open()
        rng = np.random.default_rng(1)
        took = []
        for _ in range(merges):
            drum.submit(
                rng.integers(0, 2**63, keys, dtype=np.uint64), np.full(keys, CHECK_UPDATE, np.uint8)
            )
            started = time.perf_counter()
            drum.merge()
            for batch in drum.results():
                drum.ack(batch.seq)
            took.append(time.perf_counter() - started)
        drum.close()
    return statistics.median(took) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--merges", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ratios = []
    for round_ in range(1, args.rounds + 1):
        files = median_merge_ms(1, args.keys, args.merges)
        ram = median_merge_ms(None, args.keys, args.merges)
        ratios.append(ram / files)
        emit("smallmerges", "merge_ms", round(files, 2), "ms", variant="bucket_files", round=round_)
        emit("smallmerges", "merge_ms", round(ram, 2), "ms", variant="in_ram", round=round_)
    emit(
        "smallmerges",
        "in_ram_to_bucket_files",
        round(statistics.median(ratios), 3),
        "ratio",
        rounds=[round(r, 3) for r in ratios],
        keys=args.keys,
    )


if __name__ == "__main__":
    main()
