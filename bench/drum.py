"""DRUM benchmark (issue 3): DRUM against naive per-key LevelDB and a Python set.

    python bench/drum.py            # the full run: 100 M stored keys (about 15 minutes)
    python bench/drum.py --quick    # a smoke run at 2 M keys
    python bench/drum.py --keys 1000000000   # drum-keys alone at 10^9 keys (issue 22)

Every variant runs in a child process placed in a child memory cgroup (cgroup v1) with
``memory.limit_in_bytes`` = MEMORY_CAP, so the page cache cannot hide disk behaviour.
The stream is shaped like IRLbot's: pages of L = 59 links, uniqueness p = 0.11 once
warm. Warm-up loads unique keys up to WARM_KEYS; the measured span then runs with
p = 0.11 until the store holds TARGET_KEYS, every merge in the span included.

Variants (one JSON line per figure):
  drum-keys  pre-hashed 64-bit keys, check+update, keys/s over the span, peak RSS
  naive      plyvel get-then-put per key on a LevelDB holding TARGET_KEYS keys (bloom
             filter on), keys/s over NAIVE_SAMPLE stream keys
  set        RFPDupeFilter's structure (a set of 20-byte fingerprints): bytes per key
             measured at SET_KEYS, RAM extrapolated to TARGET_KEYS, keys/s
  drum-urls  URL strings (canonicalization and hashing included) with the URL as aux
             data, results read back and acknowledged; URLs/s, and alpha = disk bytes
             read+written (/proc/self/io) per URL byte, beside Theorem 2's prediction

``--keys N`` runs drum-keys alone with TARGET_KEYS = N and WARM_KEYS = 0.9 N, and
IRL_URLSEEN_MEMORY = KEYS_DRUM_MEMORY unless ``--drum-memory`` says otherwise. Besides the
rate and RSS it reports disk bytes per stored key, disk bytes read and written per key
in the span, and alpha beside Theorem 2 with b = H = 8 (a key is its own text). The run
resumes from its state directory (``--state``; its files: ``bench/drumstate.py``):

- The warm-up resumes where it was killed. DRUM is its own checkpoint: a batch is
  durable once ``submit`` returns and a merge cut short resumes at its marker, so a
  reopened DRUM holds every key submitted before the kill. The resumed run merges them
  first; the stream (key i is mix64(i), all unique in the warm-up) then continues at
  the stored count. progress.json records that count after each merge, which a resumed
  run checks, and the seconds run (a process stopped by SIGSTOP does not run) at each
  progress line: a kill loses a minute at most.
- Once the warm-up is merged, its DRUM directory is closed and kept as span-start/ (hard
  links: no copy of the data). The span is measured in one go, on a fresh copy of it,
  with the stream's generator seeded as in the full run: a span killed part-way is
  measured again from 0.9 N, on the same tuples. ``--warm-only`` stops before the span.
  A span may be measured at another ``--drum-memory`` than the warm-up's if it gives
  DRUM as many buckets (128 from 128 to 255 MiB): the stored keys are the same.
- Once a span's figures are in progress.json, the DRUM directories are deleted, unless
  ``--keep-state`` keeps them to measure the span again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import disk_usage, memory  # noqa: E402
from drumstate import Progress, Ticker, snapshot  # noqa: E402

from irlscrapy.dupefilters.urlkey import url_keys  # noqa: E402
from irlscrapy.exceptions import DirectoryLocked  # noqa: E402
from irlscrapy.storage.dirlock import DirectoryLock  # noqa: E402
from irlscrapy.storage.drum import CHECK_UPDATE, DRUM  # noqa: E402
from irlscrapy.storage.drumsizing import BUCKET_BUFFER, DrumSizes  # noqa: E402

MEMORY_CAP = 1 << 30  # the child cgroup's limit, page cache included
DRUM_MEMORY = 64 << 20  # IRL_URLSEEN_MEMORY for the DRUM variants
#: IRL_URLSEEN_MEMORY for --keys: 128 buckets of 24 MiB, a merge per 201 M tuples. A merge
#: rewrites the whole cache (8 GB at 10^9 keys), so the rate needs merges this rare; its
#: results file (a byte per tuple, mapped) and the bucket in RAM keep RSS under 512 MB.
KEYS_DRUM_MEMORY = 192 << 20
KEY_BYTES = 8  # H, and b for drum-keys: a key is its own text
WARM_SHARE = 0.9  # --keys N warms up to this share of N
DEFAULT_STATE = ROOT.parent / "drum-state"  # --keys: outside the checkout
LINKS_PER_PAGE = 59  # IRLbot's l
UNIQUENESS = 0.11  # IRLbot's p once warm
PAGES_PER_SUBMIT = 100
FULL = {
    "warm": 90_000_000,
    "target": 100_000_000,
    "naive_sample": 100_000,
    "set_keys": 5_000_000,
    "url_warm": 10_000_000,
    "url_stream": 20_000_000,
}
QUICK = {
    "warm": 1_800_000,
    "target": 2_000_000,
    "naive_sample": 30_000,
    "set_keys": 500_000,
    "url_warm": 300_000,
    "url_stream": 600_000,
}
SEED = 20070609


def emit(**figure: Any) -> None:
    print(json.dumps({"bench": "drum", **figure}), flush=True)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: key i of the stream is mix64(i)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


class Stream:
    """Key numbers: new ones with probability p, else a uniformly chosen earlier one."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.fresh = 0

    def unique(self, n: int) -> np.ndarray:
        out = np.arange(self.fresh, self.fresh + n, dtype=np.uint64)
        self.fresh += n
        return out

    def mixed(self, n: int) -> np.ndarray:
        new = self.rng.random(n) < UNIQUENESS
        out = self.rng.integers(0, max(self.fresh, 1), n).astype(np.uint64)
        out[new] = self.unique(int(new.sum()))
        return out


def io_counters() -> tuple[int, int]:
    """Bytes this process (LevelDB's threads included) has read from and written to
    storage (/proc/self/io)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["read_bytes"]), int(fields["write_bytes"])


def io_bytes() -> int:
    return sum(io_counters())


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssWatch:
    """Peaks of anonymous and file-backed RSS (/proc/self/status), sampled every 20 ms.

    LevelDB reads its table files through mmap, so chunk pages a merge has read show up
    in RSS as file-backed pages: page cache the kernel reclaims under the cgroup's cap,
    not memory the process holds. Both are reported beside the total.

    It also adds up the gaps of STALL_S or more between its samples: time the process
    did not run at all (stopped by SIGSTOP, say), which a measured rate must not hide.
    """

    STALL_S = 2.0

    def __init__(self) -> None:
        self.anon = self.file = 0
        self.stalled = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(0.02):
            now = time.monotonic()
            if now - last >= self.STALL_S:
                self.stalled += now - last
            last = now
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        now = memory()
        self.anon = max(self.anon, now["rss_anon"])
        self.file = max(self.file, now["rss_file"] + now["rss_shmem"])

    def figures(self) -> dict[str, float]:
        return {
            "peak_anon_rss_mb": round(self.anon / 2**20),
            "peak_file_rss_mb": round(self.file / 2**20),
            "stalled_s": round(self.stalled, 1),
        }


def open_drum(path: Path, drum_memory: int) -> DRUM:
    sizes = DrumSizes.from_memory(drum_memory)
    drum = DRUM(
        path, buckets=sizes.buckets, bucket_bytes=sizes.bucket_bytes, spill_bytes=sizes.spill_bytes
    )
    drum.open()
    return drum


# -- variants (each runs in its own capped child process) ---------------------------------
def merge(drum: DRUM) -> int:
    """Merge and acknowledge all that is pending; a line on stderr says how long it took.
    Returns the tuples merged."""
    started, before = time.perf_counter(), drum.stored_keys
    tuples = drum.merge()
    drum.ack_merged()
    print(
        f"{time.strftime('%H:%M:%S')} merged {tuples:,} tuples into {before:,} stored keys "
        f"in {time.perf_counter() - started:.1f} s: {drum.stored_keys:,} stored",
        file=sys.stderr,
        flush=True,
    )
    return tuples


def load_unique(
    drum: DRUM,
    stream: Stream,
    until: int,
    on_merge: Callable[[], None] = lambda: None,
    on_tick: Callable[[], None] = lambda: None,
) -> None:
    """Submit fresh keys until ``until`` keys are stored or pending, merging when DRUM
    asks and once more at the end; ``on_merge`` after each merge, ``on_tick`` (from
    another thread) after each progress line."""
    batch = LINKS_PER_PAGE * PAGES_PER_SUBMIT
    with Ticker(
        "drum-keys warm-up (stream keys)",
        until,
        lambda: (stream.fresh, f"{drum.stored_keys:,} stored"),
        on_tick=on_tick,
    ):
        while drum.stored_keys + drum.pending < until:
            drum.submit(mix64(stream.unique(batch)), CHECK_UPDATE)
            if drum.should_merge():
                merge(drum)
                on_merge()
        merge(drum)
        on_merge()


class Span(NamedTuple):
    """What a measured span did."""

    stored_before: int
    stored_after: int
    tuples: int
    seconds: float
    merges: int
    read_bytes: int
    written_bytes: int
    peak_rss_mb: int
    rss: dict[str, float]  # RssWatch.figures()

    def figures(self) -> dict[str, Any]:
        """The keys_per_s line's fields."""
        return {
            "value": round(self.tuples / self.seconds),
            "span": f"{self.stored_before}..{self.stored_after} stored keys",
            "merges_in_span": self.merges,
            "tuples": self.tuples,
            "seconds": round(self.seconds, 1),
            "io_bytes_per_key": round((self.read_bytes + self.written_bytes) / self.tuples, 2),
            "peak_rss_mb": self.peak_rss_mb,
            **self.rss,
        }


def measure_span(drum: DRUM, stream: Stream, target: int) -> Span:
    """Check+update the p = 0.11 stream until a merge leaves ``target`` keys stored."""
    batch = LINKS_PER_PAGE * PAGES_PER_SUBMIT
    stored_before, span_keys, merges = drum.stored_keys, 0, 0
    expected = round((target - stored_before) / UNIQUENESS)
    read_start, written_start = io_counters()
    rss = RssWatch()
    started = time.perf_counter()
    with Ticker(
        "drum-keys span (tuples)",
        expected,
        lambda: (span_keys, f"{drum.stored_keys:,} of {target:,} keys stored"),
    ):
        while drum.stored_keys < target:
            drum.submit(mix64(stream.mixed(batch)), CHECK_UPDATE)
            span_keys += batch
            if drum.should_merge():
                merge(drum)
                merges += 1
    seconds = time.perf_counter() - started
    rss.stop()
    read_end, written_end = io_counters()
    return Span(
        stored_before,
        drum.stored_keys,
        span_keys,
        seconds,
        merges,
        read_end - read_start,
        written_end - written_start,
        round(peak_rss_mb()),
        rss.figures(),
    )


def run_drum_keys(work: Path, scale: dict[str, int]) -> None:
    drum = open_drum(work / "drum", scale["drum_memory"])
    stream = Stream(np.random.default_rng(SEED))
    started = time.perf_counter()
    load_unique(drum, stream, scale["warm"])
    emit(
        variant="drum-keys",
        figure="warm_keys_per_s",
        value=round(drum.stored_keys / (time.perf_counter() - started)),
        stored_keys=drum.stored_keys,
    )
    span = measure_span(drum, stream, scale["target"])
    emit(variant="drum-keys", figure="keys_per_s", **span.figures())
    drum.close()


def run_naive(work: Path, scale: dict[str, int]) -> None:
    import plyvel

    db = plyvel.DB(
        str(work / "naive"), create_if_missing=True, bloom_filter_bits=10, compression=None
    )
    stream = Stream(np.random.default_rng(SEED))
    started = time.perf_counter()
    step = 1_000_000
    while stream.fresh < scale["target"]:
        keys = np.sort(mix64(stream.unique(min(step, scale["target"] - stream.fresh))))
        raw = keys.astype(">u8").tobytes()
        with db.write_batch() as wb:
            for at in range(0, len(raw), 8):
                wb.put(raw[at : at + 8], b"")
    emit(variant="naive", figure="load_seconds", value=round(time.perf_counter() - started))
    sample = mix64(stream.mixed(scale["naive_sample"]))
    started = time.perf_counter()
    unique = 0
    for key in sample.tolist():
        raw = key.to_bytes(8, "big")
        if db.get(raw) is None:
            db.put(raw, b"")
            unique += 1
    seconds = time.perf_counter() - started
    emit(
        variant="naive",
        figure="keys_per_s",
        value=round(len(sample) / seconds),
        stored_keys=stream.fresh,
        sample=len(sample),
        unique_share=round(unique / len(sample), 3),
        peak_rss_mb=round(peak_rss_mb()),
    )
    db.close()


def run_set(work: Path, scale: dict[str, int]) -> None:
    import hashlib

    before = peak_rss_mb()
    seen: set[bytes] = set()
    stream = Stream(np.random.default_rng(SEED))
    started = time.perf_counter()
    for key in stream.unique(scale["set_keys"]).tolist():
        seen.add(hashlib.sha1(key.to_bytes(8, "little")).digest())
    per_key = (peak_rss_mb() - before) * (1 << 20) / len(seen)
    sample = stream.mixed(scale["naive_sample"] * 10).tolist()
    started = time.perf_counter()
    for key in sample:
        fp = hashlib.sha1(key.to_bytes(8, "little")).digest()
        if fp not in seen:
            seen.add(fp)
    seconds = time.perf_counter() - started
    emit(variant="set", figure="bytes_per_key", value=round(per_key, 1), measured_keys=len(seen))
    emit(
        variant="set",
        figure="extrapolated_rss_mb_at_target",
        value=round(per_key * scale["target"] / (1 << 20)),
        target_keys=scale["target"],
    )
    emit(variant="set", figure="keys_per_s", value=round(len(sample) / seconds))


def synthetic_urls(numbers: np.ndarray) -> list[str]:
    """IRLbot-like URLs (about 70 bytes) named by key number."""
    out = []
    for n in numbers.tolist():
        host = n % 1_000_003
        out.append(f"http://www.site{host}.example.com/archive/section{n % 97}/article-{n}.html")
    return out


def run_drum_urls(work: Path, scale: dict[str, int]) -> None:
    drum = open_drum(work / "urls", scale["drum_memory"])
    stream = Stream(np.random.default_rng(SEED + 1))
    batch = LINKS_PER_PAGE * PAGES_PER_SUBMIT

    def feed(numbers: np.ndarray) -> int:
        urls = synthetic_urls(numbers)
        drum.submit(url_keys(urls), CHECK_UPDATE, aux=[u.encode() for u in urls])
        if drum.should_merge():
            drain()
        return sum(map(len, urls))

    def drain() -> None:
        drum.merge()
        for result in drum.results():
            drum.ack(result.seq)

    while stream.fresh < scale["url_warm"]:
        feed(stream.unique(batch))
    drain()
    stored_before = drum.stored_keys
    io_start, started, url_bytes, processed = io_bytes(), time.perf_counter(), 0, 0
    while processed < scale["url_stream"]:
        url_bytes += feed(stream.mixed(batch))
        processed += batch
    drain()
    seconds = time.perf_counter() - started
    measured = (io_bytes() - io_start) / url_bytes
    sizes = DrumSizes.from_memory(scale["drum_memory"])
    b = url_bytes / processed
    emit(
        variant="drum-urls",
        figure="urls_per_s",
        value=round(processed / seconds),
        seconds=round(seconds, 1),
        urls=processed,
        mean_url_bytes=round(b, 1),
        peak_rss_mb=round(peak_rss_mb()),
    )
    emit(
        variant="drum-urls",
        figure="alpha",
        value=round(measured, 3),
        predicted=round(theorem2_alpha(stored_before, processed, b, sizes), 3),
        stored_before=stored_before,
        stored_after=drum.stored_keys,
    )
    drum.close()


def theorem2_alpha(u: int, n: int, b: float, sizes: DrumSizes, p: float = UNIQUENESS) -> float:
    """Eq. (14): alpha = (2UH + pHn) H / (b k r) + 2 + p + 2H/b, with H = 8-byte hashes and
    k r the hash bytes the buckets hold per merge (records here are 16 bytes per hash)."""
    h = 8
    kr = sizes.buckets * sizes.bucket_bytes * h / 16
    return (2 * u * h + p * h * n) * h / (b * kr) + 2 + p + 2 * h / b


# -- --keys N: drum-keys at any size, resumable; each phase is a capped child -------------
def run_keys_warm_up(state: Path, drum_memory: int) -> None:
    """Load unique keys to 0.9 N into state/drum, continuing what an earlier run left."""
    last, last_stalled = time.perf_counter(), 0.0
    watch = RssWatch()  # for the seconds the process was stopped, which are not counted
    progress = Progress.load(state / "progress.json")
    drum = open_drum(state / "drum", drum_memory)
    progress.save(warm_runs=progress["warm_runs"] + 1)
    # A run killed mid-merge leaves the merged part of a generation counted both stored
    # and pending; once all is merged, the stored keys are exactly the stream so far.
    merge(drum)
    stream = Stream(np.random.default_rng(SEED))
    stream.fresh = drum.stored_keys
    if stream.fresh < progress["submitted"]:
        raise SystemExit(
            f"{state / 'drum'} holds {stream.fresh:,} keys, but {progress.path} recorded "
            f"{progress['submitted']:,} submitted: the state is damaged; remove {state}"
        )
    assert stream.fresh % (LINKS_PER_PAGE * PAGES_PER_SUBMIT) == 0, "whole warm-up batches"
    lock = threading.Lock()

    def record(merged: bool = True) -> None:
        """Count the seconds run since the last record; after a merge, the keys too."""
        nonlocal last, last_stalled
        with lock:
            now, stalled = time.perf_counter(), watch.stalled
            ran = now - last - (stalled - last_stalled)
            changes: dict[str, Any] = {"warm_seconds": progress["warm_seconds"] + ran}
            if merged:
                changes.update(submitted=stream.fresh, stored_keys=drum.stored_keys)
            progress.save(**changes)
            last, last_stalled = now, stalled

    record()
    load_unique(drum, stream, progress["warm"], record, lambda: record(merged=False))
    watch.stop()
    drum.close()
    emit_warm_up(progress, disk_usage(state / "drum")[0])


def emit_warm_up(progress: Progress, drum_bytes: int) -> None:
    emit(
        variant="drum-keys",
        figure="warm_keys_per_s",
        value=round(progress["stored_keys"] / progress["warm_seconds"]),
        stored_keys=progress["stored_keys"],
        seconds=round(progress["warm_seconds"]),
        runs=progress["warm_runs"],
        drum_dir_bytes=drum_bytes,
    )


def run_keys_span(state: Path, drum_memory: int) -> None:
    """Measure the span from 0.9 N to N on state/drum, a fresh copy of span-start/."""
    progress = Progress.load(state / "progress.json")
    emit_warm_up(progress, disk_usage(state / "drum")[0])
    drum = open_drum(state / "drum", drum_memory)
    assert drum.stored_keys == progress["submitted"] and not drum.pending, "the warm-up's"
    # The generation open when the warm-up closed waits, empty, for a merge: merged now,
    # it costs nothing; merged after the span's first batch, a rewrite of the whole cache.
    drum.merge()
    drum.ack_merged()
    stream = Stream(np.random.default_rng(SEED))
    stream.fresh = progress["submitted"]
    load_before = os.getloadavg()
    span = measure_span(drum, stream, progress["keys"])
    load_after = os.getloadavg()
    drum.close()
    emit(
        variant="drum-keys",
        figure="keys_per_s",
        **span.figures(),
        bar=">= 1,000,000 keys/s, peak RSS <= 512 MB",
        drum_memory=drum_memory,
        io_read_bytes_per_key=round(span.read_bytes / span.tuples, 2),
        io_written_bytes_per_key=round(span.written_bytes / span.tuples, 2),
        loadavg_before=[round(x, 2) for x in load_before],
        loadavg_after=[round(x, 2) for x in load_after],
    )
    measured = (span.read_bytes + span.written_bytes) / (span.tuples * KEY_BYTES)
    predicted = theorem2_alpha(
        span.stored_before, span.tuples, KEY_BYTES, DrumSizes.from_memory(drum_memory)
    )
    emit(
        variant="drum-keys",
        figure="alpha",
        value=round(measured, 3),
        predicted=round(predicted, 3),
        ratio=round(measured / predicted, 2),
        bar="within 2x",
        b=KEY_BYTES,
        stored_before=span.stored_before,
        tuples=span.tuples,
    )
    drum_bytes = disk_usage(state / "drum")[0]
    emit(
        variant="drum-keys",
        figure="disk_bytes_per_key",
        value=round(drum_bytes / span.stored_after, 2),
        drum_dir_bytes=drum_bytes,
        stored_keys=span.stored_after,
        state_dir_bytes=disk_usage(state)[0],
    )


KEYS_PHASES = {"warm-up": run_keys_warm_up, "span": run_keys_span}
VARIANTS = {
    "drum-keys": run_drum_keys,
    "naive": run_naive,
    "set": run_set,
    "drum-urls": run_drum_urls,
}


# -- the parent: a capped cgroup per child ------------------------------------------------
def own_memory_cgroup() -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/")
    raise SystemExit("no cgroup v1 memory controller: this benchmark needs one for its cap")


def remove_stale_groups(parent: Path) -> None:
    """Remove the child groups that runs killed by kill -9 left (their pid is gone)."""
    for group in parent.glob("irlscrapy-bench-*-*"):
        pid = group.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):  # a group with processes in it stays
                group.rmdir()


def run_capped(
    variant: str, child_args: list[str], pass_fds: tuple[int, ...] = ()
) -> list[dict[str, Any]]:
    remove_stale_groups(own_memory_cgroup())
    group = own_memory_cgroup() / f"irlscrapy-bench-{os.getpid()}-{variant}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(MEMORY_CAP))
        cmd = [sys.executable, __file__, "--child", variant, *child_args]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            text=True,
            pass_fds=pass_fds,
            preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())),
        )
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(json.loads(line))
        if proc.wait():
            raise SystemExit(f"{variant} failed with exit code {proc.returncode}")
        peak = int((group / "memory.max_usage_in_bytes").read_text())
        figure = {
            "bench": "drum",
            "variant": variant,
            "figure": "cgroup_peak_mb",
            "value": round(peak / 2**20),
            "cap_mb": MEMORY_CAP >> 20,
        }
        print(json.dumps(figure), flush=True)
        return [*lines, figure]
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def run_keys(state: Path, keys: int, drum_memory: int | None, warm_only: bool, keep: bool) -> None:
    """A --keys run: the warm-up (resumed), span-start/, the span, its record.

    The warm-up runs at the IRL_URLSEEN_MEMORY the run was started with; a span may be
    measured at another one that gives DRUM the same number of buckets."""
    state.mkdir(parents=True, exist_ok=True)
    lock = DirectoryLock(state, "the DRUM benchmark's state")
    try:
        lock.acquire()
    except DirectoryLocked as exc:
        raise SystemExit(str(exc)) from None
    # the children inherit the lock: a second run cannot replace drum/ under a child
    # that a kill of its parent alone left running
    lock_fds = (lock.fileno(),)
    path = state / "progress.json"
    if not path.exists():
        Progress(path, {}).save(
            keys=keys,
            warm=round(keys * WARM_SHARE),
            drum_memory=KEYS_DRUM_MEMORY if drum_memory is None else drum_memory,
            seed=SEED,
            phase="warm-up",
            submitted=0,
            stored_keys=0,
            warm_seconds=0.0,
            warm_runs=0,
            spans=[],
        )
    progress = Progress.load(path)
    warm_memory = progress["drum_memory"]
    span_memory = warm_memory if drum_memory is None else drum_memory
    buckets = DrumSizes.from_memory(warm_memory).buckets
    if (progress["keys"], progress["seed"]) != (keys, SEED) or (
        span_memory != warm_memory
        and (
            progress["phase"] == "warm-up" or DrumSizes.from_memory(span_memory).buckets != buckets
        )
    ):
        raise SystemExit(
            f"{state} holds a run of --keys {progress['keys']} (seed {progress['seed']}) "
            f"warmed up at --drum-memory {warm_memory}: give those, or another --state "
            f"(once warm, a span may use any memory that gives {buckets} buckets)"
        )
    drum, start = state / "drum", state / "span-start"
    child_args = ["--state", str(state)]
    if progress["phase"] == "warm-up":
        run_capped("warm-up", [*child_args, "--drum-memory", str(warm_memory)], lock_fds)
        snapshot(drum, start)
        progress = Progress.load(path)
        progress.save(phase="span")
    if progress["phase"] == "done":
        for line in progress["spans"][-1]["figures"]:
            print(json.dumps(line), flush=True)
        print(f"(recorded earlier; remove {path} to run again)", file=sys.stderr)
    elif warm_only:
        print(
            f"warm-up complete; the span: {sys.argv[0]} --keys {keys} --state {state}",
            file=sys.stderr,
        )
    else:
        snapshot(start, drum)
        figures = run_capped("span", [*child_args, "--drum-memory", str(span_memory)], lock_fds)
        progress = Progress.load(path)
        finished = time.strftime("%Y-%m-%d %H:%M:%S")
        spans = [*progress["spans"], {"finished": finished, "figures": figures}]
        progress.save(spans=spans, phase="span" if keep else "done")
    if progress["phase"] == "done":  # figures recorded: the 20 GB can go
        shutil.rmtree(drum, ignore_errors=True)
        shutil.rmtree(start, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", choices=sorted(VARIANTS.keys() | KEYS_PHASES.keys()))
    parser.add_argument("--work", type=Path)
    parser.add_argument("--only", choices=sorted(VARIANTS), action="append")
    parser.add_argument("--keys", type=int, help="drum-keys alone, to this many stored keys")
    parser.add_argument(
        "--state", type=Path, default=DEFAULT_STATE, help="--keys: the run's state directory"
    )
    parser.add_argument(
        "--drum-memory",
        type=int,
        help=f"IRL_URLSEEN_MEMORY, bytes (default {DRUM_MEMORY}; --keys: {KEYS_DRUM_MEMORY})",
    )
    parser.add_argument("--warm-only", action="store_true", help="--keys: stop before the span")
    parser.add_argument(
        "--keep-state", action="store_true", help="--keys: keep the DRUM after the span"
    )
    args = parser.parse_args()
    if args.child in KEYS_PHASES:
        KEYS_PHASES[args.child](args.state, args.drum_memory)
        return
    drum_memory = DRUM_MEMORY if args.drum_memory is None else args.drum_memory
    scale = {**(QUICK if args.quick else FULL), "drum_memory": drum_memory}
    if args.child:
        VARIANTS[args.child](args.work, scale)
        return
    if args.keys is not None:
        if args.quick or args.only:
            parser.error("--keys runs drum-keys alone, at its own size")
        run_keys(args.state, args.keys, args.drum_memory, args.warm_only, args.keep_state)
        return
    if args.warm_only or args.keep_state:
        parser.error("--warm-only and --keep-state go with --keys")
    work = Path(tempfile.mkdtemp(prefix="irlscrapy-drum-bench-", dir=ROOT / "bench"))
    child_args = ["--work", str(work), "--drum-memory", str(drum_memory)]
    try:
        results: dict[str, list[dict[str, Any]]] = {}
        for variant in args.only or ["drum-keys", "naive", "set", "drum-urls"]:
            results[variant] = run_capped(
                variant, [*child_args, *(["--quick"] if args.quick else [])]
            )
            shutil.rmtree(
                work / ("urls" if variant == "drum-urls" else variant), ignore_errors=True
            )
        summarize(results, drum_memory)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summarize(results: dict[str, list[dict[str, Any]]], drum_memory: int) -> None:
    def figure(variant: str, name: str) -> float | None:
        for line in results.get(variant, []):
            if line.get("figure") == name:
                return float(line["value"])
        return None

    drum, naive = figure("drum-keys", "keys_per_s"), figure("naive", "keys_per_s")
    if drum and naive:
        emit(figure="drum_over_naive", value=round(drum / naive, 1), bar=">= 10")
    setrate = figure("set", "keys_per_s")
    if drum and setrate:
        emit(figure="drum_over_set", value=round(drum / setrate, 2))
    for line in results.get("drum-urls", []):
        if line.get("figure") == "alpha":
            emit(
                figure="alpha_over_predicted",
                value=round(line["value"] / line["predicted"], 2),
                bar="within 2x",
            )
    emit(
        figure="bucket_buffer_M",
        value=BUCKET_BUFFER,
        drum_memory=drum_memory,
        sizes=DrumSizes.from_memory(drum_memory)._asdict(),
    )


if __name__ == "__main__":
    main()
