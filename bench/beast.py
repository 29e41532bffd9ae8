"""BEAST simulation (issue 4, item 1; issue 22, part 4): disk bytes per crawled page,
BEAST against the naive two-queue scheme, on real queue files and no network.

    python bench/beast.py                                  # N = 10^7 pages, b = 110
    python bench/beast.py --quick                          # N = 10^6 pages
    python bench/beast.py --pages 100000000 --url-bytes 16 --no-naive   # resumable

The crawler is simulated: each crawled page pops one URL and pushes L unique new URLs
(L = 6.5 on average, IRLbot's: 6 or 7), of b bytes (``--url-bytes``, 110 by default:
an 8-byte domain key, then an 8-byte link id and b - 16 bytes of padding; b = 16 is a
domain and an id), whose domains are drawn by Zipf popularity over V domains with
budget B = 10 each (E[B] = 10). V is scaled so that alpha_N = N / (E[B] V) reaches
ALPHA_END. A domain's key is ``irlscrapy.domains.domain_key`` of a made-up name, a
uniform 64-bit hash as in a crawl (BEAST's count of distinct domains, a HyperLogLog
past 4,096 keys, needs that; small integers would all land in one register and count
as 4,096). At checkpoints the script prints, for each scheme, the disk bytes (written +
read, record framing included: 8 bytes a record) per crawled page since the previous
checkpoint, beside the prediction at that alpha:

    BEAST (Theorem 7, eq. 27):  2 b [2 alpha / (1 + alpha) (L - 1) + 1]
    naive (Theorem 6, eq. 25):  2 b (L - 1) alpha

with b the URL's bytes; eq. 27 with b + 8 (the record as stored) is printed beside it.
The naive scheme stops once it does 10x BEAST's I/O per page (``--no-naive``: not run).
The simulator runs BEAST's QF re-splits in slices as a crawl does
(``irlscrapy.scheduler.resplitter``): one slice (``RESPLIT_SLICE`` records) after each
page, as a reactor turn between two responses, and slices until BEAST can give a URL
when a page finds its next queue waiting for one; it times each page (its pop and
pushes) and each slice, and reports the longest of each (``reactor_stalls``): what a
crawl's reactor would be blocked for. Files BEAST is done with go on a worker thread,
as in a crawl. At the end: BEAST's average over the whole run beside eq. 27's limit 2b(2L - 1), the
bytes its state directory holds per page (du), and BEAST's j beside eq. 31,
j = 2^ceil(log2(alpha + 1)) - 1. Eq. 31 counts the 2^(i+1) - 1 queues emptied in the last
stage; BEAST's j is its window, 2^i slots after i re-splits, so the two agree when
j = (eq. 31 + 1) / 2. The figures go to a JSON file (``--results``), then the state
directory's queues are deleted (``--keep-state``: kept).

Resuming (``--state DIR``): the run is a pure function of its options. A page's links
come from a counter-based RNG (numpy's PCG64 seeded with (SEED, page // SAVE_EVERY)),
and at *safe points* the simulator saves its own state (``sim.json``: pages done,
whether the next page's URL is already taken, BEAST's position, the byte counters, the
rows so far, a copy of BEAST's state.json and the size of each queue file):

- every SAVE_EVERY pages and at each checkpoint, after a page's pushes;
- in BEAST's ``on_slot_read`` hook (a slot read to its end, before its file goes and
  before a cycle end can re-split QF), with the position past the slot;
- right after a pop() that moved BEAST to another slot (pushes of that page pending),
  which is also right after a re-split began (no periodic save while one runs: a kill
  then resumes from its start, as BEAST begins its phase again).

BEAST's state.json is written (``Beast._save_state``, as ``close()`` does) just before
each save, so its counts (N taken, E[B_x], V) are current. Rerunning the same command
after a kill -9 finds ``sim.json`` and, when BEAST's state.json still names the slot
and QF generation of the save, rolls the queue files back to the saved sizes (pushes
since the save removed) and state.json back to the saved copy, then reopens BEAST at
the saved position and re-simulates the pages since the save: the same records, so
the same files and figures. When BEAST's state.json moved on, the kill came during or
after the slot change that followed an ``on_slot_read`` save: a re-split cut short is
undone and redone by BEAST itself; one that finished is counted (it read and wrote
the old QF once: 2 x its record bytes). Records of the slot being read that were taken
before the save are read again on resume (BEAST skips them): their bytes are not
counted, as an uninterrupted run reads them once. A kill inside pop() after an
``on_slot_read`` save and before BEAST wrote state.json (microseconds, or a cycle end
with nothing to re-split) leaves the cycle end undone: it is done after the reopen
(``Beast._end_cycle``), as pop() would have. So the figures of a killed and resumed
run are those of an uninterrupted one; only the pages simulated since the last save
are simulated twice (their time is lost, not counted).

The naive scheme is not resumable: a run that includes it starts afresh when killed
before the naive scheme stopped.

Cost: the simulator's own work is done in numpy per batch (each link's domain key and
payload), and a page's pushes are handed to BEAST from C (``map``): about 5% of the
run. The rest is BEAST's (measured 2026-11, py-spy, at 10^7 pages): about 15 pushes a
page (6.5 new links, 8.4 re-split from QF) at 3.3 us each, of which 1.3 us are the
flush() and tell() that ``RecordWriter.append`` makes per record and 0.3 us BEAST's
count of distinct domains; 10^8 pages at b = 16 take about 90 CPU minutes. A resume
adds BEAST's reopen, one scan of every queue file (about 1 us a record: up to ten
minutes or so at 10^8 pages, whose queues hold some 5 x 10^8 records). Progress
lines print ``seconds`` (wall) and ``cpu_seconds``: at nice 19 beside CPU-bound jobs
at nice 0 the run gets ~1.5% of a core (CFS weights 15 against 1024), and a wall
clock far ahead of the CPU clock says so.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import shutil
import sys
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import disk_usage  # noqa: E402

from irlscrapy.domains import domain_key  # noqa: E402
from irlscrapy.scheduler.frontier.beast import Beast  # noqa: E402
from irlscrapy.storage.jsonfile import replace_json  # noqa: E402
from irlscrapy.storage.recordfile import MAGIC, RECORD_OVERHEAD, RecordWriter, scan  # noqa: E402

PAGES, QUICK_PAGES = 10_000_000, 1_000_000
ALPHA_END = 32
LINKS = 6.5  # unique new URLs per crawled page (IRLbot's L): 6 or 7, half and half
URL_BYTES = 110  # IRLbot's b, URL plus crawl metadata
BUDGET = 10
ZIPF = 1.0
SEED = 20070609
MAX_QUEUES = 1024
SAVE_EVERY = 100_000  # pages between periodic safe points (and per RNG batch)
PROGRESS_EVERY = 1_000_000  # pages between progress lines
DEFAULT_STATE = Path("/work/beast-state")


def emit(**figure: object) -> None:
    print(json.dumps({"bench": "beast", **figure}), flush=True)


def eq27(b: float, alpha: float) -> float:
    return 2 * b * (2 * alpha / (1 + alpha) * (LINKS - 1) + 1)


class NaiveTwoQueues:
    """Q and QF (Theorem 6): new URLs go to QF; when Q is empty, QF is read whole and
    split again, the first B_x URLs of each domain into Q and the rest into a new QF."""

    def __init__(self, path: Path, budget: int) -> None:
        self.path, self.budget = path, budget
        self.generation = 0
        self.q: RecordWriter | None = None
        self.qf = self._open("qf", 0)
        self.q_reader: Iterator[tuple[int, bytes]] | None = None
        self.q_len = self.qf_len = 0
        self.bytes_written = self.bytes_read = 0

    def _open(self, name: str, generation: int) -> RecordWriter:
        writer = RecordWriter(self.path / f"{name}-{generation}.rec")
        writer.open()
        return writer

    def push(self, domain: int, payload: bytes) -> None:
        self._append(self.qf, domain.to_bytes(8, "big") + payload)
        self.qf_len += 1

    def _append(self, writer: RecordWriter, record: bytes) -> None:
        self.bytes_written += len(record) + RECORD_OVERHEAD
        writer.append(record)

    def pop(self) -> bytes | None:
        while not self.q_len:
            if not self.qf_len:
                return None
            self._split()
        assert self.q_reader is not None
        _, record = next(self.q_reader)
        self.q_len -= 1
        self.bytes_read += len(record) + RECORD_OVERHEAD
        return record

    def _split(self) -> None:
        old_qf = self.qf.path
        self.qf.close()
        if self.q is not None:
            self.q.path.unlink(missing_ok=True)
        self.generation += 1
        self.q, self.qf = self._open("q", self.generation), self._open("qf", self.generation)
        counts: dict[int, int] = {}
        self.qf_len = 0
        for _, record in scan(old_qf):
            self.bytes_read += len(record) + RECORD_OVERHEAD
            domain = int.from_bytes(record[:8], "big")
            if counts.get(domain, 0) < self.budget:
                counts[domain] = counts.get(domain, 0) + 1
                self._append(self.q, record)
                self.q_len += 1
            else:
                self._append(self.qf, record)
                self.qf_len += 1
        old_qf.unlink()
        self.q.close()
        self.q_reader = scan(self.q.path)


class Links:
    """The links of every page, from a counter-based RNG: batch k (pages k*SAVE_EVERY
    onwards) is drawn by PCG64 seeded with (SEED, k), so any page can be re-drawn.

    A batch is built whole with numpy: each link's domain key and payload (its id,
    ``page << 3 | n`` for the page's n-th link, n from 1, big-endian, then the padding),
    so the crawl loop only hands ready objects to BEAST."""

    def __init__(self, domains: int, url_bytes: int) -> None:
        weights = np.arange(1, domains + 1, dtype=np.float64) ** -ZIPF
        self.cdf = np.cumsum(weights)
        #: domain_key of a made-up name per Zipf rank: uniform 64-bit keys, as in a crawl
        self.keys = np.array(
            [domain_key(f"d{rank}.example") for rank in range(domains)], dtype=np.uint64
        )
        self.payload_bytes = url_bytes - 8  # the domain key is BEAST's, before the payload
        self.batch = -1
        self.ends: list[int] = []  # index past each page's last link in self.domains
        self.domains: list[int] = []
        self.payloads: list[bytes] = []

    def load(self, batch: int) -> None:
        if batch == self.batch:
            return
        rng = np.random.Generator(np.random.PCG64([SEED, batch]))
        counts = rng.integers(6, 8, SAVE_EVERY)  # 6 or 7: L = 6.5 on average
        uniform = rng.random(int(counts.sum()))
        ranks = np.searchsorted(self.cdf, uniform * self.cdf[-1], side="right")
        ends = np.cumsum(counts)
        pages = np.arange(batch * SAVE_EVERY, (batch + 1) * SAVE_EVERY, dtype=np.uint64)
        nth = np.arange(1, len(ranks) + 1) - np.repeat(ends - counts, counts)  # 1, 2, ...
        ids = (np.repeat(pages << np.uint64(3), counts) + nth.astype(np.uint64)).astype(">u8")
        payloads = np.zeros((len(ids), self.payload_bytes), dtype=np.uint8)
        payloads[:, :8] = ids.view(np.uint8).reshape(-1, 8)
        self.ends = ends.tolist()
        self.domains = self.keys[ranks].tolist()
        # (a void scalar's tolist() is its bytes, trailing zeros kept: not so for "S")
        self.payloads = payloads.view(f"V{self.payload_bytes}").ravel().tolist()
        self.batch = batch

    def page(self, page: int) -> tuple[int, int]:
        """(start, end) of the page's links in self.domains and self.payloads (its batch
        loaded)."""
        i = page - self.batch * SAVE_EVERY
        return (self.ends[i - 1] if i else 0), self.ends[i]


class Simulation:
    def __init__(self, args: argparse.Namespace) -> None:
        self.pages: int = args.pages
        self.b: int = args.url_bytes
        self.domains = max(1, int(self.pages / (BUDGET * ALPHA_END)))
        self.state_dir: Path = args.state
        self.beast_dir = self.state_dir / "beast"
        self.sim_file = self.state_dir / "sim.json"
        self.pad = bytes(self.b - 16)
        self.params = {
            "pages": self.pages,
            "url_bytes": self.b,
            "domains": self.domains,
            "budget": BUDGET,
            "links": LINKS,
            "zipf": ZIPF,
            "seed": SEED,
            "alpha_end": ALPHA_END,
            "max_queues": MAX_QUEUES,
            "save_every": SAVE_EVERY,
            "naive": not args.no_naive,
            **({"at_once": True} if args.at_once else {}),
        }
        self.checkpoints = [int(BUDGET * self.domains * a) for a in (1, 2, 4, 8, 16, ALPHA_END)]
        self.done = 0  # pages whose links are all pushed
        self.pending = False  # page `done`'s URL is popped already, its links not pushed
        # cumulative over the sessions, BEAST's own counters being since its last open
        self.base_written = self.base_read = self.base_resplits = 0
        self.rows: list[dict[str, object]] = []
        self.last = {"beast": [0, 0], "naive": [0, 0]}  # scheme -> [pages, io] at last row
        self.seconds_before = 0.0  # compute time of earlier sessions, to their last save
        self.cpu_before = 0.0  # and their CPU time (a run starved of CPU shows a gap)
        self.sessions = 1
        self.slot_reads = 0
        self.saves = 0
        self.peak_length = 0  # largest queue bytes (file lengths) at safe points and re-splits
        #: the reactor's stalls, as a crawl would see them: the longest page (its pop and
        #: pushes) and the longest re-split slice, in seconds; slices run, and pops that
        #: found BEAST waiting for a re-split
        self.longest_page = self.longest_slice = 0.0
        self.slices = self.waits = 0
        self._before_resplit = (0, 0)  # (queue bytes at a re-split's end, re-splits before)
        self.naive: NaiveTwoQueues | None = None
        self.naive_done = args.no_naive
        self.links = Links(self.domains, self.b)
        self.deleter = ThreadPoolExecutor(1)
        self.at_once: bool = args.at_once
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()
        self.beast = self._beast()

    def _beast(self) -> Beast:
        return Beast(
            self.beast_dir,
            lambda d: BUDGET,
            initial_queues=2,
            max_queues=MAX_QUEUES,
            on_slot_read=self._slot_read,
            # re-splits run in slices, run() drives them (--at-once: inside pop(), as
            # before issue 40: the page that ends a cycle waits for the whole re-split)
            on_resplit=None if self.at_once else lambda: None,
            # (files it is done with go on a worker thread, as in a crawl)
            discard=lambda path: self.deleter.submit(path.unlink, missing_ok=True),
        )

    # -- totals ----------------------------------------------------------------------
    def beast_io(self) -> int:
        b = self.beast
        return self.base_written + b.bytes_written + self.base_read + b.bytes_read

    def seconds(self) -> float:
        return self.seconds_before + time.perf_counter() - self.started

    def cpu_seconds(self) -> float:
        return self.cpu_before + time.process_time() - self.cpu_started

    # -- safe points -------------------------------------------------------------------
    def _queue_sizes(self) -> dict[str, int]:
        sizes = {}
        for entry in os.scandir(self.beast_dir):
            if entry.name.endswith(".rec"):
                with contextlib.suppress(FileNotFoundError):  # (the discard thread's)
                    sizes[entry.name] = entry.stat().st_size
        return sizes

    def save(self, phase: str) -> None:
        beast = self.beast
        beast._save_state()  # current N, E[B_x], V, reading and cycle_end (as close() does)
        snapshot = json.loads((self.beast_dir / "state.json").read_text())
        sizes = self._queue_sizes()
        resplits = self.base_resplits + beast.qf_resplits
        if phase == "slot_read":  # a re-split may follow: the queues, the old QF's copy
            self._before_resplit = (  # added, the slot read deleted
                sum(sizes.values())
                + sizes.get(f"qf-{snapshot['qf']}.rec", 0)
                - sizes.get(f"slot-{beast.reading}.rec", 0),
                resplits,
            )
        elif phase == "taken" and resplits > self._before_resplit[1]:
            self.peak_length = max(self.peak_length, self._before_resplit[0])
        self.peak_length = max(self.peak_length, sum(sizes.values()))
        self.saves += 1
        state = {
            "params": self.params,
            "phase": phase,
            "done": self.done,
            "pending": self.pending,
            "position": list(beast.position),
            "written": self.base_written + beast.bytes_written,
            "read": self.base_read + beast.bytes_read,
            "resplits": self.base_resplits + beast.qf_resplits,
            "rows": self.rows,
            "last": self.last,
            "seconds": self.seconds(),
            "cpu_seconds": self.cpu_seconds(),
            "sessions": self.sessions,
            "slot_reads": self.slot_reads,
            "saves": self.saves,
            "peak_length": self.peak_length,
            "stalls": [self.longest_page, self.longest_slice, self.slices, self.waits],
            "before_resplit": self._before_resplit,
            "naive_active": self.naive is not None,
            "naive_done": self.naive_done,
            "beast_state": snapshot,
            "sizes": sizes,
        }
        replace_json(self.sim_file, state)

    def _slot_read(self, slot: int) -> None:
        """BEAST's hook: slot read to its end (position past it), before its file goes."""
        self.slot_reads += 1
        self.save("slot_read")

    # -- start or resume -------------------------------------------------------------
    def start(self) -> None:
        if self.sim_file.exists():
            self._resume(json.loads(self.sim_file.read_text()))
            return
        for name in ("beast", "naive"):  # a start cut short before its first save
            shutil.rmtree(self.state_dir / name, ignore_errors=True)
        self.beast_dir.mkdir(parents=True)
        self.beast.open()
        if not self.naive_done:
            (self.state_dir / "naive").mkdir()
            self.naive = NaiveTwoQueues(self.state_dir / "naive", BUDGET)
        keys = self.links.keys.tolist()
        for rank, key in enumerate(keys):  # one seed URL per domain
            payload = (1 << 63 | rank).to_bytes(8, "big") + self.pad  # (ids apart from links')
            self.beast.push(key, payload)
            if self.naive is not None:
                self.naive.push(key, payload)
        self.save("page")

    def _resume(self, sim: dict[str, Any]) -> None:
        if sim["params"] != self.params:
            raise SystemExit(
                f"{self.sim_file} is a run with {sim['params']}, not {self.params}: "
                "give another --state, or delete that one"
            )
        if sim["naive_active"]:
            raise SystemExit(
                f"{self.sim_file}: killed while the naive scheme ran, which is not "
                "resumable: delete the directory and start again (or use --no-naive)"
            )
        saved = sim["beast_state"]
        now = json.loads((self.beast_dir / "state.json").read_text())
        phase = sim["phase"]
        lag_cycle_end = False
        same = now["reading"] == saved["reading"] and now["qf"] == saved["qf"]
        if same and now["resplit"] == saved["resplit"]:
            # Nothing but pushes and pops inside one slot since the save, and re-split
            # slices of the phase in flight at the save (BEAST undoes it): roll back.
            for entry in os.scandir(self.beast_dir):
                if not entry.name.endswith(".rec"):
                    continue
                size = sim["sizes"].get(entry.name)
                if size is None:
                    os.unlink(entry.path)  # a slot started since the save
                elif entry.stat().st_size > size:
                    os.truncate(entry.path, size)
                elif entry.stat().st_size < size:
                    raise SystemExit(f"{entry.path} is shorter than at the save: damage")
            replace_json(self.beast_dir / "state.json", saved)
            lag_cycle_end = phase == "slot_read"
        elif phase == "slot_read" and now["reading"] > saved["reading"]:
            # The slot change after the save went on: BEAST redoes a re-split cut short
            # on open; one that finished read and wrote the old QF once.
            if not now["resplit"] and now["qf"] == saved["qf"] + 1:
                qf = sim["sizes"][f"qf-{saved['qf']}.rec"] - len(MAGIC)
                sim["written"] += qf
                sim["read"] += qf
                sim["resplits"] += 1
            elif now["qf"] != saved["qf"] and not (
                now["qf"] == saved["qf"] + 1
                and now["resplit"]
                and now["resplit"]["sources"] == [f"qf-{saved['qf']}.rec"]
            ):  # (a re-split begun after the save: BEAST undoes it and begins it again)
                raise SystemExit(f"BEAST's state.json {now} does not follow the save {saved}")
            if now["taken"] != saved["taken"]:  # a "taken" save cut short counted the pop
                now["taken"] = saved["taken"]  # that the resumed run does again
                replace_json(self.beast_dir / "state.json", now)
        else:
            raise SystemExit(f"BEAST's state.json {now} does not follow the save {saved}")
        self.done, self.pending = sim["done"], sim["pending"]
        self.base_written, self.base_read = sim["written"], sim["read"]
        self.base_resplits = sim["resplits"]
        self.rows, self.last = sim["rows"], sim["last"]
        self.seconds_before = sim["seconds"]
        self.cpu_before = sim.get("cpu_seconds", 0.0)
        self.sessions = sim["sessions"] + 1
        self.slot_reads, self.saves = sim["slot_reads"], sim["saves"]
        self.peak_length = sim["peak_length"]
        self.longest_page, self.longest_slice, self.slices, self.waits = sim.get(
            "stalls", [0.0, 0.0, 0, 0]
        )
        self._before_resplit = (sim["before_resplit"][0], sim["before_resplit"][1])
        self.naive_done = sim["naive_done"]
        position: tuple[int, int] = (sim["position"][0], sim["position"][1])
        t0 = time.perf_counter()
        self.beast.open(read_past=position)
        beast = self.beast
        if lag_cycle_end and beast.reading >= beast.cycle_end:
            beast._end_cycle()  # pop() ends the cycle right after on_slot_read
        if self.base_resplits + beast.qf_resplits > self._before_resplit[1]:
            # a re-split after the save, done before the kill, by the reopen or just
            # above: the "taken" save that counts its peak comes after no pop now
            self.peak_length = max(self.peak_length, self._before_resplit[0])
        if (
            position[1] >= 0
            and beast.position[0] == beast.reading
            and beast._counts.get(beast.reading, 0)
        ):
            # pop() reads the slot's records taken before the save again (and skips
            # them): an uninterrupted run read them once, and counted them then
            self.base_read -= position[1] + self.b
        emit(
            figure="resumed",
            pages=self.done,
            phase=phase,
            position=list(position),
            session=self.sessions,
            reopen_seconds=round(time.perf_counter() - t0, 1),
        )

    # -- the crawl -------------------------------------------------------------------
    def run(self) -> None:
        emit(figure="setup", **self.params, state=str(self.state_dir))
        self.start()
        beast, links = self.beast, self.links
        pop, push = beast.pop, beast.push
        consume = deque(maxlen=0).extend  # runs an iterator to its end, in C
        empty = False
        while self.done < self.pages and not empty:
            batch = self.done // SAVE_EVERY
            links.load(batch)
            stop = min(self.pages, (batch + 1) * SAVE_EVERY)
            stop = min([stop] + [c for c in self.checkpoints if c > self.done])
            domains, payloads, ends = links.domains, links.payloads, links.ends
            naive = self.naive
            end = links.page(self.done)[0]
            for i in range(self.done - batch * SAVE_EVERY, stop - batch * SAVE_EVERY):
                popping = 0.0  # the page's time in pop() (the bench's saves aside)
                if self.pending:
                    self.pending = False
                else:
                    reading = beast.reading
                    started = perf_counter()
                    got = pop()
                    while got is None and len(beast):  # the next slot waits for a re-split
                        self.waits += 1
                        self.resplit_slice()
                        started = perf_counter()
                        got = pop()
                    popping = perf_counter() - started
                    if got is None:
                        empty = True
                        break
                    if beast.reading != reading:
                        self.pending = True
                        self.save("taken")
                        self.pending = False
                started = perf_counter()
                at, end = end, ends[i]
                if naive is None:
                    consume(map(push, domains[at:end], payloads[at:end]))
                else:
                    naive.pop()
                    for domain, payload in zip(domains[at:end], payloads[at:end], strict=True):
                        push(domain, payload)
                        naive.push(domain, payload)
                self.longest_page = max(self.longest_page, popping + perf_counter() - started)
                self.done += 1
                if beast.resplitting:  # a reactor turn between two responses
                    self.resplit_slice()
            if self.done in self.checkpoints or self.done == self.pages or empty:
                self.report()
            if not beast.resplitting:  # (a kill mid-re-split resumes from its start)
                self.save("page")
            if self.done % PROGRESS_EVERY == 0:
                emit(
                    figure="progress",
                    pages=self.done,
                    bytes_per_page=round(self.beast_io() / self.done),
                    j=beast.j,
                    resplits=self.base_resplits + beast.qf_resplits,
                    longest_stall_ms=round(1000 * max(self.longest_page, self.longest_slice), 1),
                    seconds=round(self.seconds()),
                    cpu_seconds=round(self.cpu_seconds()),
                )
        self.finish()

    def resplit_slice(self) -> None:
        """One slice of the re-split in flight (RESPLIT_SLICE records), timed."""
        started = perf_counter()
        self.beast.resplit_step()
        self.longest_slice = max(self.longest_slice, perf_counter() - started)
        self.slices += 1

    def interval_rate(self, scheme: str, io: int) -> float:
        """Disk bytes per crawled page since the scheme's previous checkpoint."""
        pages0, io0 = self.last[scheme]
        self.last[scheme] = [self.done, io]
        return (io - io0) / max(1, self.done - pages0)

    def report(self) -> None:
        alpha = max(1.0, self.done / (BUDGET * self.domains))
        b_rate = self.interval_rate("beast", self.beast_io())
        row: dict[str, object] = {
            "figure": "bytes_per_page",
            "scheme": "beast",
            "pages": self.done,
            "alpha": round(alpha, 2),
            "value": round(b_rate),
            "predicted_eq27": round(eq27(self.b, alpha)),
            "ratio": round(b_rate / eq27(self.b, alpha), 2),
            "predicted_eq27_stored": round(eq27(self.b + RECORD_OVERHEAD, alpha)),
            "ratio_stored": round(b_rate / eq27(self.b + RECORD_OVERHEAD, alpha), 2),
            "j": self.beast.j,
            "resplits": self.base_resplits + self.beast.qf_resplits,
            "seconds": round(self.seconds()),
        }
        self.rows.append(row)
        emit(**row)
        naive = self.naive
        if naive is None:
            return
        n_rate = self.interval_rate("naive", naive.bytes_written + naive.bytes_read)
        predicted = 2 * self.b * (LINKS - 1) * alpha
        row = {
            "figure": "bytes_per_page",
            "scheme": "naive",
            "pages": self.done,
            "alpha": round(alpha, 2),
            "value": round(n_rate),
            "predicted_eq25": round(predicted),
            "ratio": round(n_rate / predicted, 2),
            "over_beast": round(n_rate / b_rate, 1),
        }
        self.rows.append(row)
        emit(**row)
        if n_rate >= 10 * b_rate:
            stopped = {"figure": "naive_stopped", "pages": self.done, "reason": "10x BEAST's I/O"}
            self.rows.append(stopped)
            emit(**stopped)
            self.naive = None
            self.naive_done = True
            shutil.rmtree(self.state_dir / "naive", ignore_errors=True)

    def finish(self) -> dict[str, object]:
        beast = self.beast
        alpha = self.done / (BUDGET * self.domains)
        used, length = disk_usage(self.beast_dir)
        total = self.beast_io()
        limit = 2 * self.b * (2 * LINKS - 1)
        figures: dict[str, object] = {
            "whole_run": {
                "figure": "bytes_per_page_whole_run",
                "pages": self.done,
                "value": round(total / max(1, self.done), 1),
                "limit_eq27": round(limit),
                "ratio": round(total / max(1, self.done) / limit, 3),
                "limit_eq27_stored": round(2 * (self.b + RECORD_OVERHEAD) * (2 * LINKS - 1)),
                "bytes_written": self.base_written + beast.bytes_written,
                "bytes_read": self.base_read + beast.bytes_read,
            },
            "state_disk": {
                "figure": "state_bytes_per_page",
                "du_bytes": used,
                "du_per_page": round(used / max(1, self.done), 1),
                "file_bytes": length,
                "queued_records": len(beast),
                "record_bytes": self.b + RECORD_OVERHEAD,
                "peak_file_bytes": self.peak_length,
            },
            "queues_j": {
                "figure": "queues_j",
                "value": beast.j,
                "predicted_eq31": 2 ** math.ceil(math.log2(alpha + 1)) - 1,
                "alpha": round(alpha, 1),
                "beast_alpha": round(beast.taken / (BUDGET * max(1, beast.domains.estimate())), 1),
                "domains_estimate": beast.domains.estimate(),
                "domains": self.domains,
                "qf_resplits": self.base_resplits + beast.qf_resplits,
                "max_queues": MAX_QUEUES,
            },
            "stalls": {
                "figure": "reactor_stalls",
                "longest_page_ms": round(self.longest_page * 1000, 2),
                "longest_resplit_slice_ms": round(self.longest_slice * 1000, 2),
                "resplit_slices": self.slices,
                "pops_waiting_for_a_resplit": self.waits,
            },
            "run": {
                "figure": "run",
                "seconds": round(self.seconds()),
                "cpu_seconds": round(self.cpu_seconds()),
                "sessions": self.sessions,
                "slot_reads": self.slot_reads,
                "safe_points": self.saves,
            },
        }
        if self.sessions > 1:  # this session's log has the rows of the earlier ones too
            for row in self.rows:
                emit(**row, earlier_session=True)
        for figure in figures.values():
            emit(**figure)  # type: ignore[arg-type]
        beast.close()
        self.deleter.shutdown()
        self.results = {"params": self.params, "rows": self.rows, **figures}
        return self.results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAGES:,} pages")
    parser.add_argument("--pages", type=int, default=PAGES, help="N (default %(default)s)")
    parser.add_argument(
        "--url-bytes", type=int, default=URL_BYTES, help="b, >= 16 (default %(default)s)"
    )
    parser.add_argument("--no-naive", action="store_true", help="BEAST only (resumable)")
    parser.add_argument(
        "--at-once", action="store_true", help="re-split inside pop(), not in slices (compare)"
    )
    parser.add_argument(
        "--state", type=Path, default=DEFAULT_STATE, help="state directory (default %(default)s)"
    )
    parser.add_argument("--results", type=Path, help="JSON file (default bench/results/...)")
    parser.add_argument("--keep-state", action="store_true", help="keep the queues at the end")
    args = parser.parse_args()
    if args.quick:
        args.pages = QUICK_PAGES
    if args.url_bytes < 16:
        parser.error("--url-bytes: at least 16 (an 8-byte domain and an 8-byte id)")
    args.state.mkdir(parents=True, exist_ok=True)
    lock = open(args.state / "lock", "w")  # noqa: SIM115 -- held while the run lasts
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"{args.state} is in use by another run") from None
    sim = Simulation(args)
    sim.run()
    results = args.results or ROOT / "bench" / "results" / (
        f"beast-N{args.pages}-b{args.url_bytes}{'' if args.no_naive else '-naive'}.json"
    )
    results.parent.mkdir(parents=True, exist_ok=True)
    replace_json(results, sim.results)
    emit(figure="results", path=str(results))
    if not args.keep_state:
        for entry in args.state.iterdir():  # the figures are saved: free the shared disk
            if entry.is_dir():
                shutil.rmtree(entry)
            elif not entry.name.endswith(".log"):
                entry.unlink()


if __name__ == "__main__":
    main()
