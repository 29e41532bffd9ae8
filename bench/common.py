"""Helpers shared by the benchmarks in bench/ (not collected by pytest: no test_ names).

Every benchmark prints one JSON object per figure on its own line::

    {"bench": "server", "figure": "pages_per_s", "value": 2512.3, "unit": "pages/s", ...}

Headline figures are ratios against a baseline measured in the same run; absolute
numbers are printed too, but a shared 2-core machine makes them noisy.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from irlscrapy.oracle.audit import ROBOTS_PATHS

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
RESULTS = BENCH / "results"


def emit(bench: str, figure: str, value: Any, unit: str, **extra: Any) -> None:
    """Print one machine-readable figure."""
    record = {"bench": bench, "figure": figure, "value": value, "unit": unit, **extra}
    print(json.dumps(record, separators=(", ", ": ")), flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def page_urls(profile: str, seed: int, count: int, policy: str = "scrapy") -> list[str]:
    """The first ``count`` HTML page URLs of a breadth-first crawl, from the project's CLI
    (``irlscrapy invitro urls``), so the benchmarks use the list a reader can reproduce."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "irlscrapy",
            "invitro",
            "urls",
            "--profile",
            profile,
            "--seed",
            str(seed),
            "--count",
            str(count),
            "--policy",
            policy,
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    urls = out.stdout.split()
    if len(urls) != count:
        raise RuntimeError(f"irlscrapy invitro urls printed {len(urls)} URLs, not {count}")
    return urls


def disk_usage(root: Path) -> tuple[int, int]:
    """(allocated bytes, as ``du`` counts them; apparent bytes) of the files under
    ``root``, a file hard-linked more than once counted once. Files and folders removed
    while it walks (BEAST's queue files, LevelDB's compactions) are skipped."""
    allocated = apparent = 0
    seen: set[int] = set()
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                st = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                allocated += st.st_blocks * 512
                apparent += st.st_size
    return allocated, apparent


def memory() -> dict[str, int]:
    """RSS, its anonymous, file-backed and shared parts, and the high-water mark, in
    bytes (from /proc/self/status)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[name] = int(value.split()[0]) * 1024
    return {
        "rss": out["VmRSS"],
        "rss_anon": out["RssAnon"],
        "rss_file": out["RssFile"],
        "rss_shmem": out.get("RssShmem", 0),
        "hwm": out["VmHWM"],
    }


#: A crawl of the broad web gets this long before it is stopped anyway.
BROAD_WALL_S = 3600
#: After its SIGINT, a crawl gets this long to finish what is in flight.
STOP_GRACE_S = 120
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "ftp_proxy")
#: The add-on with no politeness delays of its own and loopback allowed (the address
#: guard refuses 127.0.0.0/8 by default): what a benchmark on a loopback server runs.
ADDON_ON_LOOPBACK: dict[str, Any] = {
    "ADDONS": {"irlscrapy.Addon": 0},
    "IRL_HOST_DELAY": 0,
    "IRL_HOST_DELAY_MIN": 0,
    "IRL_IP_DELAY": 0,
    "IRL_IP_DELAY_MIN": 0,
    "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
}


def _follow_until(log: Path, pages: int, crawl: subprocess.Popen[bytes], wall: float) -> None:
    """Read the server log as it grows; SIGINT the crawl once ``pages`` page requests
    were served (robots.txt and requests for hosts without DNS are not pages), or stop
    following when the crawl ends, or after ``wall`` seconds."""
    served = 0
    offset = 0
    started = time.monotonic()
    while crawl.poll() is None and time.monotonic() - started < wall:
        time.sleep(2.0)
        if not log.exists():
            continue
        with open(log, "rb") as f:
            f.seek(offset)
            chunk = f.read()
        whole = chunk[: chunk.rfind(b"\n") + 1]
        offset += len(whole)
        for line in whole.splitlines():
            record = json.loads(line)
            if record["path"] not in ROBOTS_PATHS and record["kind"] != "dns-error":
                served += 1
        print(f"# {time.monotonic() - started:6.0f} s  {served:,} pages served", flush=True)
        if served >= pages:
            break
    if crawl.poll() is None:
        crawl.send_signal(signal.SIGINT)


def crawl_broad_web(
    workdir: Path,
    pages: int,
    settings: dict[str, Any],
    seed: int = 0,
    jobdir: bool = True,
    profile: str = "broad",
    wall: float = BROAD_WALL_S,
) -> tuple[list[dict[str, Any]], str]:
    """``scrapy crawl broad`` of an in-vitro web (its own server, ``profile`` and seed
    ``seed``) with ``settings`` on top of the project's, stopped by one SIGINT once the
    server's log in ``workdir`` holds ``pages`` page requests (robots.txt not counted;
    with a JOBDIR unless ``jobdir`` is false), or after ``wall`` seconds; if it has not
    stopped STOP_GRACE_S later (downloads in flight), a second SIGINT forces it, as
    Scrapy documents. The server's log and the crawl's are appended to, so a crawl
    resumed from its JOBDIR in the same ``workdir`` counts on from where it stopped.
    Returns the server's request log and the crawl's own log; exits if the crawl
    failed."""
    log = workdir / "requests.jsonl"
    cmd = [
        sys.executable, "-m", "scrapy", "crawl", "broad",
        "-a", "seeds=invitro", "-a", f"profile={profile}", "-a", f"seed={seed}",
        "-a", f"invitro_log={log}",
        "-s", "TELNETCONSOLE_ENABLED=0",
    ]  # fmt: skip
    if jobdir:
        cmd += ["-s", f"JOBDIR={workdir / 'job'}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    print("#", " ".join(cmd), flush=True)
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    stderr = workdir / "crawl.log"
    forced = False
    with open(stderr, "a") as err:
        crawl = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=err, stderr=err)
        _follow_until(log, pages, crawl, wall)
        try:
            returncode = crawl.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:  # downloads still in flight: Scrapy's forced stop
            print("# the crawl is still stopping; a second SIGINT forces it", flush=True)
            forced = True
            crawl.send_signal(signal.SIGINT)
            try:
                returncode = crawl.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                crawl.kill()
                returncode = crawl.wait()
    crawl_log = stderr.read_text()
    if returncode != 0 and not forced:
        sys.exit(f"the crawl failed ({returncode}):\n{crawl_log[-3000:]}")
    return [json.loads(line) for line in log.read_text().splitlines() if line], crawl_log
