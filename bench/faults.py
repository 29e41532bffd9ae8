"""The fault campaign, longer (issue 21): the tiny web crawled on one JOBDIR through
``--kills`` kill -9s (one while the state is reopened, one in a URLseen merge, one in a
BEAST re-split, the rest at random instants from 0.2 to 6 s after a start) and a
SIGINT, then to the end (harness/faultcampaign.py has the plan and the figures).

    python bench/faults.py [--kills 50] [--seed S]

Prints the figures as JSON lines and appends them to bench/results/faults.jsonl:
pages of the ground truth lost, URLs answered before a stop that the run after it
fetched again (per stop, and the bound: what can be in flight or admitted at a stop),
and the least slack of a host's first request after a restart over its delay.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, RESULTS, emit

sys.path.insert(0, str(REPO))

from harness.faultcampaign import CRAWL_DELAY_CAP, REFETCH_BOUND, figures, run_campaign

#: kills besides the random ones: in the state's reopening, a merge, a re-split
PLACED_KILLS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50, help="kill -9s in all (>= 4)")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(10**9))
    args = parser.parse_args()
    if args.kills < PLACED_KILLS + 1:
        parser.error(f"--kills must be at least {PLACED_KILLS + 1}")
    work = Path(tempfile.mkdtemp(prefix="irlscrapy-faults-"))
    started = time.monotonic()
    try:
        runs = run_campaign(work, args.seed, args.kills - PLACED_KILLS)
        found = figures(runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    least = min(found.binding or found.slacks)[0]
    record = {
        "seed": args.seed,
        "kills": args.kills,
        "sigints": 1,
        "runs": len(runs),
        "lost": len(found.missing),
        "extra": len(found.extra),
        "refetched_per_stop": found.refetched,
        "refetched_max": max(found.refetched),
        "refetched_total": sum(found.refetched),
        "refetch_bound_per_stop": REFETCH_BOUND,
        "answered_twice_per_run": found.twice,
        "host_gaps_across_restarts": len(found.slacks),
        "gaps_with_binding_delay": len(found.binding),
        "binding_delay_s": CRAWL_DELAY_CAP,
        "least_slack_s": round(least, 3),
        "violations": sum(1 for slack, _ in found.slacks if slack < 0),
        "seconds": round(time.monotonic() - started, 1),
    }
    for name in ("lost", "refetched_max", "least_slack_s", "violations"):
        emit("faults", name, record[name], "", seed=args.seed, kills=args.kills)
    RESULTS.mkdir(exist_ok=True)
    with (RESULTS / "faults.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
