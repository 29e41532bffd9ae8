"""Run by test_reputation_crash.py: record pages into a PLDInDegree, then die (os._exit,
as a kill -9 would: nothing closed, nothing flushed by us) at a chosen point of a
refresh; or, with ``report``, open the directory and print the ranking as JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from twisted.internet import defer

from irlscrapy.star.budgets import BudgetScale, paper
from irlscrapy.star.indegree import PLDInDegree


def reputation(path: Path) -> PLDInDegree:
    rep = PLDInDegree(
        paper,
        BudgetScale(10, 10_000, 100),
        memory=4 << 20,
        refresh_seconds=1e9,
        clock=lambda: 0.0,
        in_thread=lambda f, *args: defer.maybeDeferred(f, *args),
    )
    rep.open(path)
    return rep


def die(*args: Any, **kwargs: Any) -> None:
    os._exit(9)


def main() -> None:
    path, point = Path(sys.argv[1]), sys.argv[2]
    rep = reputation(path)
    if point == "report":
        print(json.dumps([[e.name, e.in_degree, e.pages] for e in rep.ranked]))
        rep.close()
        return
    first, count = int(sys.argv[3]), int(sys.argv[4])
    for i in range(first, first + count):
        rep.record_page(f"s{i}.com", ["t.com", "u.com"])
    assert rep.edges is not None and rep.indegree is not None
    if point == "after-transfer":  # the edge batch is in the in-degree journal, not acked
        rep.edges.ack = die  # type: ignore[method-assign]
    elif point == "before-transfer":  # the marker is written, the submit not done
        submit, calls = rep.indegree.submit, [0]

        def submit_then_die(*args: Any, **kwargs: Any) -> int:
            calls[0] += 1
            if calls[0] == 2:  # the first is the pages' batch, the second the transfer
                die()
            return submit(*args, **kwargs)

        rep.indegree.submit = submit_then_die  # type: ignore[method-assign]
    elif point == "before-names":  # merged and ranked; names and ack not written

        class Dying:
            def write_batch(self) -> None:
                die()

            def put(self, *args: Any) -> None:
                rep_names.put(*args)

        rep_names = rep.names
        rep.names = Dying()
    elif point != "none":
        raise SystemExit(f"unknown point {point}")
    rep.refresh()
    rep.close()


if __name__ == "__main__":
    main()
