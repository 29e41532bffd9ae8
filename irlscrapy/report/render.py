"""The crawl report: ``report.html``, its PNG plots and ``report.json``, from a finished
crawl's records (:mod:`irlscrapy.report.reader`).

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
with each run); ``stats.json`` holds the last run's full Scrapy stats, shown at the end.
Every plot's numbers are in a table under it and in ``report.json``
(``{"summary": {...}, "status": {...}, "content_types": {...}, "robots": {...},
"download_rate": [[t, pages/s, bits/s], ...], "uniqueness": [[pages, p, checked], ...],
"in_degree_bins": [[low, high, plds, pages, mean, median], ...], "top_plds": [[rank,
pld, in-degree, budget, pages], ...], "host_delays": {seconds: PLDs}}``).

matplotlib is imported here only (Agg, no display), so a crawl never loads it.
"""

from __future__ import annotations

import datetime
import html
import json
from pathlib import Path
from typing import Any

from irlscrapy.report import analysis
from irlscrapy.report.reader import CrawlRecords, Meter, read_crawl

REPORT = "report.html"
REPORT_JSON = "report.json"
PNG_RATE = "download_rate.png"
PNG_UNIQUENESS = "uniqueness.png"
PNG_PLDS = "pages_per_pld.png"
PNG_DELAYS = "host_delays.png"
#: Timeline lines kept for the rate and ``p`` (longer crawls average over longer windows).
POINTS = 500
#: Settings shown under "Politeness in force".
POLITENESS_SETTINGS = (
    "IRL_HOST_DELAY",
    "IRL_HOST_DELAY_MIN",
    "IRL_IP_DELAY",
    "IRL_IP_DELAY_MIN",
    "IRL_BEAST_BUDGET",
    "IRL_STAR_MAX_BUDGET",
    "IRL_ROBOTS_MAX_CRAWL_DELAY",
    "CONCURRENT_REQUESTS",
    "ROBOTSTXT_OBEY",
)


def write_report(
    state_dir: Path, out: Path, meter: Meter | None = None, *, check_lock: bool = True
) -> Path:
    """Read the crawl at ``state_dir`` and write its report into ``out``; returns the
    HTML page's path. ``check_lock``: see read_crawl."""
    crawl = read_crawl(state_dir, meter, check_lock=check_lock)
    out.mkdir(parents=True, exist_ok=True)
    data = report_data(crawl)
    _plots(crawl, data, out)
    (out / REPORT_JSON).write_text(json.dumps(data, indent=1), encoding="utf-8")
    page = out / REPORT
    page.write_text(_html(crawl, data), encoding="utf-8")
    return page


def _last_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last: dict[int, dict[str, Any]] = {}
    for line in lines:
        last[line["run"]] = line
    return list(last.values())


def run_total(lines: list[dict[str, Any]], name: str) -> float:
    """Figure ``name`` summed over the last line of every run."""
    return sum(line.get(name, 0) for line in _last_lines(lines))


def run_counts(lines: list[dict[str, Any]], name: str) -> dict[str, float]:
    """The counts of dict ``name`` summed over the last line of every run."""
    total: dict[str, float] = {}
    for line in _last_lines(lines):
        for key, count in line.get(name, {}).items():
            total[key] = total.get(key, 0) + count
    return dict(sorted(total.items()))


def report_data(crawl: CrawlRecords) -> dict[str, Any]:
    """The numbers of every table and plot (``report.json``)."""
    lines = crawl.lines
    samples = analysis.stitch(analysis.thin(crawl.samples, POINTS))  # thin keeps run ends
    unique, duplicates = run_total(lines, "unique_urls"), run_total(lines, "duplicates")
    stats = crawl.stats or {}
    summary: dict[str, Any] = {
        "pages": run_total(lines, "pages"),
        "unique_urls": unique,
        "duplicates": duplicates,
        "p": analysis.overall_uniqueness(unique, duplicates),
        "links": run_total(lines, "links"),
        "requests": run_total(lines, "requests"),
        "download_errors": run_total(lines, "download_errors"),
        "bytes": run_total(lines, "bytes"),
        "seconds_crawling": run_total(lines, "uptime"),
        "runs": crawl.runs,
        "finish_reason": stats.get("finish_reason") if crawl.stats_run == crawl.runs else None,
    }
    invitro_pages = run_total(lines, "invitro_pages")
    if invitro_pages:  # the in-vitro web's ground truth: which pages were of spam farms
        summary["spam_pages"] = run_total(lines, "spam_pages")
        summary["spam_share"] = summary["spam_pages"] / invitro_pages
    data: dict[str, Any] = {
        "state_dir": str(crawl.state_dir),
        "summary": summary,
        "notes": crawl.notes,
        "restarts": crawl.restarts,
        "status": run_counts(lines, "status"),
        "content_types": run_counts(lines, "content_types"),
        "robots": run_counts(lines, "robots"),
        "download_rate": [list(r) for r in analysis.download_rates(samples)],
        "uniqueness": [list(u) for u in analysis.uniqueness(samples)],
        "start": samples[0].t,
        "politeness": {k: crawl.settings.get(k) for k in POLITENESS_SETTINGS},
        "star": crawl.star is not None,
        "in_degree_bins": [],
        "top_plds": [],
        "host_delays": {},
    }
    if crawl.star is not None:
        summary["plds"] = crawl.star.plds
        summary["crawled_plds"] = crawl.star.crawled_plds
        data["in_degree_bins"] = [list(b) for b in crawl.star.bins.bins()]
        data["top_plds"] = [list(row) for row in crawl.star.leaders]
        data["host_delays"] = {str(k): v for k, v in crawl.star.host_delays.items()}
    return data


# -- plots -----------------------------------------------------------------------------
def _plots(crawl: CrawlRecords, data: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    start = data["start"]
    unit, seconds = time_unit(data["download_rate"][-1][0] - start if data["download_rate"] else 0)
    restarts = [(t - start) / seconds for t in data["restarts"]]

    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.subplots()
    rates = data["download_rate"]
    times = [(t - start) / seconds for t, _, _ in rates]
    ax.plot(times, [r[1] for r in rates], color="tab:blue", label="pages/s")
    ax.set_xlabel(f"{unit} since the crawl began")
    ax.set_ylabel("pages/s")
    right = ax.twinx()
    right.plot(times, [r[2] / 1e6 for r in rates], color="tab:orange", label="Mbit/s")
    right.set_ylabel("Mbit/s")
    for x in restarts:
        ax.axvline(x, color="grey", linestyle="--")
    ax.set_title("Download rate (Fig. 6)")
    fig.legend(loc="upper right")
    fig.savefig(out / PNG_RATE, dpi=100)

    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.subplots()
    points = data["uniqueness"]
    ax.plot([u[0] for u in points], [u[1] for u in points], marker=".")
    ax.set_ylim(0, 1)
    ax.set_xlabel("pages crawled")
    ax.set_ylabel("p (new URLs / URLs checked)")
    ax.set_title("Probability of uniqueness p (Fig. 7(a))")
    fig.savefig(out / PNG_UNIQUENESS, dpi=100)

    if data["star"]:
        fig = Figure(figsize=(8, 4), layout="constrained")
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

        fig = Figure(figsize=(8, 3), layout="constrained")
        ax = fig.subplots()
        delays = data["host_delays"]
        ax.bar([f"{float(k):g}" for k in delays], list(delays.values()))
        ax.set_yscale("log")
        ax.set_xlabel("host delay tau_h (s) implied by the PLD's budget")
        ax.set_ylabel("crawled PLDs")
        ax.set_title("Politeness: host delays in force at the end")
        fig.savefig(out / PNG_DELAYS, dpi=100)


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
def _html(crawl: CrawlRecords, data: dict[str, Any]) -> str:
    e = html.escape
    s = data["summary"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>irlscrapy crawl report"
        "</title><style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;"
        "padding:2px 8px;text-align:right}th{text-align:left}.note{color:#a00}</style>"
        "</head><body>",
        f"<h1>Crawl report</h1><p>State directory <code>{e(data['state_dir'])}</code>; "
        f"{s['runs']} run(s)"
        + (f", {len(data['restarts'])} restart(s) (dashed lines)" if data["restarts"] else "")
        + f"; written {e(datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds'))}."
        "</p>",
    ]
    parts += [f"<p class='note'>{e(note)}</p>" for note in data["notes"]]
    parts.append("<h2>Summary</h2>")
    parts.append(
        _table(
            ("figure", "value"),
            [(k, _fmt(v)) for k, v in s.items()],
            keys=list(s),
            table_id="summary",
        )
    )
    if "spam_share" in s:
        parts.append(
            f"<p id='spam'>Pages of spam farms (the in-vitro web's ground truth): "
            f"{_fmt(s['spam_pages'])}, {s['spam_share']:.2%} of the pages the spider handled."
            "</p>"
        )
    parts.append(f"<h2>Download rate</h2><img src='{PNG_RATE}' alt='download rate'>")
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
    if crawl.stats is not None:
        parts.append(f"<h2>Scrapy stats (run {crawl.stats_run})</h2>")
        parts.append(
            _table(
                ("stat", "value"),
                [(e(k), e(_fmt(v))) for k, v in sorted(crawl.stats.items())],
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
