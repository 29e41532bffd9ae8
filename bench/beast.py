"""BEAST simulation (issue 4, item 1): disk bytes per crawled page, BEAST against the
naive two-queue scheme, on real queue files and no network.

    python bench/beast.py             # N = 10^7 pages
    python bench/beast.py --quick     # N = 10^6 pages

The crawler is simulated: each crawled page pops one URL and pushes L unique new URLs
(L = 6.5 on average, IRLbot's), of b = 110 bytes, whose domains are drawn by Zipf
popularity over V domains with budget B = 10 each (E[B] = 10). V is scaled so that
alpha_N = N / (E[B] V) reaches ALPHA_END. At checkpoints the script prints, for each
scheme, the disk bytes (written + read, record framing included) per crawled page
since the previous checkpoint, beside the prediction at that alpha:

    BEAST (Theorem 7, eq. 27):  2 b [2 alpha / (1 + alpha) (L - 1) + 1]
    naive (Theorem 6, eq. 25):  2 b (L - 1) alpha

The naive scheme stops once it does 10x BEAST's I/O per page. At the end, BEAST's j
is printed beside eq. 31, j = 2^ceil(log2(alpha + 1)) - 1. Eq. 31 counts the
2^(i+1) - 1 queues emptied in the last stage; BEAST's j is its window, 2^i slots after i
re-splits, so the two agree when j = (eq. 31 + 1) / 2.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from irlscrapy.recordfile import RECORD_OVERHEAD, RecordWriter, scan  # noqa: E402
from irlscrapy.scheduler.frontier.beast import Beast  # noqa: E402

PAGES, QUICK_PAGES = 10_000_000, 1_000_000
ALPHA_END = 32
LINKS = 6.5  # unique new URLs per crawled page (IRLbot's L)
URL_BYTES = 110  # IRLbot's b, URL plus crawl metadata
BUDGET = 10
ZIPF = 1.0
SEED = 20070609
MAX_QUEUES = 1024


def emit(**figure: object) -> None:
    print(json.dumps({"bench": "beast", **figure}), flush=True)


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


def run(pages: int) -> None:
    domains = max(1, int(pages / (BUDGET * ALPHA_END)))
    rng = random.Random(SEED)
    cdf = list(itertools.accumulate(r**-ZIPF for r in range(1, domains + 1)))
    payload = bytes(URL_BYTES - 8)

    def draw() -> int:
        return bisect.bisect_right(cdf, rng.random() * cdf[-1])

    emit(
        figure="setup",
        pages=pages,
        domains=domains,
        budget=BUDGET,
        links=LINKS,
        url_bytes=URL_BYTES,
        alpha_end=ALPHA_END,
    )
    work = Path(tempfile.mkdtemp(prefix="irlscrapy-beast-bench-", dir=ROOT / "bench"))
    try:
        (work / "beast").mkdir()
        (work / "naive").mkdir()
        beast = Beast(work / "beast", lambda d: BUDGET, initial_queues=2, max_queues=MAX_QUEUES)
        beast.open()
        naive: NaiveTwoQueues | None = NaiveTwoQueues(work / "naive", BUDGET)
        for d in range(domains):  # one seed URL per domain
            beast.push(d, payload)
            if naive is not None:
                naive.push(d, payload)
        checkpoints = [int(BUDGET * domains * a) for a in (1, 2, 4, 8, 16, ALPHA_END)]
        last = {"beast": (0, 0), "naive": (0, 0)}  # scheme -> (pages, io bytes) at last report

        def interval_rate(scheme: str, io: int, pages: int) -> float:
            """Disk bytes per crawled page since the scheme's previous checkpoint."""
            pages0, io0 = last[scheme]
            last[scheme] = (pages, io)
            return (io - io0) / max(1, pages - pages0)

        def report(
            scheme: str,
            rate: float,
            pages: int,
            alpha: float,
            equation: str,
            predicted: float,
            **extra: object,
        ) -> None:
            emit(
                figure="bytes_per_page",
                scheme=scheme,
                pages=pages,
                alpha=round(alpha, 2),
                value=round(rate),
                **{f"predicted_{equation}": round(predicted)},
                ratio=round(rate / predicted, 2),
                **extra,
            )

        crawled, started = 0, time.perf_counter()
        for stop in checkpoints:
            while crawled < stop:
                if beast.pop() is None:
                    break
                if naive is not None:
                    naive.pop()
                new = 6 if rng.random() < 0.5 else 7  # L = 6.5 on average
                for _ in range(new):
                    d = draw()
                    beast.push(d, payload)
                    if naive is not None:
                        naive.push(d, payload)
                crawled += 1
            alpha = max(1.0, crawled / (BUDGET * domains))
            b_rate = interval_rate("beast", beast.bytes_written + beast.bytes_read, crawled)
            report(
                "beast",
                b_rate,
                crawled,
                alpha,
                "eq27",
                2 * URL_BYTES * (2 * alpha / (1 + alpha) * (LINKS - 1) + 1),
                j=beast.j,
                seconds=round(time.perf_counter() - started),
            )
            if naive is not None:
                n_rate = interval_rate("naive", naive.bytes_written + naive.bytes_read, crawled)
                report(
                    "naive",
                    n_rate,
                    crawled,
                    alpha,
                    "eq25",
                    2 * URL_BYTES * (LINKS - 1) * alpha,
                    over_beast=round(n_rate / b_rate, 1),
                )
                if n_rate >= 10 * b_rate:
                    emit(figure="naive_stopped", pages=crawled, reason="10x BEAST's I/O")
                    naive = None
        alpha = crawled / (BUDGET * domains)
        emit(
            figure="queues_j",
            value=beast.j,
            predicted_eq31=2 ** math.ceil(math.log2(alpha + 1)) - 1,
            alpha=round(alpha, 1),
            qf_resplits=beast.qf_resplits,
            max_queues=MAX_QUEUES,
        )
        beast.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAGES} pages")
    parser.add_argument("--pages", type=int, default=PAGES)
    args = parser.parse_args()
    run(QUICK_PAGES if args.quick else args.pages)


if __name__ == "__main__":
    main()
