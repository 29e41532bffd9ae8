"""Hostile input, 100,000 generated inputs per surface (issue 21 part 4).

    python bench/fuzz.py [--inputs 100000] [--surfaces urls,html,robots,headers,dns]
                         [--seed S] [--fresh]
    python bench/fuzz.py --seed S --surfaces html --replay 4711   # one input, with its error
    python bench/fuzz.py --seed S --surfaces html --no-text-decode  # irlscrapy's memory alone

What runs: each surface (``harness/fuzz/surfaces.py``: URLs, HTML pages, robots.txt
answers, HTTP headers, DNS answers; the crawler code each goes through is listed there)
in a child process of its own, fed input ``i`` = ``GENERATORS[surface](rng_for(surface,
seed, i))`` for ``i`` in 0..inputs-1 (``harness/fuzz/hostile.py``). The corpus is fed
first to warm up (lazy imports, first-use caches), uncounted.

Figures, per surface (JSON lines, also appended to bench/results/fuzz.jsonl):

- ``crashes``: inputs whose feed raised (an exception out of crawler code, or an
  invariant of surfaces.py broken). Bar: 0. The first 20 are listed with their index;
  ``--replay`` reproduces one.
- ``worst_turn_ms``: the longest stretch of crawler code one input ran without a
  break (what would hold a reactor), re-measured: the 10 inputs with the longest turns
  in the run are fed again 5 times each to a fresh, warmed-up harness, and the figure is
  the largest of their medians (a shared machine's scheduling noise and garbage
  collections land on inputs at random; an input's own cost repeats). Bar: 50 ms. The
  run's raw maximum is reported beside it.
- ``rss_growth_mb``: anonymous RSS at the child's 100,000th input less at its
  10,000th, each after a full collection and ``malloc_trim``. Bar: 5 MB. RSS is read
  every 5,000 inputs between the two; ``rss_trend_mb`` is the growth along the
  least-squares line through those 19 points (two points alone vary by several MB from
  run to run, with the freed memory that big inputs happen to leave pinned). The harness's
  caches are capped to fill long before the 10,000th input (a 2,000-URL frontier in
  RAM, 200 robots.txt hosts and 128 parsed rule sets of 1 MiB of bodies, 500 DNS
  entries, 512 hosts' PLDs, 512 canonical origins and authorities), so growth is what
  leaks, not what a cache holds by design. One cache outside irlscrapy grows on:
  charset_normalizer's per-code-point one (up to one entry per Unicode code point),
  which Scrapy fills when the HTML surface decodes a page's text without a declared
  encoding (irlscrapy never decodes a page's text; a user's spider that reads
  ``response.text`` does); its growth is in the figure. ``--no-text-decode`` leaves
  that decoding out (its state and results apart, marked ``decode_text: false``): the
  figure is then irlscrapy's code alone.

A run resumes where it stopped (``bench/results/fuzz/<seed>/<surface>.json``, written
every 1,000 inputs); ``--fresh`` starts it anew. A resumed child's RSS figure covers
its own inputs only, and is marked ``resumed_at``. A child that stops answering for
``HANG_SECONDS`` is killed and its input counted as a hang.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from common import REPO, RESULTS, emit, memory

sys.path.insert(0, str(REPO))

from harness.fuzz import hostile
from harness.fuzz.surfaces import Surfaces
from irlscrapy import domains
from irlscrapy.dupefilters import urlkey
from irlscrapy.spiders import extract
from irlscrapy.storage.glibcheap import release_free_memory

SAVE_EVERY = 1000
HANG_SECONDS = 300
TOP = 10  # inputs re-measured
REPEATS = 5
RSS_FROM, RSS_TO, RSS_STEP = 10_000, 100_000, 5_000
#: the size of the PLD cache and of the canonical-origin and authority memos in the child
MEMO = 512
#: whether the HTML surface decodes page text (``--no-text-decode``: not)
DECODE_TEXT = True


def state_path(seed: int, surface: str) -> Path:
    name = surface if DECODE_TEXT else f"{surface}-no-text-decode"
    return RESULTS / "fuzz" / str(seed) / f"{name}.json"


def corpus_inputs(surface: str) -> list[Any]:
    """The corpus entries of ``surface``, as generated inputs are."""
    out: list[Any] = []
    for entry in hostile.corpus(surface):
        if surface == "urls":
            out.append(entry["url"])
        elif surface == "html":
            ctype = entry["content_type"].encode()
            out.append(hostile.Page(entry["url"], {"Content-Type": ctype}, entry["body"]))
        elif surface == "robots":
            out.append((entry["status"], entry["body"]))
        elif surface == "headers":
            pairs = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in entry["headers"]]
            out.append(hostile.Answer(entry["status"], pairs))
        else:
            out.append((entry["name"], bytes.fromhex(entry["wire"])))
    return out


def warmed(surface: str, directory: Path) -> Surfaces:
    surfaces = Surfaces(directory, decode_text=DECODE_TEXT)
    for value in corpus_inputs(surface):
        surfaces.feed(surface, value)
    return surfaces


def generated(surface: str, seed: int, index: int) -> Any:
    return hostile.GENERATORS[surface](hostile.rng_for(surface, seed, index), True)


def rss_point() -> dict[str, float]:
    gc.collect()
    release_free_memory()
    mem = memory()
    return {"rss_anon_mb": mem["rss_anon"] / 2**20, "rss_mb": mem["rss"] / 2**20}


def child(surface: str, seed: int, inputs: int) -> None:
    """Feed ``surface`` its inputs from where its state file left off."""
    domains.PLD_CACHE_HOSTS = urlkey.ORIGIN_MEMO = extract.AUTHORITY_MEMO = MEMO
    path = state_path(seed, surface)
    state = json.loads(path.read_text()) if path.exists() else None
    if state is None:
        state = {
            "surface": surface,
            "seed": seed,
            "next": 0,
            "crashes": [],
            "crash_count": 0,
            "top": [],
            "rss": {},
            "resumed_at": None,
            "hangs": [],
        }
    elif state["next"] > 0:
        state["resumed_at"] = state["next"]
        state["rss"] = {}
    start = state["next"]
    # a resumed child runs until it has fed RSS_TO inputs itself (the RSS figure)
    end = max(inputs, start + RSS_TO) if state["resumed_at"] else inputs
    state["end"] = end
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        surfaces = warmed(surface, Path(tmp))
        gc.freeze()
        top: list[list[float]] = state["top"]
        for fed_here, index in enumerate(range(start, end), start=1):
            value = generated(surface, seed, index)
            try:
                longest = surfaces.feed(surface, value)
            except Exception as exc:
                state["crash_count"] += 1
                if len(state["crashes"]) < 20:
                    head = traceback.format_exc().splitlines()[-6:]
                    state["crashes"].append(
                        {"index": index, "error": repr(exc)[:300], "traceback": head}
                    )
                longest = max(surfaces.turns, default=0.0)
            top.append([longest, index])
            if len(top) > 4 * TOP:
                top.sort(reverse=True)
                del top[TOP:]
            if fed_here >= RSS_FROM and fed_here % RSS_STEP == 0 and fed_here <= RSS_TO:
                state["rss"][str(fed_here)] = rss_point()
            state["next"] = index + 1
            if state["next"] % SAVE_EVERY == 0 or state["next"] == end:
                top.sort(reverse=True)
                del top[TOP:]
                state["sizes"] = surfaces.sizes()
                write(path, state)
                print(
                    f"{surface}: {state['next']:,} inputs, {state['crash_count']} crashes",
                    file=sys.stderr,
                    flush=True,
                )
        surfaces.close()


def write(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def remeasure(surface: str, seed: int, indexes: list[int]) -> dict[int, float]:
    """The median longest turn of each input, fed REPEATS times to a fresh harness."""
    medians = {}
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        surfaces = warmed(surface, Path(tmp))
        for _ in range(200):  # a harness in the state a long run leaves it in
            surfaces.feed(surface, generated(surface, seed + 1, _))
        for index in indexes:
            value = generated(surface, seed, index)
            times = []
            for _ in range(REPEATS):
                try:
                    times.append(surfaces.feed(surface, value))
                except Exception:
                    times.append(max(surfaces.turns, default=0.0))
            medians[index] = statistics.median(times)
        surfaces.close()
    return medians


def run_surface(surface: str, seed: int, inputs: int) -> dict[str, Any]:
    path = state_path(seed, surface)
    while True:
        state = json.loads(path.read_text()) if path.exists() else {"next": 0, "hangs": []}
        if "end" in state and state["next"] >= state["end"]:
            break
        command = [
            sys.executable,
            __file__,
            "--child",
            surface,
            "--seed",
            str(seed),
            "--inputs",
            str(inputs),
            *(() if DECODE_TEXT else ("--no-text-decode",)),
        ]
        proc = subprocess.Popen(command)
        last, last_change = -1, time.monotonic()
        while proc.poll() is None:
            time.sleep(5)
            mtime = path.stat().st_mtime if path.exists() else -1
            if mtime != last:
                last, last_change = mtime, time.monotonic()
            elif time.monotonic() - last_change > HANG_SECONDS:
                proc.kill()
                proc.wait()
                hung = json.loads(path.read_text()) if path.exists() else {"next": 0}
                hung.setdefault("hangs", []).append(hung["next"])
                hung["next"] += SAVE_EVERY  # skip past the block that hung, and say so
                write(path, {**state, **hung})
                break
        if proc.returncode not in (0, None, -9):
            raise SystemExit(f"{surface}: the child died with {proc.returncode}")
    state = json.loads(path.read_text())
    top = sorted(state["top"], reverse=True)[:TOP]
    medians = remeasure(surface, seed, [int(index) for _, index in top])
    worst_index = max(medians, key=medians.__getitem__) if medians else None
    rss = state.get("rss", {})
    growth = (
        rss[str(RSS_TO)]["rss_anon_mb"] - rss[str(RSS_FROM)]["rss_anon_mb"]
        if str(RSS_TO) in rss and str(RSS_FROM) in rss
        else None
    )
    return {
        "surface": surface,
        "seed": seed,
        "decode_text": DECODE_TEXT,
        "inputs": state["next"],
        "crashes": state["crash_count"],
        "first_crashes": state["crashes"][:5],
        "hangs": state.get("hangs", []),
        "worst_turn_ms": round(medians[worst_index] * 1000, 2) if worst_index is not None else None,
        "worst_index": worst_index,
        "raw_max_turn_ms": round(top[0][0] * 1000, 2) if top else None,
        "raw_top": [[round(t * 1000, 2), i] for t, i in top],
        "rss_growth_mb": round(growth, 2) if growth is not None else None,
        "rss_trend_mb": rss_trend(rss),
        "rss": rss,
        "resumed_at": state.get("resumed_at"),
        "sizes": state.get("sizes"),
    }


def rss_trend(rss: dict[str, dict[str, float]]) -> float | None:
    """The anonymous RSS growth from RSS_FROM to RSS_TO inputs along the least-squares
    line through every point read (one per RSS_STEP inputs): a leak is a slope; one
    point's noise (a big input's pages left pinned or just freed) barely moves it."""
    points = sorted((int(n), p["rss_anon_mb"]) for n, p in rss.items())
    if len(points) < 3:
        return None
    inputs, mb = [n for n, _ in points], [m for _, m in points]
    slope = statistics.linear_regression(inputs, mb).slope
    return round(slope * (RSS_TO - RSS_FROM), 2)


def replay(surface: str, seed: int, index: int) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        surfaces = warmed(surface, Path(tmp))
        value = generated(surface, seed, index)
        print(repr(value)[:2000])
        longest = surfaces.feed(surface, value)  # raises what the run saw
        print(f"longest turn {longest * 1000:.2f} ms; turns {len(surfaces.turns)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--surfaces", default=",".join(hostile.SURFACES))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--replay", type=int, default=None)
    parser.add_argument("--no-text-decode", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global DECODE_TEXT
    DECODE_TEXT = not args.no_text_decode
    surfaces = args.surfaces.split(",")
    unknown = set(surfaces) - set(hostile.SURFACES)
    if unknown:
        parser.error(f"unknown surfaces {sorted(unknown)}; known: {', '.join(hostile.SURFACES)}")
    if args.seed is None:
        runs = list((RESULTS / "fuzz").glob("*")) if (RESULTS / "fuzz").exists() else []
        latest = max(runs, key=lambda run: run.stat().st_mtime) if runs else None
        resume = latest is not None and not args.fresh and args.replay is None
        args.seed = int(latest.name) if resume else random.SystemRandom().randrange(10**9)
    if args.child:
        child(args.child, args.seed, args.inputs)
        return
    if args.replay is not None:
        replay(surfaces[0], args.seed, args.replay)
        return
    if args.fresh:
        shutil.rmtree(RESULTS / "fuzz" / str(args.seed), ignore_errors=True)
    print(f"seed {args.seed}", file=sys.stderr)
    for surface in surfaces:
        started = time.monotonic()
        result = run_surface(surface, args.seed, args.inputs)
        result["seconds"] = round(time.monotonic() - started, 1)
        with (RESULTS / "fuzz.jsonl").open("a") as out:
            out.write(json.dumps(result) + "\n")
        emit(
            "fuzz",
            f"{surface}/crashes",
            result["crashes"],
            "inputs",
            bar=0,
            inputs=result["inputs"],
            seed=args.seed,
        )
        emit(
            "fuzz",
            f"{surface}/worst_turn",
            result["worst_turn_ms"],
            "ms",
            bar=50,
            index=result["worst_index"],
            raw_max_ms=result["raw_max_turn_ms"],
        )
        emit(
            "fuzz",
            f"{surface}/rss_growth_10k_100k",
            result["rss_growth_mb"],
            "MB",
            bar=5,
            trend_mb=result["rss_trend_mb"],
            resumed_at=result["resumed_at"],
        )


if __name__ == "__main__":
    main()
