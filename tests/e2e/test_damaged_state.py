"""Damaged state meets a clear answer (irlscrapy.state.check, irlscrapy.runtime.openfailure).

One crawl of the tiny web, killed with kill -9 midway, leaves a state directory with
every kind of file (several URLseen journals, BEAST slots, admitted and parked
segments, LevelDB caches, STAR's stores). Each kind of file is then cut short,
overwritten in its middle and deleted, each in a copy of the directory (a generated
table of cases): ``check`` names the damaged file, or the damage is one the crawl
recovers from by itself (a deleted cache); ``repair`` mends it, and ``check`` then
finds nothing. A crawl on a damaged directory stops before fetching anything with one
line that names the file and points to ``irlscrapy repair``, exits non-zero, and
prints no traceback; repaired, it resumes. A read-only state directory is refused the
same way.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from irlscrapy.exceptions import DamagedState
from irlscrapy.scheduler.frontier import admitted
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.frontier.parking import ParkedStore
from irlscrapy.state.check import check_state, repair_state
from irlscrapy.storage import drumcache
from irlscrapy.storage.cachedb import open_leveldb

from .conftest import QUICK_IRL, ROOT, crawl_tiny, downloads, invitro_pid, tiny_crawl_args

#: a small DRUM: URLseen merges often, so a kill finds several journals
SETTINGS = (*QUICK_IRL, "IRL_URLSEEN_MEMORY=1048576", "IRL_WORKBENCH_URLS=100")
#: pages a repaired crawl fetches before it is stopped: it has resumed
RESUMED_PAGES = 100
#: the tenth URLseen merge: a few hundred pages into the crawl
MERGE_PAUSE = "merge:urlseen@10"


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JOBDIR of a crawl killed with kill -9 while it merged URLseen (its test-only
    pause, irlscrapy.storage.faulthooks, held it there), its in-vitro server stopped."""
    work = tmp_path_factory.mktemp("killed")
    log, job, pause = work / "first.jsonl", work / "job", work / "paused"
    err = work / "first.err"
    env = {**os.environ, "IRLSCRAPY_PAUSE_AT": MERGE_PAUSE, "IRLSCRAPY_PAUSE_FILE": str(pause)}
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            tiny_crawl_args(log, f"JOBDIR={job}", *SETTINGS),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + 120
    while not pause.exists():
        assert proc.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    os.kill(invitro_pid(err.read_text()), signal.SIGTERM)  # (it outlives a killed crawl)
    print(f"killed during URLseen merge at {len(downloads(log))} pages")
    assert len(list((job / "urlseen").glob("journal-*.rec"))) >= 2, "a closed journal, merging"
    assert check_state(job) == [], "a kill -9 leaves no damage"
    return job


def _cut(path: Path) -> None:
    os.truncate(path, max(0, path.stat().st_size - max(3, path.stat().st_size // 3)))


def _overwrite(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4] = bytes(b ^ 0xA5 for b in data[middle : middle + 4])
    path.write_bytes(bytes(data))


def _delete(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


DAMAGES: dict[str, Callable[[Path], None]] = {
    "cut": _cut,
    "overwrite": _overwrite,
    "delete": _delete,
}


def _listed_slots(job: Path) -> list[Path]:
    """The BEAST slots past the one being read, newest first, once state.json lists
    them: BEAST reopened where the killed crawl's reader stood, given one record of a
    new domain (its first record goes to the slot after the one being read: a kill may
    leave no slot past the reader), and closed, as a resumed crawl stopped cleanly
    leaves it (a kill finds state.json as it was last saved)."""
    cursor = admitted.read_cursor(job)
    queues = Beast(job / "beast", lambda domain: 1)
    queues.open(cursor)
    assert queues.push(NEW_DOMAIN, b"a record past the reader") == queues.reading + 1
    queues.close()
    state = json.loads((job / "beast" / "state.json").read_text())
    slots = [job / "beast" / f"slot-{s}.rec" for s in state["slots"] if s > state["reading"]]
    return sorted(slots, key=lambda p: -int(p.stem[5:]))


#: a domain key no crawl of the tiny web has (PLD keys are hashes)
NEW_DOMAIN = 12345


def _slot_being_read(job: Path) -> list[Path]:
    """The BEAST slot the reader is inside: BEAST reopened where the killed crawl's
    reader stood and one record taken and journaled, as a resumed crawl does (a kill
    may find the reader between slots), then closed."""
    journal = admitted.AdmittedJournal(job)
    journal.open()
    queues = Beast(job / "beast", lambda domain: 1, on_slot_read=journal.slot_read)
    queues.open(journal.cursor)
    taken = queues.pop()
    assert taken is not None, "the killed crawl left BEAST empty"
    journal.admit(*queues.position, *taken)
    queues.close()
    journal.close()
    return [job / "beast" / f"slot-{queues.position[0]}.rec"]


def _parked_urls(job: Path) -> list[Path]:
    """A parked file holding a URL: the store reopened, one URL parked, and closed."""
    store = ParkedStore(job)
    store.replay(lambda record: None, store.open())  # (a copy: replays go nowhere)
    store.park(b"a parked record")
    store.close()
    return sorted(job.glob("parked-*.rec"), key=lambda p: -int(p.stem[7:]))


def _urlseen_run(job: Path) -> list[Path]:
    """A run URLseen's LevelDB records (a kill mid-merge may leave others, unrecorded:
    deleted at open, so no damage)."""
    db = open_leveldb(job / "urlseen" / "cache", create=False)
    try:
        recorded = drumcache.recorded_runs(job / "urlseen" / drumcache.RUNS, db)
    finally:
        db.close()
    return [path for path, _ in recorded.values()]


#: One file of each kind, by a glob under the state directory: the first match (sorted),
#: the oldest of a sequence; or by a function. For a LevelDB, damage goes to its newest
#: table or log.
KINDS: dict[str, str | Callable[[Path], list[Path]]] = {
    "urlseen journal (closed)": "urlseen/journal-*.rec",
    "urlseen LevelDB": "urlseen/cache/MANIFEST-*",
    "urlseen run": _urlseen_run,
    "STAR in-degree journal": "star/indegree/journal-*.rec",
    "STAR names LevelDB": "star/names/CURRENT",
    "admitted segment": "admitted-*.rec",
    "parked segment": "parked-*.rec",
    "parked segment holding URLs": _parked_urls,
    "BEAST slot": "beast/slot-*.rec",
    "BEAST slot being read": _slot_being_read,
    "BEAST slot not reached": _listed_slots,
    "BEAST QF": "beast/qf-*.rec",
    "BEAST state": "beast/state.json",
    "robots cache": "robots/cache/MANIFEST-*",
    "DNS cache": "dns/cache/MANIFEST-*",
}

#: Damage check cannot tell from what a kill -9 leaves, which the crawl's open takes as
#: it comes: a deleted cache (fetched again); the newest file of a sequence cut short (a
#: crash's torn tail; a parked file or BEAST queue file may be the one a crash tore); a
#: deleted file that held nothing still to do: the first BEAST slot if the reader has
#: left it (else it is the slot being read), the first parked file if it holds no URL
#: (the current generation, created empty at open). Every other case is found by check:
#: a deleted QF, slot being read, slot the reader has not reached (state.json lists it),
#: parked file holding URLs (parked.json lists it), or only admitted segment (BEAST's
#: queues are there).
UNSEEN = {
    ("robots cache", "delete"),
    ("DNS cache", "delete"),
    ("BEAST slot", "delete"),
    ("BEAST slot", "cut"),
    ("BEAST slot being read", "cut"),
    ("BEAST slot not reached", "cut"),
    ("BEAST QF", "cut"),
    ("parked segment", "delete"),
    ("parked segment", "cut"),
    ("parked segment holding URLs", "cut"),
    ("admitted segment", "cut"),
    ("STAR in-degree journal", "cut"),
}


def _target(job: Path, kind: str) -> Path:
    where = KINDS[kind]
    if isinstance(where, str):
        found = sorted(job.glob(where), key=lambda p: (len(p.name), p.name))  # by number
    else:
        found = where(job)
    if not found:
        pytest.fail(f"the killed crawl left no {kind} ({where})")
    return found[0]


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_check_names_the_damage_and_repair_mends_it(
    killed: Path, tmp_path: Path, kind: str, damage: str
) -> None:
    job = tmp_path / "job"
    shutil.copytree(killed, job)
    target = _target(job, kind)
    DAMAGES[damage](target)
    found = check_state(job)
    if (kind, damage) in UNSEEN:
        assert found == [] or all(isinstance(d, DamagedState) for d in found)
    else:
        assert found, f"{kind} {damage}: check found nothing"
        # the file itself, or the LevelDB it is part of
        assert any(str(d.path) in (str(target), str(target.parent)) for d in found), found
    repair_state(job)
    assert check_state(job) == []


def test_a_crawl_on_damaged_state_says_so_in_one_line_and_resumes_once_repaired(
    killed: Path, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    shutil.copytree(killed, job)
    journal = min((job / "urlseen").glob("journal-*.rec"), key=lambda p: int(p.stem[8:]))
    _cut(journal)
    refused = crawl_tiny(tmp_path / "refused.jsonl", f"JOBDIR={job}", *SETTINGS)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr, refused.stderr[-3000:]
    errors = [line for line in refused.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert str(journal) in errors[0] and f"irlscrapy repair {job}" in errors[0], errors[0]
    assert "'irl/refused/damaged_state': 1" in refused.stderr  # a refusal is a stat too
    refused_log = tmp_path / "refused.jsonl"
    assert not refused_log.exists() or downloads(refused_log) == []
    checked = subprocess.run(
        [sys.executable, "-m", "irlscrapy", "check", str(job)], capture_output=True, text=True
    )
    assert checked.returncode == 1 and str(journal) in checked.stdout, checked.stdout
    repaired = subprocess.run(
        [sys.executable, "-m", "irlscrapy", "repair", str(job)], capture_output=True, text=True
    )
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert f"repair: {journal}: kept its first" in repaired.stdout, repaired.stdout
    assert "no damage found" in repaired.stdout
    resumed_log = tmp_path / "resumed.jsonl"
    with (tmp_path / "resumed.err").open("w") as err:
        resumed = subprocess.Popen(
            tiny_crawl_args(resumed_log, f"JOBDIR={job}", *SETTINGS),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + 120
    while not resumed_log.exists() or len(downloads(resumed_log)) < RESUMED_PAGES:
        assert resumed.poll() is None, (tmp_path / "resumed.err").read_text()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    resumed.send_signal(signal.SIGINT)
    assert resumed.wait(120) == 0
    stderr = (tmp_path / "resumed.err").read_text()
    assert "resuming from" in stderr and "summary (shutdown)" in stderr, stderr[-3000:]
    # what the open mended after the kill: a stat, and one line (irlscrapy.storage.recovery)
    assert "'irl/recovered/restart_hold': 1" in stderr, stderr[-3000:]
    assert stderr.count("held every host and IP for its delay") == 1
    assert "Traceback" not in stderr, stderr[-3000:]


def test_a_read_only_state_directory_is_refused_in_one_line(killed: Path, tmp_path: Path) -> None:
    """The suite runs as root, whom chmod does not stop: a read-only bind mount does."""
    job = tmp_path / "job"
    shutil.copytree(killed, job)
    subprocess.run(["mount", "--bind", "-o", "ro", str(job), str(job)], check=True)
    try:
        refused = crawl_tiny(tmp_path / "refused.jsonl", f"JOBDIR={job}", *SETTINGS)
    finally:
        subprocess.run(["umount", str(job)], check=True)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr, refused.stderr[-3000:]
    errors = [line for line in refused.stderr.splitlines() if " ERROR: " in line]
    # refused as a setting, before anything is built (irlscrapy.startcheck)
    assert len(errors) == 1 and f"JOBDIR={job}: it cannot be written to" in errors[0], errors
