"""DRUM benchmark (issue 3): DRUM against naive per-key LevelDB and a Python set.

    python bench/drum.py            # the full run: 100 M stored keys (about 15 minutes)
    python bench/drum.py --quick    # a smoke run at 2 M keys

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
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import memory  # noqa: E402

from irlscrapy.dupefilters.drum import CHECK_UPDATE, DRUM  # noqa: E402
from irlscrapy.dupefilters.sizing import BUCKET_BUFFER, DrumSizes  # noqa: E402
from irlscrapy.dupefilters.urlkey import url_keys  # noqa: E402

MEMORY_CAP = 1 << 30  # the child cgroup's limit, page cache included
DRUM_MEMORY = 64 << 20  # IRL_DRUM_MEMORY for the DRUM variants
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


def io_bytes() -> int:
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["read_bytes"]) + int(fields["write_bytes"])


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssWatch:
    """Peaks of anonymous and file-backed RSS (/proc/self/status), sampled every 20 ms.

    LevelDB reads its table files through mmap, so chunk pages a merge has read show up
    in RSS as file-backed pages: page cache the kernel reclaims under the cgroup's cap,
    not memory the process holds. Both are reported beside the total.
    """

    def __init__(self) -> None:
        self.anon = self.file = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        now = memory()
        self.anon = max(self.anon, now["rss_anon"])
        self.file = max(self.file, now["rss_file"] + now["rss_shmem"])

    def figures(self) -> dict[str, int]:
        return {
            "peak_anon_rss_mb": round(self.anon / 2**20),
            "peak_file_rss_mb": round(self.file / 2**20),
        }


def open_drum(path: Path) -> DRUM:
    sizes = DrumSizes.from_memory(DRUM_MEMORY)
    drum = DRUM(
        path, buckets=sizes.buckets, bucket_bytes=sizes.bucket_bytes, spill_bytes=sizes.spill_bytes
    )
    drum.open()
    return drum


# -- variants (each runs in its own capped child process) ---------------------------------
def run_drum_keys(work: Path, scale: dict[str, int]) -> None:
    drum = open_drum(work / "drum")
    stream = Stream(np.random.default_rng(SEED))
    batch = LINKS_PER_PAGE * PAGES_PER_SUBMIT
    started = time.perf_counter()
    while drum.stored_keys + drum.pending < scale["warm"]:
        drum.submit(mix64(stream.unique(batch)), CHECK_UPDATE)
        if drum.should_merge():
            drum.merge()
            drum.ack_merged()
    drum.merge()
    drum.ack_merged()
    emit(
        variant="drum-keys",
        figure="warm_keys_per_s",
        value=round(drum.stored_keys / (time.perf_counter() - started)),
        stored_keys=drum.stored_keys,
    )
    span_start, span_keys, merges = time.perf_counter(), 0, 0
    io_start = io_bytes()
    rss = RssWatch()
    while drum.stored_keys < scale["target"]:
        drum.submit(mix64(stream.mixed(batch)), CHECK_UPDATE)
        span_keys += batch
        if drum.should_merge():
            drum.merge()
            drum.ack_merged()
            merges += 1
    rss.stop()
    seconds = time.perf_counter() - span_start
    emit(
        variant="drum-keys",
        figure="keys_per_s",
        value=round(span_keys / seconds),
        span=f"{scale['warm']}..{drum.stored_keys} stored keys",
        merges_in_span=merges,
        tuples=span_keys,
        seconds=round(seconds, 1),
        io_bytes_per_key=round((io_bytes() - io_start) / span_keys, 2),
        peak_rss_mb=round(peak_rss_mb()),
        **rss.figures(),
    )
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
    drum = open_drum(work / "urls")
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
    sizes = DrumSizes.from_memory(DRUM_MEMORY)
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


def run_capped(variant: str, work: Path, quick: bool) -> list[dict[str, Any]]:
    group = own_memory_cgroup() / f"irlscrapy-bench-{os.getpid()}-{variant}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(MEMORY_CAP))
        cmd = [sys.executable, __file__, "--child", variant, "--work", str(work)]
        if quick:
            cmd.append("--quick")
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            text=True,
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", choices=sorted(VARIANTS))
    parser.add_argument("--work", type=Path)
    parser.add_argument("--only", choices=sorted(VARIANTS), action="append")
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    if args.child:
        VARIANTS[args.child](args.work, scale)
        return
    work = Path(tempfile.mkdtemp(prefix="irlscrapy-drum-bench-", dir=ROOT / "bench"))
    try:
        results: dict[str, list[dict[str, Any]]] = {}
        for variant in args.only or ["drum-keys", "naive", "set", "drum-urls"]:
            results[variant] = run_capped(variant, work, args.quick)
            shutil.rmtree(
                work / ("urls" if variant == "drum-urls" else variant), ignore_errors=True
            )
        summarize(results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summarize(results: dict[str, list[dict[str, Any]]]) -> None:
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
        drum_memory=DRUM_MEMORY,
        sizes=DrumSizes.from_memory(DRUM_MEMORY)._asdict(),
    )


if __name__ == "__main__":
    main()
