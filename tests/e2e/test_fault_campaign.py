"""A fault campaign (harness/faultcampaign.py): the tiny web crawled on one JOBDIR
through ten kill -9s (in the state's reopening, in a URLseen merge, in a BEAST re-split,
at random instants, some in start-up) and a SIGINT, drawn anew each run (the seed is
printed; ``IRLSCRAPY_FAULT_SEED`` replays it), then to the end. Nothing is lost, each
restart fetches again at most what was in flight or admitted at the stop, no run fetches
a page twice (a URL readmitted and queued again, issue 36), and a host's
first request after a restart comes at least its delay (up to 5 s: longer than a restart
takes) after its last one before. The longer version is bench/faults.py."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

from harness.faultcampaign import REFETCH_BOUND, figures, run_campaign

RANDOM_KILLS = 7  # with the start-up, merge and re-split kills: ten, and a SIGINT


def test_ten_kills_and_a_sigint_lose_nothing_refetch_little_and_stay_polite(
    tmp_path: Path,
) -> None:
    seed = int(os.environ.get("IRLSCRAPY_FAULT_SEED") or random.SystemRandom().randrange(10**9))
    print(f"fault campaign seed {seed} (IRLSCRAPY_FAULT_SEED={seed} replays it)")
    runs = run_campaign(tmp_path, seed, RANDOM_KILLS)
    print("runs:", ", ".join(f"{r.what} ({len(r.records())} requests)" for r in runs))
    found = figures(runs)
    print(found.summary())
    assert not found.missing and not found.extra, (seed, found.missing[:10], found.extra[:10])
    assert max(found.refetched) <= REFETCH_BOUND, (seed, found.refetched)
    assert not any(found.twice), (seed, found.twice)  # no run fetches a page twice
    assert found.binding, "no host with a binding delay was asked in two runs: the check is empty"
    assert min(found.slacks)[0] >= 0, (seed, sorted(found.slacks)[:5])
    # each run's open counts what it mended, one line per stat (irlscrapy.storage.recovery)
    last = runs[-1].err.read_text()
    assert "'irl/recovered/restart_hold': 1" in last, last[-3000:]
    for run in runs:
        told = re.findall(r"on open, .*: (irl/recovered/\S+) = \d+", run.err.read_text())
        assert len(told) == len(set(told)), (run.what, told)
