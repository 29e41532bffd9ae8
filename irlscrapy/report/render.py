"""The crawl report: ``report.html``, its PNG plots and ``report.json``, from a finished
crawl's records (:mod:`irlscrapy.report.reader`), or from the records of every agent of
a multi-agent crawl, as one report of the whole crawl.

What it shows, after seeds/003 section VIII:

- download rate over time, pages/s and Mbit/s (Fig. 6), restarts marked;
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
[[rank, pld, in-degree, budget, pages], ...], "host_delays": {seconds: PLDs}}``).

*Several agents* (:func:`write_agents_report`, ``irlscrapy report JOBDIR JOBDIR ...
--out DIR``): the JOBDIRs of one multi-agent crawl's agents make one report, combined as
:mod:`irlscrapy.report.merge` says: counters summed over the agents, the download rate
and ``p`` summed on a common time grid (``grid_seconds`` per bin), the per-PLD tables
over the union of the agents' PLDs (each agent owns disjoint PLDs), each agent's
restarts marked in its colour, and a table of the agents. ``report.json`` then has
``"state_dirs"`` in place of ``"state_dir"``, an ``"agents"`` list (agent, state_dir,
runs, restarts, pages, finish_reason, star) and ``"grid_seconds"``; the summary adds
``agents`` and, with STAR, ``shared_plds``. The stats table has a column per agent.

matplotlib is imported here only (Agg, no display), so a crawl never loads it.
"""

from __future__ import annotations

import datetime
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from irlscrapy.report.data import report_data
from irlscrapy.report.merge import agent_names, agents_data
from irlscrapy.report.reader import Meter, read_crawl, read_crawls

REPORT = "report.html"
REPORT_JSON = "report.json"
PNG_RATE = "download_rate.png"
PNG_UNIQUENESS = "uniqueness.png"
PNG_PLDS = "pages_per_pld.png"
PNG_DELAYS = "host_delays.png"

#: The Scrapy stats table: its title, one column per crawl (name, stats.json's stats).
StatsTable = tuple[str, list[tuple[str, dict[str, Any] | None]]]


def write_report(
    state_dir: Path, out: Path, meter: Meter | None = None, *, check_lock: bool = True
) -> Path:
    """Read the crawl at ``state_dir`` and write its report into ``out``; returns the
    HTML page's path. ``check_lock``: see read_crawl."""
    crawl = read_crawl(state_dir, meter, check_lock=check_lock)
    stats: StatsTable = (f"Scrapy stats (run {crawl.stats_run})", [("value", crawl.stats)])
    return _write(report_data(crawl), stats, out)


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
    _plots(data, out)
    (out / REPORT_JSON).write_text(json.dumps(data, indent=1), encoding="utf-8")
    page = out / REPORT
    page.write_text(_html(data, stats), encoding="utf-8")
    return page


# -- plots -----------------------------------------------------------------------------
def load_plotting() -> Any:
    """matplotlib's Figure, on the Agg backend (imported on first use: a second or more;
    a crawl imports it on a thread when its close begins, irlscrapy.report.timeline)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure


def _plots(data: dict[str, Any], out: Path) -> None:
    Figure = load_plotting()

    start = data["start"]
    unit, seconds = time_unit(data["download_rate"][-1][0] - start if data["download_rate"] else 0)
    # (agent, restarts); one crawl's are unlabelled
    marks = [(a["agent"], a["restarts"]) for a in data["agents"]] if "agents" in data else []
    marks = marks or [("", data["restarts"])]

    fig = _figure(Figure, 4)
    ax = fig.subplots()
    rates = data["download_rate"]
    times = [(t - start) / seconds for t, _, _ in rates]
    ax.plot(times, [r[1] for r in rates], color="tab:blue", label="pages/s")
    ax.set_xlabel(f"{unit} since the crawl began")
    ax.set_ylabel("pages/s")
    right = ax.twinx()
    right.plot(times, [r[2] / 1e6 for r in rates], color="tab:orange", label="Mbit/s")
    right.set_ylabel("Mbit/s")
    for i, (agent, restarts) in enumerate(marks):
        for j, t in enumerate(restarts):
            ax.axvline(
                (t - start) / seconds,
                color=f"C{i + 2}" if agent else "grey",
                linestyle="--",
                label=f"restart of {agent}" if agent and j == 0 else None,
            )
    ax.set_title("Download rate (Fig. 6)")
    # one legend for both axes, inside the plot (a figure legend overlaps the right axis)
    lines = [*ax.get_legend_handles_labels()[0], *right.get_legend_handles_labels()[0]]
    ax.legend(lines, [line.get_label() for line in lines], loc="best")
    fig.savefig(out / PNG_RATE, dpi=100)

    fig = _figure(Figure, 4)
    ax = fig.subplots()
    points = data["uniqueness"]
    ax.plot([u[0] for u in points], [u[1] for u in points], marker=".")
    ax.set_ylim(0, 1)
    ax.set_xlabel("pages crawled")
    ax.set_ylabel("p (new URLs / URLs checked)")
    ax.set_title("Probability of uniqueness p (Fig. 7(a))")
    fig.savefig(out / PNG_UNIQUENESS, dpi=100)

    if data["star"]:
        fig = _figure(Figure, 4)
        ax = fig.subplots()
        bins = [b for b in data["in_degree_bins"] if b[0] > 0]
        ax.plot([b[0] for b in bins], [b[4] for b in bins], marker="o", label="mean")
        ax.plot([b[0] for b in bins], [b[5] for b in bins], marker="x", label="median")
        ax.set_xscale("log", base=2)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("PLD in-degree (bin's lowest)")
        ax.set_ylabel("pages crawled per PLD")
        ax.set_title("Pages per PLD by in-degree (Fig. 7(b))")
        ax.legend()
        fig.savefig(out / PNG_PLDS, dpi=100)

        fig = _figure(Figure, 3)
        ax = fig.subplots()
        delays = data["host_delays"]
        ax.bar(range(len(delays)), list(delays.values()))
        ax.set_xticks(range(len(delays)), [f"{float(k):g}" for k in delays])
        ax.set_yscale("log")
        ax.set_xlabel("host delay tau_h (s) implied by the PLD's budget")
        ax.set_ylabel("crawled PLDs")
        ax.set_title("Politeness: host delays in force at the end")
        fig.savefig(out / PNG_DELAYS, dpi=100)


def _figure(figure: Any, height: float) -> Any:
    """An 8-inch-wide figure of ``height`` inches with fixed margins for the axis labels
    and the title: matplotlib's constrained layout measures every tick label and took
    two thirds of the report's time, which a demo waits for at its close."""
    fig = figure(figsize=(8, height))
    fig.subplots_adjust(left=0.1, right=0.9, bottom=0.6 / height, top=1 - 0.4 / height)
    return fig


def time_unit(span: float) -> tuple[str, float]:
    """The unit of a time axis spanning ``span`` seconds, and its length in seconds."""
    for unit, seconds, up_to in (
        ("seconds", 1, 120),
        ("minutes", 60, 7200),
        ("hours", 3600, 172800),
    ):
        if span <= up_to:
            return unit, seconds
    return "days", 86400


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
    "unique_urls": "new URLs (URLseen)",
    "duplicates": "URLs seen before (URLseen)",
    "p": "p: new URLs / URLs checked",
    "seconds_crawling": "seconds crawling",
    "runs": "runs",
    "finish_reason": "finish reason",
    "plds": "PLDs known to STAR",
    "crawled_plds": "PLDs crawled",
    "spam_pages": "pages of spam farms",
    "spam_share": "share of spam pages",
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
    restarts = f", {len(data['restarts'])} restart(s) (dashed lines)" if data["restarts"] else ""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>irlscrapy crawl report"
        "</title><style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;"
        "padding:2px 8px;text-align:right}th{text-align:left}.note{color:#a00}</style>"
        "</head><body>",
    ]
    if "agents" in data:
        parts.append(
            f"<h1>Crawl report</h1><p>One crawl of {len(data['agents'])} agents, from their "
            f"state directories; {s['runs']} run(s){restarts}; written {written}.</p>"
        )
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
    else:
        parts.append(
            f"<h1>Crawl report</h1><p>State directory <code>{e(data['state_dir'])}</code>; "
            f"{s['runs']} run(s){restarts}; written {written}.</p>"
        )
    parts += [f"<p class='note'>{e(note)}</p>" for note in data["notes"]]
    parts.append("<h2>Summary</h2>")
    parts.append(
        _table(
            ("figure", "value"),
            [(SUMMARY_LABELS.get(k, k), _fmt(s[k])) for k in summary_keys(s)],
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
    parts.append("<h2>Download rate</h2>")
    if "grid_seconds" in data:
        parts.append(
            f"<p>The sum of the agents' rates, averaged over {data['grid_seconds']:g} s "
            "bins of wall-clock time.</p>"
        )
    parts.append(f"<img src='{PNG_RATE}' alt='download rate'>")
    parts.append(
        _table(
            ("seconds since start", "pages/s", "Mbit/s"),
            [
                (f"{t - data['start']:.0f}", f"{p:.2f}", f"{b / 1e6:.3f}")
                for t, p, b in data["download_rate"]
            ],
            table_id="download_rate",
        )
    )
    parts.append(
        f"<h2>Probability of uniqueness</h2><p>p over the whole crawl: {_fmt(s['p'])}</p>"
        f"<img src='{PNG_UNIQUENESS}' alt='uniqueness'>"
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
            f"<p>{_fmt(s['plds'])} PLDs known to STAR, {_fmt(s['crawled_plds'])} crawled."
            f"</p><img src='{PNG_PLDS}' alt='pages per PLD'>"
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
            "<p>Crawled PLDs by the host delay their final budget implies (tau_h before "
            "Crawl-delay and back-off, which only raise it).</p>"
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
                [(e(k), *(e(_fmt(table.get(k))) for _, table in columns)) for k in names],
                table_id="stats",
            )
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _table(
    header: tuple[str, ...],
    rows: list[tuple[str, ...]],
    keys: list[str] | None = None,
    table_id: str = "",
) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        key = f" data-key='{html.escape(keys[i])}'" if keys else ""
        cells = f"<th>{row[0]}</th>" + "".join(f"<td>{c}</td>" for c in row[1:])
        body.append(f"<tr{key}>{cells}</tr>")
    return f"<table id='{table_id}'><tr>{head}</tr>{''.join(body)}</table>"


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
