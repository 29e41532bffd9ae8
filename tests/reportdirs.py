"""Report records without a crawl: state directories holding what CrawlRecorder and STAR
leave (a timeline, stats.json, STAR's in-degree store), for the tests of ``irlscrapy
report``; and two agents of one multi-agent crawl, with every figure of their report
worked out by hand in :data:`TWO_AGENTS`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scrapy.settings import Settings

from irlscrapy import defaults
from irlscrapy.report.layout import write_stats
from irlscrapy.star.indegree import PLDInDegree

#: Every setting as the recorder keeps it, STAR's store small, at most 4 PLDs ranked.
SETTINGS: dict[str, Any] = {
    **{s.name: s.default for s in defaults.SETTINGS if s.unit != "secret"},
    "IRL_STAR_DRUM_MEMORY": 1 << 20,
    "IRL_STAR_TOP_DOMAINS": 4,
    "IRL_REPORT_INTERVAL": 10.0,
    "IRL_HOST_DELAY": 40.0,
}

#: A run: (open time, its later lines' (t, pages, unique URLs, duplicates), the last
#: line's status counts).
Run = tuple[float, list[tuple[float, int, int, int]], dict[str, int]]


def timeline(runs: list[Run], settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The timeline of ``runs`` (bytes: 1,000 a page; the last line of each run is its
    "close")."""
    lines = []
    for run, (opened, later, status) in enumerate(runs, 1):
        lines.append(
            {"v": 1, "event": "open", "t": opened, "run": run, "uptime": 0.0, "pages": 0,
             "settings": settings}
        )  # fmt: skip
        for i, (t, pages, unique, duplicates) in enumerate(later):
            last = i == len(later) - 1
            lines.append(
                {"v": 1, "event": "close" if last else "sample", "t": t, "run": run,
                 "uptime": t - opened, "pages": pages, "unique_urls": unique,
                 "duplicates": duplicates, "bytes": 1000 * pages,
                 "status": status if last else {}}
            )  # fmt: skip
    return lines


def write_state_dir(
    state_dir: Path,
    runs: list[Run],
    settings: dict[str, Any],
    finish_reason: str | None = "finished",
) -> None:
    """A crawl's records; ``finish_reason`` None: its last run was killed (no stats)."""
    records = state_dir / "report"
    records.mkdir(parents=True)
    lines = timeline(runs, settings)
    (records / "timeline.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    if finish_reason is not None:
        stats = {"finish_reason": finish_reason, "response_received_count": lines[-1]["pages"]}
        write_stats(records / "stats.json", stats, len(runs), lines[-1]["t"])
    (state_dir / "LOCK").write_text("")


def write_star(
    state_dir: Path,
    settings: dict[str, Any],
    pages: list[tuple[str, list[str]]],
    edges: list[tuple[str, str]],
) -> None:
    """STAR's store as a crawl leaves it: ``pages`` (PLD, PLDs it links to) crawled here,
    ``edges`` (source, target) sent by other agents; not merged (the report merges)."""
    store = PLDInDegree.from_settings(Settings(settings), None, lambda: 0.0)
    store.open(state_dir / "star")
    for source, targets in pages:
        store.record_page(source, targets)
    store.record_edges(edges)
    store.close()


def agent_settings(agent: str) -> dict[str, Any]:
    return {
        **SETTINGS,
        "IRL_AGENT_ID": agent,
        "IRL_CRAWL_ID": "example",
        "IRL_REDIS_URL": "redis://127.0.0.1:6379/0",
    }


def write_two_agents(root: Path) -> tuple[Path, Path]:
    """Agents ``a`` (JOBDIR ``root/job-a``, restarted once) and ``b`` (``root/job-b``) of
    one crawl, sampled at different instants; ``moved.com`` in both STAR stores (as
    after a membership change). Their report: :data:`TWO_AGENTS`."""
    a, b = root / "job-a", root / "job-b"
    write_state_dir(
        a,
        [
            (1000.0, [(1010.0, 100, 80, 20), (1020.0, 300, 200, 100)], {"200": 290, "404": 10}),
            (1040.0, [(1050.0, 50, 30, 20)], {"200": 50}),
        ],
        agent_settings("a"),
    )
    write_state_dir(
        b,
        [(1005.0, [(1015.0, 50, 40, 0), (1025.0, 150, 100, 40)], {"200": 140, "500": 10})],
        agent_settings("b"),
    )
    # in-degree at a: a1 3 (a2, b1, b2), a2 1 (a1), a3 2 (a2, b1), moved 1 (a1)
    write_star(
        a,
        agent_settings("a"),
        [
            *[("a1.com", ["a2.com", "moved.com"])] * 3,
            ("a2.com", ["a1.com", "a3.com"]),
            ("moved.com", []),
            ("moved.com", []),
        ],
        [("b1.com", "a1.com"), ("b2.com", "a1.com"), ("b1.com", "a3.com")],
    )
    # in-degree at b: b1 0, b2 3 (b1, a1, a2), moved 2 (b1, b2)
    write_star(
        b,
        agent_settings("b"),
        [
            ("b1.com", ["b2.com", "moved.com"]),
            ("b1.com", []),
            ("b2.com", ["moved.com"]),
            ("moved.com", []),
        ],
        [("a1.com", "b2.com"), ("a2.com", "b2.com")],
    )
    return a, b


#: PLD -> (in-degree, pages) over both agents: moved.com with its largest in-degree (2,
#: at b) and the sum of its pages (2 at a, 1 at b).
TWO_AGENTS_PLDS = {
    "a1.com": (3, 3),
    "a2.com": (1, 1),
    "a3.com": (2, 0),
    "b1.com": (0, 2),
    "b2.com": (3, 1),
    "moved.com": (2, 3),
}

#: The figures of the two agents' report, by hand (grid: 10 s bins from t = 1000).
TWO_AGENTS: dict[str, Any] = {
    "pages": 300 + 50 + 150,
    "unique_urls": 200 + 30 + 100,
    "duplicates": 100 + 20 + 40,
    # runs: a [1000, 1020], [1040, 1050]; b [1005, 1025]
    "seconds_crawling": 25.0 + 10.0,
    "status": {"200": 290 + 50 + 140, "404": 10, "500": 10},
    "restarts": [1040.0],
    # a: +100 in [1000, 1010], +200 in [1010, 1020], +50 in [1040, 1050];
    # b: +50 in [1005, 1015], +100 in [1015, 1025], half of each in either bin
    "download_rate": [
        [1010.0, (100 + 25) / 10, 8000 * (100 + 25) / 10],
        [1020.0, (200 + 25 + 50) / 10, 8000 * (200 + 25 + 50) / 10],
        [1030.0, 50 / 5, 8000 * 50 / 5],  # only b ran, for 5 s
        [1050.0, 50 / 10, 8000 * 50 / 10],  # [1030, 1040): no agent ran
    ],
    # (pages by the bin's end, p, checked): unique and duplicates spread the same way
    "uniqueness": [
        [125.0, (80 + 20) / (80 + 20 + 20), 120.0],
        [400.0, (120 + 20 + 30) / (120 + 20 + 30 + 80 + 20), 270.0],
        [450.0, 30 / 50, 50.0],
        [500.0, 30 / 50, 50.0],
    ],
}
