"""What the status endpoint and the progress line cost a crawl (issue 7's bar: < 2%).

    python bench/status_cost.py [--pages N] [--rounds R]

Two variants of bench/crawl.py's ``irl`` crawl (same web, same page budget), run in
alternation R times:

``quiet``    no progress line (IRL_PROGRESS_INTERVAL=0), no status endpoint;
``watched``  the progress line every 5 s (the project's setting) and the status endpoint
             on, scraped by this process every second: /status.json, /metrics and the
             HTML page (three requests a second, more than any dashboard needs).

Headline figure, from one run: the reactor thread's CPU time inside the endpoint's
request handling, its sampling timer and the progress line (wrapped with
``time.thread_time`` by bench/status_cost_extension.py), over the reactor thread's CPU
time for the whole crawl.
The pages/s of the two variants are printed too, with their ratio; on a shared machine
their spread between rounds is larger than 2%, which is why the CPU share is the bar.
"""

from __future__ import annotations

import argparse
import re
import socket
import threading
import urllib.request
from pathlib import Path

import crawl
from common import emit

BENCH_NAME = "status_cost"
PAGES = 20_000
ROUNDS = 2
PATHS = ("/status.json", "/metrics", "/")
COST = "status_cost_extension.StatusCost"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def poll(port: int, stop: threading.Event, answers: list[int]) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while not stop.wait(1.0):
        for path in PATHS:
            try:
                with opener.open(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                    answer.read()
                    answers.append(answer.status)
            except OSError:
                pass  # not up yet, or closing


def stat(log: Path, name: str) -> float:
    found = re.search(rf"'{re.escape(name)}': ([0-9.]+)", log.read_text(errors="replace"))
    if not found:
        raise RuntimeError(f"{name} not in {log}")
    return float(found.group(1))


def run(variant: str, pages: int) -> dict[str, float]:
    settings = {**crawl.IRL_SETTINGS, "CLOSESPIDER_PAGECOUNT": str(pages)}
    stop = threading.Event()
    answers: list[int] = []
    poller = None
    extensions = crawl.project_extensions
    if variant == "quiet":
        settings["IRL_PROGRESS_INTERVAL"] = "0"
    else:
        port = free_port()
        settings["IRL_STATUS_PORT"] = str(port)
        crawl.project_extensions = lambda: {**extensions(), COST: 0}
        poller = threading.Thread(target=poll, args=(port, stop, answers), daemon=True)
        poller.start()
    try:
        result = crawl.run_variant(
            f"status-{variant}", crawl.broad_cmd(crawl.as_args(settings)), crawl.CRAWL_WALL_S
        )
    finally:
        stop.set()
        crawl.project_extensions = extensions
    at = crawl.interpolate(result.samples, "pages", pages)
    figures = {"pages_per_s": pages / at["t"]}
    if variant == "watched":
        figures["requests_answered"] = sum(1 for a in answers if a == 200)
        figures["status_cpu_s"] = stat(result.log, "bench/status_cpu_s")
        figures["reactor_cpu_s"] = stat(result.log, "bench/reactor_cpu_s")
        figures["cpu_share"] = figures["status_cpu_s"] / figures["reactor_cpu_s"]
    for name, value in figures.items():
        emit(BENCH_NAME, name, round(value, 5), "", variant=variant)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"quiet": [], "watched": []}
    shares = []
    for _ in range(args.rounds):
        for variant in ("quiet", "watched"):
            figures = run(variant, args.pages)
            rates[variant].append(figures["pages_per_s"])
            if "cpu_share" in figures:
                shares.append(figures["cpu_share"])
    emit(BENCH_NAME, "status_cpu_share_max", round(max(shares), 5), "share of reactor CPU")
    emit(
        BENCH_NAME,
        "watched_to_quiet_pages_per_s_ratio",
        round(sum(rates["watched"]) / sum(rates["quiet"]), 3),
        "ratio",
        quiet=[round(r, 1) for r in rates["quiet"]],
        watched=[round(r, 1) for r in rates["watched"]],
    )


if __name__ == "__main__":
    main()
