"""A DRUM consumer for the kill -9 test: submit, merge, record results, acknowledge; forever.

    python drum_crash_worker.py DIRECTORY RESULTS_FILE

Batch contents are a function of the batch's sequence number (:func:`batch`), so the
test can replay every batch DRUM accepted into a model.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

from irlscrapy.storage.drum import CHECK, CHECK_UPDATE, DRUM, UPDATE

KEY_SPACE = 3000
DRUM_KWARGS = {
    "buckets": 4,
    "bucket_bytes": 4000,
    "segment_keys": 50,
    "spill_bytes": 700,
    "value_dtype": "<i8",
    "combine": "add",
}


def batch(seq: int) -> tuple[list[int], list[int], list[int]]:
    rng = random.Random(seq)
    n = 1 + int(rng.random() * 120)
    keys = [int(rng.random() * KEY_SPACE) * 0x9E3779B97F4A7C15 % 2**64 for _ in range(n)]
    ops = [(CHECK, UPDATE, CHECK_UPDATE)[int(rng.random() * 3)] for _ in range(n)]
    values = [1 + int(rng.random() * 5) for _ in range(n)]
    return keys, ops, values


def main(directory: str, results_file: str) -> None:
    drum = DRUM(Path(directory), **DRUM_KWARGS)  # type: ignore[arg-type]
    drum.open()
    out = open(results_file, "a")  # noqa: SIM115 -- until the process is killed

    def consume() -> None:
        for result in drum.results():
            out.write(
                json.dumps(
                    {
                        "seq": result.seq,
                        "unique": result.unique.tolist(),
                        "values": result.values.tolist(),  # type: ignore[union-attr]
                        "aux": [a.decode() for a in result.aux or []],
                    }
                )
                + "\n"
            )
            out.flush()  # the consumer's own durable write, then the acknowledgement
            drum.ack(result.seq)

    consume()  # what a previous run had merged but not acknowledged
    while True:
        seq = drum.next_seq
        keys, ops, values = batch(seq)
        got = drum.submit(keys, np.array(ops, np.uint8), values, [str(k).encode() for k in keys])
        assert got == seq
        if drum.should_merge() or seq % 5 == 0:
            drum.merge()
            consume()


if __name__ == "__main__":
    main(*sys.argv[1:])
