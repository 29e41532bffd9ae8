"""kill -9 of a DRUM consumer at random instants, then reopen: nothing lost or doubled."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irlscrapy.exceptions import DirectoryLocked
from irlscrapy.storage.drum import DRUM, UPDATE

from .drum_crash_worker import DRUM_KWARGS, batch

WORKER = Path(__file__).with_name("drum_crash_worker.py")
ROOT = Path(__file__).resolve().parents[2]
KILLS = 8


def test_kill_9_at_random_points_loses_and_doubles_nothing(tmp_path: Path) -> None:
    directory, results_file = tmp_path / "drum", tmp_path / "consumer.jsonl"
    rng = random.Random(20070609)
    for kill in range(KILLS):
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), str(directory), str(results_file)],
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT)},
            stderr=subprocess.PIPE,
        )
        time.sleep(0.4 + rng.random() * 1.2)  # start-up is ~0.3 s; then kill mid-work
        if kill == 0:  # while the worker holds the directory, a second process is refused
            with pytest.raises(DirectoryLocked, match=f"locked by process {worker.pid}"):
                DRUM(directory, **DRUM_KWARGS).open()  # type: ignore[arg-type]
        worker.send_signal(signal.SIGKILL)
        _, err = worker.communicate()
        assert worker.returncode == -signal.SIGKILL, err.decode()[-2000:]

    received: dict[int, dict[str, list[object]]] = {}
    for line in results_file.read_text().splitlines():
        if not line.endswith("}"):
            continue  # the consumer was killed while writing this line
        record = json.loads(line)
        seq = record.pop("seq")
        assert received.setdefault(seq, record) == record, f"batch {seq} changed on redelivery"
    with DRUM(directory, **DRUM_KWARGS) as drum:  # type: ignore[arg-type]
        drum.merge()  # whatever was submitted and not merged
        for result in drum.results():  # merged, not acknowledged: redelivered
            record = {
                "unique": result.unique.tolist(),
                "values": result.values.tolist(),  # type: ignore[union-attr]
                "aux": [a.decode() for a in result.aux or []],
            }
            assert received.setdefault(result.seq, record) == record
        accepted = drum.next_seq - 1

    assert accepted > 50 and sorted(received) == list(range(1, accepted + 1))
    model: dict[int, int] = {}
    for seq in range(1, accepted + 1):
        keys, ops, values = batch(seq)
        unique, after = [], []
        for key, op, value in zip(keys, ops, values, strict=True):
            unique.append(key not in model)
            if op & UPDATE:
                model[key] = model.get(key, 0) + value
            after.append(model.get(key, 0))
        assert received[seq] == {
            "unique": unique,
            "values": after,
            "aux": [str(k) for k in keys],
        }, f"batch {seq}"
