"""STAR's in-degree store survives a kill -9 at the awkward points of a refresh: no
edge counted twice, none lost, no name forgotten (reputation_crash_worker.py dies
there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irlscrapy.star import indegree as reputation_module

from .reputation_crash_worker import reputation

WORKER = Path(__file__).with_name("reputation_crash_worker.py")


def worker(path: Path, point: str, *args: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(WORKER), str(path), point, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def ranking(path: Path) -> list[list[object]]:
    done = worker(path, "report")
    assert done.returncode == 0, done.stderr
    return sorted(json.loads(done.stdout))


@pytest.mark.parametrize("point", ["after-transfer", "before-transfer", "before-names"])
def test_a_kill_during_a_refresh_counts_every_edge_once(tmp_path: Path, point: str) -> None:
    died = worker(tmp_path, point, 0, 10)
    assert died.returncode == 9, died.stderr
    assert ranking(tmp_path) == [["t.com", 10, 0], ["u.com", 10, 0]]
    # and the store goes on counting exactly, names included, across another restart
    assert worker(tmp_path, "none", 10, 5).returncode == 0
    assert ranking(tmp_path) == [["t.com", 15, 0], ["u.com", 15, 0]]


def test_a_failed_refresh_stops_refreshing_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reputation_module, "SUBMIT_EVERY", 2)

    rep = reputation(tmp_path)
    errors: list[object] = []
    rep.on_error = errors.append
    for i in range(6):
        rep.record_page(f"s{i}.com", ["t.com"])  # an edge batch per page
    assert rep.indegree is not None
    submit, calls = rep.indegree.submit, [0]

    def fails_once(*args: object, **kwargs: object) -> int:
        calls[0] += 1
        if calls[0] == 1:
            raise OSError(5, "I/O error, once")
        return submit(*args, **kwargs)  # type: ignore[arg-type]

    rep.indegree.submit = fails_once  # type: ignore[method-assign]
    rep.refresh()
    assert len(errors) == 1
    for i in range(6, 8):
        rep.record_page(f"s{i}.com", ["t.com"])
    assert rep.edges is not None
    pending = rep.edges.pending
    rep.refresh()  # refused: the scheduler is closing the crawl; the next run resumes
    assert rep.edges.pending == pending > 0
    rep.close()
    rep = reputation(tmp_path)
    assert [(e.name, e.in_degree) for e in rep.ranked] == [("t.com", 8)]
    rep.close()
