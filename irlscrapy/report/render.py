"""The crawl report: ``report.html``, its PNG plots and ``report.json``, from a finished
crawl's records (:mod:`irlscrapy.report.reader`), or from the records of every agent of
a multi-agent crawl, as one report of the whole crawl.

What it shows, after seeds/003 section VIII:

- first, the crawl in plain words (:mod:`irlscrapy.report.words`), then the summary's
  figures;
- download rate over time, pages/s and Mbit/s each on its own axis (Fig. 6), a resumed
  crawl's stop as a gap, its restart marked (:mod:`irlscrapy.report.plots`);
- the probability of uniqueness ``p`` against pages crawled (Fig. 7(a));
- mean and median pages per PLD by PLD in-degree, power-of-two bins (Fig. 7(b));
- the top PLDs by in-degree with budget and pages (Table VIII);
- status codes, content types (``irl/content_type/*``), robots.txt outcomes
  (``irl/robots/*``, ``robotstxt/*``);
- politeness in force: the delay settings, and the crawled PLDs by the host delay
  ``tau_h`` their final STAR budget implies (before Crawl-delay and back-off, which
  only raise it; their counts are in the robots.txt and stats tables).

Whole-crawl figures sum the last timeline line of every run (Scrapy's counters restart
with each run); ``stats.json`` holds the last run's full Scrapy stats, shown at the end
(:mod:`irlscrapy.report.data`). Every plot's numbers are in a table under it and in
``report.json`` (``{"summary": {...}, "status": {...}, "content_types": {...}, "robots":
{...}, "download_rate": [[t, pages/s, bits/s], ...], "uniqueness": [[pages, p, checked],
...], "in_degree_bins": [[low, high, plds, pages, mean, median], ...], "top_plds":
[[rank, pld, in-degree, budget, pages], ...], "host_delays": {seconds: PLDs}}``; one
crawl's also has ``"run_spans": [[opened, last line], ...]`` per run, ``"pace"`` (where
its delays came from) and ``"state_dir_exists"``). Every figure has a sentence under its
title saying what it shows and how to read it; a table under a time axis is in the
figure's unit.

*Several agents* (:func:`write_agents_report`, ``irlscrapy report JOBDIR JOBDIR ...
--out DIR``): the JOBDIRs of one multi-agent crawl's agents make one report, combined as
:mod:`irlscrapy.report.merge` says: counters summed over the agents, the download rate
and ``p`` summed on a common time grid (``grid_seconds`` per bin), the per-PLD tables
over the union of the agents' PLDs (each agent owns disjoint PLDs), each agent's
restarts marked in its colour, and a table of the agents. ``report.json`` then has
``"state_dirs"`` in place of ``"state_dir"``, an ``"agents"`` list (agent, state_dir,
runs, restarts, pages, finish_reason, star) and ``"grid_seconds"``; the summary adds
``agents`` and, with STAR, ``shared_plds``. The stats table has a column per agent.

matplotlib is imported in :mod:`irlscrapy.report.plots` only, so a crawl never loads it.
"""

from __future__ import annotations

import datetime
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from irlscrapy.report import words
from irlscrapy.report.data import report_data
from irlscrapy.report.merge import agent_names, agents_data
from irlscrapy.report.plots import (
    PNG_DELAYS,
    PNG_PLDS,
    PNG_RATE,
    PNG_UNIQUENESS,
    load_plotting,
    stops,
    time_axis,
    write_plots,
)
from irlscrapy.report.reader import Meter, read_crawl, read_crawls

__all__ = [
    "PNG_DELAYS",
    "PNG_PLDS",
    "PNG_RATE",
    "PNG_UNIQUENESS",
    "load_plotting",
    "write_agents_report",
    "write_report",
]

REPORT = "report.html"
REPORT_JSON = "report.json"

#: The Scrapy stats table: its title, one column per crawl (name, stats.json's stats).
StatsTable = tuple[str, list[tuple[str, dict[str, Any] | None]]]


def write_report(
    state_dir: Path,
    out: Path,
    meter: Meter | None = None,
    *,
    check_lock: bool = True,
    state_dir_removed: bool = False,
) -> Path:
    """Read the crawl at ``state_dir`` and write its report into ``out``; returns the
    HTML page's path. ``check_lock``: see read_crawl; ``state_dir_removed``: the crawl's
    state directory is temporary, removed at its close (the report does not name it)."""
    crawl = read_crawl(state_dir, meter, check_lock=check_lock)
    stats: StatsTable = (f"Scrapy stats (run {crawl.stats_run})", [("value", crawl.stats)])
    return _write(report_data(crawl, state_dir_removed), stats, out)


def write_agents_report(state_dirs: Sequence[Path], out: Path, meter: Meter | None = None) -> Path:
    """Read the crawls of a multi-agent crawl's agents at ``state_dirs`` and write one
    report of the whole crawl into ``out`` (see the module docstring); returns the HTML
    page's path."""
    crawls, star = read_crawls(state_dirs, meter)
    names = agent_names(crawls)
    columns = [(name, crawl.stats) for name, crawl in zip(names, crawls, strict=True)]
    stats: StatsTable = ("Scrapy stats (each agent's last closed run)", columns)
    return _write(agents_data(crawls, star), stats, out)


def _write(data: dict[str, Any], stats: StatsTable, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    write_plots(data, out)
    (out / REPORT_JSON).write_text(json.dumps(data, indent=1), encoding="utf-8")
    page = out / REPORT
    page.write_text(_html(data, stats), encoding="utf-8")
    return page


# -- HTML ------------------------------------------------------------------------------
#: What each summary figure counts, in the order the summary shows them (``report.json``
#: keeps the keys); a figure not named here follows, under its key.
SUMMARY_LABELS = {
    "pages": "responses (robots.txt included: what CLOSESPIDER_PAGECOUNT counts)",
    "pages_parsed": "pages parsed by the spider",
    "robots_responses": "robots.txt responses",
    "ignored_responses": "HTTP errors not parsed",
    "requests": "requests sent",
    "download_errors": "downloads failed",
    "bytes": "bytes received",
    "links": "links extracted",
    "unique_urls": "unique URLs found (new to URLseen)",
    "duplicates": "links to URLs seen before (URLseen)",
    "p": "probability of uniqueness p: unique URLs / links checked",
    "seconds_crawling": "time crawling",
    "runs": "runs",
    "finish_reason": "finish reason",
    "plds": "PLDs known to STAR",
    "crawled_plds": "PLDs crawled",
    "spam_pages": "pages of spam farms",
    "spam_share": "share of spam pages",
    "agents": "agents",
    "shared_plds": "PLDs in more than one agent's STAR store",
}


def summary_keys(summary: dict[str, Any]) -> list[str]:
    """The summary's figures in the order the report shows them."""
    return [k for k in SUMMARY_LABELS if k in summary] + [
        k for k in summary if k not in SUMMARY_LABELS
    ]


def _html(data: dict[str, Any], stats: StatsTable) -> str:
    e = html.escape
    s = data["summary"]
    written = e(datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
    restarts = f", {words.count(len(data['restarts']), 'restart')}" if data["restarts"] else ""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>irlscrapy crawl report"
        "</title><style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;"
        "padding:2px 8px;text-align:right}th{text-align:left}.note{color:#a00}</style>"
        "</head><body>",
    ]
    parts.append("<h1>Crawl report</h1>")
    parts += [f"<p class='plain'>{e(sentence)}</p>" for sentence in words.plain_summary(data)]
    parts.append(
        f"<p>{words.count(s['runs'], 'run')}{restarts}; report written {written}. "
        f"{e(words.state_dir_sentence(data))}</p>"
    )
    if "agents" in data:
        parts.append(
            _table(
                ("agent", "state directory", "runs", "restarts", "pages", "finish reason"),
                [
                    (
                        e(a["agent"]),
                        f"<code>{e(a['state_dir'])}</code>",
                        _fmt(a["runs"]),
                        _fmt(len(a["restarts"])),
                        _fmt(a["pages"]),
                        e(_fmt(a["finish_reason"])),
                    )
                    for a in data["agents"]
                ],
                keys=[a["agent"] for a in data["agents"]],
                table_id="agents",
            )
        )
    parts += [f"<p class='note'>{e(note)}</p>" for note in data["notes"]]
    parts.append("<h2>Summary</h2>")
    parts.append(
        _table(
            ("figure", "value"),
            [(SUMMARY_LABELS.get(k, k), e(_summary_value(k, s[k]))) for k in summary_keys(s)],
            keys=summary_keys(s),
            table_id="summary",
        )
    )
    if "spam_share" in s:
        parts.append(
            f"<p id='spam'>Pages of spam farms (the in-vitro web's ground truth): "
            f"{_fmt(s['spam_pages'])}, {s['spam_share']:.2%} of the pages the spider handled."
            "</p>"
        )
    parts += _rate_section(data)
    parts.append(
        f"<h2>Probability of uniqueness</h2><p>{e(words.UNIQUENESS_CAPTION)} Over the "
        f"whole crawl: p = {_fmt(s['p'])}.</p><img src='{PNG_UNIQUENESS}' alt='uniqueness'>"
    )
    parts.append(
        _table(
            ("pages crawled", "p", "URLs checked"),
            [(_fmt(n), f"{p:.4f}", _fmt(c)) for n, p, c in data["uniqueness"]],
            table_id="uniqueness",
        )
    )
    if data["star"]:
        parts.append(
            "<h2>Pages per PLD by in-degree</h2>"
            f"<p>{e(words.PLDS_CAPTION)} {_fmt(s['plds'])} PLDs known to STAR, "
            f"{_fmt(s['crawled_plds'])} crawled.</p><img src='{PNG_PLDS}' alt='pages per PLD'>"
        )
        parts.append(
            _table(
                ("in-degree", "PLDs", "pages", "mean pages", "median pages"),
                [
                    (f"{lo}" if lo == hi else f"{lo}-{hi}", _fmt(n), _fmt(p), f"{m:.2f}", _fmt(md))
                    for lo, hi, n, p, m, md in data["in_degree_bins"]
                ],
                table_id="in_degree_bins",
            )
        )
        parts.append("<h2>Top PLDs (Table VIII)</h2>")
        parts.append(
            _table(
                ("rank", "PLD", "in-degree", "budget", "pages"),
                [
                    (str(r), e(name), _fmt(d), _fmt(b), _fmt(p))
                    for r, name, d, b, p in data["top_plds"]
                ],
                table_id="top_plds",
            )
        )
    else:
        parts.append(
            "<h2>Pages per PLD, top PLDs</h2><p>STAR did not run in this crawl "
            "(another scheduler than irlscrapy's): no PLD in-degrees.</p>"
        )
    for title, name in (
        ("Status codes", "status"),
        ("Content types", "content_types"),
        ("robots.txt", "robots"),
    ):
        parts.append(f"<h2>{title}</h2>")
        if name == "content_types":
            parts.append(
                "<p>Of the responses, by their Content-Type (robots.txt files are not "
                "pages: they are counted under robots.txt).</p>"
            )
        parts.append(
            _table(
                ("", "count"),
                [(e(k), _fmt(v)) for k, v in data[name].items()],
                keys=list(data[name]),
                table_id=name,
            )
        )
    parts.append("<h2>Politeness in force</h2>")
    parts.append(
        _table(
            ("setting", "value"),
            [(k, e(str(v))) for k, v in data["politeness"].items()],
            table_id="politeness",
        )
    )
    if data["star"]:
        parts.append(
            f"<p id='delays'>{e(words.delays_caption(data))}</p>"
            f"<img src='{PNG_DELAYS}' alt='host delays'>"
        )
        parts.append(
            _table(
                ("tau_h (s)", "PLDs"),
                [(f"{float(k):g}", _fmt(v)) for k, v in data["host_delays"].items()],
                table_id="host_delays",
            )
        )
    title, all_columns = stats
    columns = [(name, table) for name, table in all_columns if table is not None]
    if columns:
        names = sorted({k for _, table in columns for k in table})
        parts.append(f"<h2>{e(title)}</h2>")
        parts.append(
            _table(
                ("stat", *(e(name) for name, _ in columns)),
                [(e(k), *(e(_stat(k, table.get(k), data)) for _, table in columns)) for k in names],
                table_id="stats",
                fold=False,  # the page's end: nothing below to scroll past
            )
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _rate_section(data: dict[str, Any]) -> list[str]:
    """Fig. 6, its caption and its table, in the figure's time unit, a resumed crawl's
    stops as rows between the runs'."""
    unit, seconds = time_axis(data)
    gaps = stops(data)
    caption = words.RATE_CAPTION
    if data["restarts"]:
        caption += words.AGENT_RESTART_CAPTION if "agents" in data else words.RESUME_CAPTION
    parts = ["<h2>Download rate</h2>", f"<p>{html.escape(caption)}</p>"]
    if "grid_seconds" in data:
        parts.append(
            f"<p>The sum of the agents' rates, averaged over {data['grid_seconds']:g} s "
            "bins of wall-clock time.</p>"
        )
    parts.append(f"<img src='{PNG_RATE}' alt='download rate'>")
    places = 1 if seconds == 1 else 2
    rows: list[tuple[str, ...]] = []
    pending = sorted(gaps, key=lambda gap: gap[1])
    for t, pages, bits in data["download_rate"]:
        while pending and pending[0][1] <= t:
            stopped, restarted, run = pending.pop(0)
            when = f"{(stopped - data['start']) / seconds:.{places}f}"
            back = f"{(restarted - data['start']) / seconds:.{places}f}"
            rows.append((f"{when}-{back}", f"stopped; run {run} resumes", ""))
        rows.append(
            (f"{(t - data['start']) / seconds:.{places}f}", f"{pages:.2f}", f"{bits / 1e6:.3f}")
        )
    parts.append(
        _table((f"{unit} since start", "pages/s", "Mbit/s"), rows, table_id="download_rate")
    )
    return parts


def _summary_value(key: str, value: Any) -> str:
    """A summary figure as the reader says it: a duration, a share, a number."""
    if key == "seconds_crawling" and isinstance(value, int | float):
        return words.duration(value)
    if key in ("p", "spam_share") and isinstance(value, float):
        return f"{value:.4f} ({value:.1%})"
    if key == "finish_reason":
        return (
            f"{value} ({words.FINISH_REASONS[value]})"
            if value in words.FINISH_REASONS
            else _fmt(value)
        )
    return _fmt(value)


#: Stats that count at a moment of the crawl the report has moved past: stat -> (summary
#: figure that counts it at the end, what the stat's value is).
STALE_STATS = {
    "irl/star/plds": (
        "plds",
        "at STAR's last refresh in the crawl; the report, which merges "
        "the links recorded since, counts {}",
    ),
}


def _stat(key: str, value: Any, data: dict[str, Any]) -> str:
    """A Scrapy stat, with what the report counts where the two differ."""
    if key in STALE_STATS and value is not None:
        figure, words_of = STALE_STATS[key]
        final = data["summary"].get(figure)
        if final is not None and final != value:
            return f"{_fmt(value)} ({words_of.format(_fmt(final))})"
    return _fmt(value)


#: Tables of more rows are folded (a click shows them).
FOLDED = 30


def _table(
    header: tuple[str, ...],
    rows: list[tuple[str, ...]],
    keys: list[str] | None = None,
    table_id: str = "",
    fold: bool = True,
) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        key = f" data-key='{html.escape(keys[i])}'" if keys else ""
        cells = f"<th>{row[0]}</th>" + "".join(f"<td>{c}</td>" for c in row[1:])
        body.append(f"<tr{key}>{cells}</tr>")
    table = f"<table id='{table_id}'><tr>{head}</tr>{''.join(body)}</table>"
    if fold and len(rows) > FOLDED:
        return f"<details><summary>the table ({len(rows):,} rows)</summary>{table}</details>"
    return table


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)
