"""One report for the agents of a multi-agent crawl: the numbers of ``report.json`` from
every agent's records (:func:`irlscrapy.report.reader.read_crawls`), in the shape of one
crawl's (:func:`irlscrapy.report.data.report_data`), plus a table of the agents.

Each agent (:mod:`irlscrapy.distributed.agent`) is an ordinary crawl with its own
JOBDIR: it owns disjoint PLDs, fetches their pages and checks their URLs against its own
URLseen, and counts their in-degrees. So the whole crawl's figures are:

- counters (pages, unique URLs, duplicates, links, requests, bytes; status codes,
  content types, robots.txt outcomes): sums over the agents, each agent's summed over
  its runs; ``p`` over the whole crawl from the summed unique URLs and duplicates;
- the download rate (Fig. 6): the sum of the agents' rates over wall-clock time. The
  agents' timelines are sampled at different instants, so each agent's growth is put on
  one time grid (:func:`irlscrapy.report.analysis.on_grid`) and summed per bin: bins of
  the longest of the agents' median gaps between lines, widened so that about
  :data:`irlscrapy.report.data.POINTS` bins span the crawl;
- ``p`` over time (Fig. 7(a)): per bin of the same grid, the URLs every agent checked in
  it, against the pages all of them had crawled by its end;
- the per-PLD tables (Fig. 7(b), Table VIII, host delays): over the union of the agents'
  PLDs, read together by the reader (a PLD in several stores, after a membership change,
  counted once: :mod:`irlscrapy.report.plds`; the report says how many);
- ``seconds_crawling``: wall-clock seconds during which at least one agent ran;
  ``runs``: the agents' runs added; ``finish_reason``: the agents' common one (None if
  they differ, or one's last run did not close);
- restarts: every agent's, marked per agent;
- politeness: the first agent's (host delays too); an agent whose differ is noted.

Agents are named by the ``IRL_AGENT_ID`` of their last run, else by their directory's
name (with the path, where two names are equal). Anything suggesting the directories are
not one crawl's agents (two crawl ids, a crawl of one process, one id twice) becomes a
note on the report, not an error: the sums are made all the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from irlscrapy import defaults
from irlscrapy.report import analysis
from irlscrapy.report.data import (
    COUNTS,
    POINTS,
    POLITENESS_SETTINGS,
    add_spam,
    finish_reason,
    run_counts,
    run_spans,
    run_total,
    star_data,
    totals,
)
from irlscrapy.report.plds import StarRecords
from irlscrapy.report.reader import CrawlRecords


def agent_names(crawls: Sequence[CrawlRecords]) -> list[str]:
    """Each crawl's agent id, else its directory's name; with the path where two are equal."""
    names = [crawl.agent_id or crawl.state_dir.name for crawl in crawls]
    return [
        f"{name} ({crawl.state_dir})" if names.count(name) > 1 else name
        for name, crawl in zip(names, crawls, strict=True)
    ]


def grid_width(crawls: Sequence[CrawlRecords], points: int = POINTS) -> float:
    """Seconds per bin of the time grid: the longest of the agents' median gaps between
    two lines of a run (the recorder's lines come closer together early in a run), or
    longer, so that about ``points`` bins span the crawl."""
    default = defaults.BY_NAME["IRL_REPORT_INTERVAL"].default
    medians = []
    for crawl in crawls:
        gaps = sorted(
            b.t - a.t for a, b in itertools.pairwise(crawl.samples) if a.run == b.run and b.t > a.t
        )
        if gaps:
            medians.append(gaps[len(gaps) // 2])
    times = [sample.t for crawl in crawls for sample in crawl.samples]
    return max(max(medians, default=default), (max(times) - min(times)) / points)


def agents_data(
    crawls: Sequence[CrawlRecords], star: StarRecords | None, width: float | None = None
) -> dict[str, Any]:
    """The numbers of every table and plot of the agents' report (see the module
    docstring); ``width``: seconds per bin of the time grid (default :func:`grid_width`)."""
    assert crawls
    names = agent_names(crawls)
    timelines = [crawl.lines for crawl in crawls]
    width = width or grid_width(crawls)
    bins = analysis.on_grid([crawl.samples for crawl in crawls], width)
    summary = totals(timelines)
    spans = [span for lines in timelines for span in run_spans(lines)]
    summary["seconds_crawling"] = analysis.covered_seconds(spans)
    summary["agents"] = len(crawls)
    summary["runs"] = sum(crawl.runs for crawl in crawls)
    reasons = {finish_reason(crawl) for crawl in crawls}
    summary["finish_reason"] = reasons.pop() if len(reasons) == 1 else None
    add_spam(summary, timelines)
    agents = [
        {
            "agent": name,
            "state_dir": str(crawl.state_dir),
            "runs": crawl.runs,
            "restarts": crawl.restarts,
            "pages": run_total(crawl.lines, "pages"),
            "finish_reason": finish_reason(crawl),
            "star": crawl.ran_star,
        }
        for name, crawl in zip(names, crawls, strict=True)
    ]
    data: dict[str, Any] = {
        "state_dirs": [str(crawl.state_dir) for crawl in crawls],
        "agents": agents,
        "summary": summary,
        "notes": notes(crawls, names, star),
        "restarts": sorted(t for crawl in crawls for t in crawl.restarts),
        **{name: run_counts(timelines, name) for name in COUNTS},
        "download_rate": [list(r) for r in analysis.grid_rates(bins)],
        "uniqueness": [list(u) for u in analysis.grid_uniqueness(bins)],
        "grid_seconds": width,
        "start": min(sample.t for crawl in crawls for sample in crawl.samples),
        "politeness": {k: crawls[0].settings.get(k) for k in POLITENESS_SETTINGS},
        "pace": crawls[0].pace,
    }
    star_data(data, star)
    if star is not None:
        summary["shared_plds"] = star.shared_plds
    return data


def notes(
    crawls: Sequence[CrawlRecords], names: Sequence[str], star: StarRecords | None
) -> list[str]:
    """What the agents' report must warn about: each agent's own notes, and whatever
    makes the sums doubtful."""
    out = []
    for name, crawl in zip(names, crawls, strict=True):
        out += [f"agent {name}: {note}" for note in crawl.notes]
    crawl_ids = sorted({str(c.settings.get("IRL_CRAWL_ID") or "") for c in crawls} - {""})
    if len(crawl_ids) > 1:
        out.append(
            "these directories belong to different crawls (IRL_CRAWL_ID "
            f"{', '.join(map(repr, crawl_ids))}): their figures are added all the same"
        )
    for name, crawl in zip(names, crawls, strict=True):
        if crawl.settings.get("IRL_REDIS_URL") == "":
            out.append(
                f"agent {name} ran as a crawl of one process (no IRL_REDIS_URL), not as an "
                "agent: its PLDs may overlap the others', its figures are added all the same"
            )
    ids = [crawl.agent_id for crawl in crawls if crawl.agent_id]
    for agent_id in sorted({i for i in ids if ids.count(i) > 1}):
        out.append(
            f"IRL_AGENT_ID {agent_id} ran in more than one of these directories (a copy of "
            "one JOBDIR?): their figures are added all the same"
        )
    politeness = [{k: c.settings.get(k) for k in POLITENESS_SETTINGS} for c in crawls]
    for name, settings in zip(names[1:], politeness[1:], strict=True):
        if settings != politeness[0]:
            out.append(
                f"agent {name} ran with other politeness settings than agent {names[0]}, "
                "whose are shown (and give the host delays)"
            )
    without = [name for name, crawl in zip(names, crawls, strict=True) if not crawl.ran_star]
    if star is not None and without:
        out.append(
            f"agent(s) {', '.join(without)} have no STAR store: their PLDs are missing from "
            "the PLD tables"
        )
    if star is not None and star.shared_plds:
        out.append(
            f"{star.shared_plds:,} PLD(s) were in more than one agent's STAR store (their "
            "owner changed with the crawl's membership): each is counted once, with its "
            "largest in-degree, the sum of its pages and its largest budget"
        )
    return out
