"""The status endpoint's HTML page: a console for the operator of a running crawl.

:func:`render` builds the page from the endpoint's figures (:mod:`irlscrapy.report.status`)
and reads of the crawl (RAM only, as the figures are):

- the state (running, paused, stopping) and the controls: Pause, Resume, Stop, each a
  form that POSTs with the token (:mod:`irlscrapy.report.controls`); without
  ``IRL_STATUS_TOKEN`` the page says the controls are off;
- progress as in the log line: with ``CLOSESPIDER_PAGECOUNT`` a bar, its share and
  ETA; responses, pages per second and the time crawled;
- pages per second over the last samples, a chart with labelled axes;
- the frontier at a glance (URLseen, BEAST, workbench, held and parked URLs);
- the busiest hosts and IPs of the workbench (queued URLs, when next due, back-off,
  failures in a row);
- the last warnings and errors logged (:class:`RecentProblems`);
- the job directory and the settings the crawl set unlike Scrapy's and irlscrapy's
  defaults (a name holding TOKEN, PASSWORD, SECRET or KEY is shown as ``***``);
- every figure of ``/status.json``, sizes in human units.

The page refreshes its ``<main>`` every :data:`REFRESH_SECONDS` by fetching itself
(the controls stay put, and a form is never reloaded under the operator's hand); a
browser without scripts reloads the whole page instead. Every link and form carries
the token the page was opened with.
"""

from __future__ import annotations

import collections
import html
import logging
import time
import urllib.parse
import warnings
from typing import Any

from scrapy.crawler import Crawler
from scrapy.settings import Settings

from irlscrapy import defaults
from irlscrapy.report.controls import CrawlControls
from irlscrapy.report.figures import AGENT_GAUGES, COUNTERS, GAUGES
from irlscrapy.report.meter import bar
from irlscrapy.scheduler.irl import IRLScheduler

REFRESH_SECONDS = 5
#: Rows of the busiest hosts and IPs, and of the last problems.
TOP = 10
SECRET_WORDS = ("TOKEN", "PASSWORD", "SECRET", "KEY")


class RecentProblems(logging.Handler):
    """The last ``size`` WARNING and ERROR records of the crawl, as (time, level, logger,
    message), for the console; attached to the root logger while the spider runs."""

    def __init__(self, size: int = TOP) -> None:
        super().__init__(logging.WARNING)
        self.records: collections.deque[tuple[float, str, str, str]] = collections.deque(
            maxlen=size
        )

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: show it as it was given
            message = str(record.msg)
        self.records.append((record.created, record.levelname, record.name, message))


def render(
    crawler: Crawler,
    figures: dict[str, float],
    rates: list[float],
    sample_seconds: float,
    controls: CrawlControls,
    problems: RecentProblems,
    token: str,
    controls_on: bool,
) -> bytes:
    """The page; its links and forms carry ``token`` (the one it was asked with)."""
    query = "?" + urllib.parse.urlencode({"token": token}) if token else ""
    q = html.escape(query)
    spider = html.escape(crawler.spider.name if crawler.spider else "-")
    state = "stopping" if controls.stopping else "paused" if controls.paused else "running"
    main = "\n".join(
        [
            f'<p class="state {state}" id="state">{state}'
            + (f" ({_duration(controls.paused_seconds())} so far)" if controls.paused else "")
            + "</p>",
            _progress(crawler, figures, controls),
            "<h2>Pages per second</h2>",
            _rate_chart(rates, sample_seconds),
            '<div class="columns">',
            _frontier(figures),
            _job(crawler),
            "</div>",
            _busiest(crawler),
            _problems(problems),
            _settings(crawler),
            "<h2>All figures</h2>",
            _figures_table(figures),
        ]
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,">
<noscript><meta http-equiv="refresh" content="{REFRESH_SECONDS}"></noscript>
<title>irlscrapy: {spider}</title>
<style>{STYLE}</style></head>
<body><header><h1>irlscrapy: {spider}</h1>
{_controls(q, controls_on, state)}
<nav><a href="status.json{q}">JSON</a> <a href="metrics{q}">Prometheus</a>
<span class="quiet">refreshes every {REFRESH_SECONDS} s</span></nav></header>
<main id="main">
{main}
</main>
<script>{SCRIPT}</script>
</body></html>
"""
    return page.encode()


def _controls(query: str, on: bool, state: str) -> str:
    """The buttons; those that would do nothing now are disabled (the script keeps
    them so as the state changes)."""
    if not on:
        return (
            '<p class="quiet" id="controls">Controls are off: set IRL_STATUS_TOKEN to '
            "pause, resume or stop the crawl from here.</p>"
        )
    idle = {"running": "resume", "paused": "pause"}.get(state, "pause resume stop")
    buttons = "".join(
        f'<form method="post" action="{action}{query}"><button type="submit" id="{action}"'
        f"{' disabled' if action in idle.split() else ''}>{action.capitalize()}</button></form>"
        for action in ("pause", "resume", "stop")
    )
    return f'<div id="controls">{buttons}<span id="said" role="status"></span></div>'


def _progress(crawler: Crawler, figures: dict[str, float], controls: CrawlControls) -> str:
    """As the log line: responses, their rate over the time crawled (time paused left
    out), and with a page budget its bar, share and ETA (none while paused)."""
    responses = figures.get("pages", 0.0)
    elapsed = max(0.0, _elapsed(crawler) - controls.paused_seconds())
    rate = responses / elapsed if elapsed > 0 else 0.0
    line = (
        f"{responses:,.0f} responses in {_duration(elapsed)} crawling ({rate:,.1f}/s overall, "
        f"{figures.get('pages_per_second', 0.0):,.1f}/s now)"
    )
    budget = crawler.settings.getint("CLOSESPIDER_PAGECOUNT")
    if budget <= 0:
        return f'<p id="progress">{line}; no page budget (CLOSESPIDER_PAGECOUNT), no ETA</p>'
    share = min(responses / budget, 1.0)
    eta = _duration((budget - responses) / rate) if rate > 0 and responses < budget else "-"
    if controls.paused:
        eta = "- (paused)"
    return (
        f'<p id="progress"><progress max="{budget}" value="{min(responses, budget):.0f}">'
        f"{html.escape(bar(share, 20))}</progress> {share:.0%} of {budget:,} responses, "
        f"ETA {eta}<br>{line}</p>"
    )


def _elapsed(crawler: Crawler) -> float:
    start = crawler.stats.get_value("start_time") if crawler.stats else None
    if start is None:
        return 0.0
    return max(0.0, time.time() - start.timestamp())


def _rate_chart(rates: list[float], step: float, width: int = 560, height: int = 140) -> str:
    """An SVG line chart: pages per second (y, from 0 to a round top) against seconds
    ago (x, to now), both axes labelled."""
    if len(rates) < 2:
        return '<p class="quiet">(the chart starts after two samples)</p>'
    left, bottom, right, top_pad = 48, 28, 10, 10
    plot_w, plot_h = width - left - right, height - bottom - top_pad
    top = _round_up(max(rates))
    span = (len(rates) - 1) * step
    x = [left + i * plot_w / (len(rates) - 1) for i in range(len(rates))]
    y = [top_pad + plot_h - r / top * plot_h for r in rates]
    points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y, strict=True))
    base = top_pad + plot_h
    ticks = []
    for frac in (0.0, 0.5, 1.0):
        ty = top_pad + plot_h - frac * plot_h
        ticks.append(
            f'<line x1="{left - 4}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" '
            f'class="grid"/><text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{_number(top * frac)}</text>"
        )
    for frac in (0.0, 0.5, 1.0):
        tx = left + frac * plot_w
        ago = span * (1 - frac)
        label = "now" if ago == 0 else f"-{_duration(ago)}"
        ticks.append(f'<text x="{tx:.1f}" y="{base + 16}" text-anchor="middle">{label}</text>')
    return (
        f'<svg id="rate" width="{width}" height="{height}" role="img" '
        f'aria-label="pages per second over the last {_duration(span)}, peak '
        f'{max(rates):,.1f}">{"".join(ticks)}'
        f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" class="axis"/>'
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{base}" class="axis"/>'
        f'<polyline fill="none" stroke="steelblue" stroke-width="1.5" points="{points}"/>'
        f'<text x="12" y="{top_pad + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top_pad + plot_h / 2:.0f})">pages/s</text></svg>'
        f'<p class="quiet">one sample every {step:g} s; peak {max(rates):,.1f} pages/s</p>'
    )


FRONTIER = (
    ("urlseen_pending", "URLseen: pending a check"),
    ("beast_urls", "BEAST: URLs waiting for admission"),
    ("dns_waiting_urls", "waiting for DNS"),
    ("workbench_urls", "workbench: URLs admitted"),
    ("workbench_hosts", "workbench: hosts"),
    ("workbench_ips", "workbench: IPs"),
    ("ips_due", "IPs due now"),
    ("fetches_in_flight", "fetches in flight"),
    ("held_urls", "held (origin in back-off)"),
    ("parked_urls", "parked on disk"),
)


def _frontier(figures: dict[str, float]) -> str:
    if "workbench_urls" not in figures:
        return '<section><h2>Frontier</h2><p class="quiet">not the IRL scheduler</p></section>'
    rows = "".join(
        f"<tr><td>{label}</td><td>{_number(figures.get(name, 0))}</td></tr>"
        for name, label in FRONTIER
    )
    return f'<section><h2>Frontier</h2><table id="frontier">{rows}</table></section>'


def _job(crawler: Crawler) -> str:
    scheduler = IRLScheduler.of(crawler)
    state_dir = scheduler.state_dir if scheduler is not None else None
    jobdir = crawler.settings.get("JOBDIR") or "-"
    rows = [("JOBDIR", str(jobdir)), ("state directory", str(state_dir or "-"))]
    if scheduler is not None and scheduler.state.temporary:
        rows.append(("", "a temporary one: removed at the close, nothing to resume"))
    body = "".join(
        f"<tr><td>{html.escape(k)}</td><td><code>{html.escape(v)}</code></td></tr>" for k, v in rows
    )
    return f'<section><h2>Job</h2><table id="job">{body}</table></section>'


def _busiest(crawler: Crawler) -> str:
    scheduler = IRLScheduler.of(crawler)
    if scheduler is None or scheduler.frontier is None:
        return ""
    workbench = scheduler.frontier.workbench
    now = scheduler.waker.clock.seconds()
    hosts = sorted(workbench.hosts.values(), key=lambda s: -len(s.urls))[:TOP]
    host_rows = "".join(
        f"<tr><td>{html.escape(s.host)}</td><td>{html.escape(s.ip)}</td>"
        f"<td>{len(s.urls):,}</td><td>{_due(s.next_fetch, now, s.in_flight)}</td>"
        f"<td>{_duration(s.backoff) if s.backoff else '-'}</td><td>{s.failures}</td></tr>"
        for s in hosts
    )
    ips = sorted(workbench.ips.values(), key=lambda e: -e.urls)[:TOP]
    ip_rows = "".join(
        f"<tr><td>{html.escape(e.ip)}</td><td>{e.host_count:,}</td><td>{e.urls:,}</td>"
        f"<td>{_due(max(e.next_fetch, e.not_before), now, e.in_flight)}</td>"
        f"<td>{_duration(e.backoff) if e.backoff else '-'}</td></tr>"
        for e in ips
    )
    empty = '<tr><td colspan="6" class="quiet">none</td></tr>'
    return (
        '<div class="columns"><section><h2>Busiest hosts</h2><table id="hosts"><tr>'
        "<th>host</th><th>IP</th><th>queued</th><th>due</th><th>back-off</th>"
        f"<th>failures</th></tr>{host_rows or empty}</table></section>"
        '<section><h2>Busiest IPs</h2><table id="ips"><tr><th>IP</th><th>hosts</th>'
        f"<th>queued</th><th>due</th><th>back-off</th></tr>{ip_rows or empty}</table>"
        "</section></div>"
    )


def _due(when: float, now: float, in_flight: bool) -> str:
    if in_flight:
        return "fetching"
    if when == float("inf"):
        return "closed"
    return "now" if when <= now else f"in {_duration(when - now)}"


def _problems(problems: RecentProblems) -> str:
    rows = "".join(
        f'<tr class="{level.lower()}"><td>{time.strftime("%H:%M:%S", time.localtime(at))}'
        f"</td><td>{level}</td><td>{html.escape(name)}</td>"
        f"<td>{html.escape(message[:300])}</td></tr>"
        for at, level, name, message in reversed(problems.records)
    )
    body = f"<table>{rows}</table>" if rows else '<p class="quiet">none so far</p>'
    return f'<section id="problems"><h2>Last warnings and errors</h2>{body}</section>'


def _settings(crawler: Crawler) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td><code>{html.escape(value)}</code></td></tr>"
        for name, value in changed_settings(crawler.settings)
    )
    return (
        '<section><h2>Settings unlike the defaults</h2><table id="settings">'
        f"{rows}</table></section>"
    )


def changed_settings(settings: Any) -> list[tuple[str, str]]:
    """(name, value shown) of every setting whose value differs from its default
    (irlscrapy's for IRL_*, else Scrapy's), sorted; secrets masked."""
    changed = []
    scrapy_defaults = Settings()
    with warnings.catch_warnings():  # reading a deprecated name warns: not the user's doing
        warnings.simplefilter("ignore")
        pairs = [
            (
                name,
                settings[name],
                defaults.BY_NAME[name].default
                if name in defaults.BY_NAME
                else scrapy_defaults.get(name),
            )
            for name in sorted(dict(settings))
        ]
    for name, value, default in pairs:
        if value == default or (default is None and not value):
            continue
        if str(value) == str(default):
            continue  # a command-line string of the default's value
        shown = "***" if any(word in name for word in SECRET_WORDS) else _shown(value)
        changed.append((name, shown))
    return changed


def _shown(value: Any) -> str:
    if hasattr(value, "copy_to_dict"):  # a BaseSettings (ITEM_PIPELINES and the like)
        value = value.copy_to_dict()
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 200 else text[:200] + "..."


def _figures_table(figures: dict[str, float]) -> str:
    meanings = {**{k: v[1] for k, v in COUNTERS.items()}, **GAUGES, **AGENT_GAUGES}
    rows = "\n".join(
        f"<tr><td>{html.escape(name)}</td><td>{_figure(name, value)}</td>"
        f'<td class="quiet">{html.escape(meanings.get(name, name))}</td></tr>'
        for name, value in figures.items()
    )
    return f'<table id="figures">{rows}</table>'


def _figure(name: str, value: float) -> str:
    if name.endswith("_bytes"):
        return human_bytes(value)
    if name.endswith("_seconds"):
        return _duration(value)
    return _number(value)


def human_bytes(value: float) -> str:
    """``137228288`` -> ``130.9 MiB``."""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _duration(seconds: float) -> str:
    """``75`` -> ``1 min 15 s``; ``4000`` -> ``1 h 6 min``; ``2.5`` -> ``2.5 s``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _number(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def _round_up(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten at or above ``value`` (1 at least)."""
    top = 1.0
    while top < value:
        for factor in (2, 2.5, 2):
            top *= factor
            if top >= value:
                break
    return top


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:72em}
h1{margin:0 0 .3em}h2{font-size:1.1em;margin:1.2em 0 .4em}
td,th{padding:2px 10px;text-align:left;vertical-align:top}
td{font-variant-numeric:tabular-nums}#figures td:nth-child(2){white-space:nowrap}
#frontier td:nth-child(2),#hosts td:nth-child(n+3),#ips td:nth-child(n+2),
#figures td:nth-child(2){text-align:right}
.quiet{color:#777}.columns{display:flex;flex-wrap:wrap;gap:0 3em}
#controls{margin:.5em 0}#controls form{display:inline;margin-right:.5em}
button{font-size:1em;padding:.3em 1.2em}#said{margin-left:1em;color:#555}
.state{font-weight:bold;font-size:1.1em}.running{color:#2a7d2a}.paused{color:#b36b00}
.stopping{color:#b00}progress{width:20em;vertical-align:middle}
tr.error td{color:#b00}tr.warning td{color:#8a5a00}
svg text{font-size:11px;fill:#555}svg .axis{stroke:#555}svg .grid{stroke:#ddd}
code{font-size:.9em;word-break:break-all}#settings td:last-child{max-width:52em}"""

#: Submits the controls without leaving the page, and refreshes <main> by fetching the
#: page again (with its own query, hence its token).
SCRIPT = """
const said = document.getElementById("said");
async function refresh() {
  try {
    const answer = await fetch(location.pathname + location.search, {cache: "no-store"});
    if (!answer.ok) return;
    const page = new DOMParser().parseFromString(await answer.text(), "text/html");
    document.getElementById("main").replaceWith(page.getElementById("main"));
    for (const button of document.querySelectorAll("#controls button")) {
      button.disabled = page.getElementById(button.id).disabled;
    }
  } catch (error) { /* the crawl has ended: keep the last figures */ }
}
for (const form of document.querySelectorAll("#controls form")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (form.action.includes("/stop") &&
        !confirm("Stop the crawl? It closes gracefully, as on Ctrl-C.")) return;
    const answer = await fetch(form.action, {method: "POST",
                                             headers: {"Accept": "application/json"}});
    said.textContent = answer.ok ? (await answer.json()).result : "refused: " + answer.status;
    refresh();
  });
}
setInterval(refresh, REFRESH_MS);
""".replace("REFRESH_MS", str(REFRESH_SECONDS * 1000))
