"""The report's PNG plots, from the numbers of ``report.json``
(:func:`irlscrapy.report.data.report_data`, :func:`irlscrapy.report.merge.agents_data`).

- the download rate (Fig. 6): pages/s above, Mbit/s below, each on an axis of its own
  over one time axis; a resumed crawl's stop is a shaded gap, its restart a dashed line
  (a multi-agent crawl's restarts: one dashed line per agent's, in its colour);
- ``p`` against pages crawled (Fig. 7(a)), from 0 pages: each point's ``p`` as a step
  over the pages crawled since the point before (URLseen checks in batches);
- pages per PLD by in-degree (Fig. 7(b)) and the PLDs by host delay, with STAR only.

The time axis's unit (:func:`time_axis`) is the one of the rate's table in the HTML.
matplotlib is imported here only (Agg, no display), so a crawl never loads it.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

PNG_RATE = "download_rate.png"
PNG_UNIQUENESS = "uniqueness.png"
PNG_PLDS = "pages_per_pld.png"
PNG_DELAYS = "host_delays.png"
#: Fewer points than this are drawn with a dot each.
DOTTED = 200


def load_plotting() -> Any:
    """matplotlib's Figure, on the Agg backend (imported on first use: a second or more;
    a crawl imports it on a thread when its close begins, irlscrapy.report.timeline)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure


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


def time_axis(data: dict[str, Any]) -> tuple[str, float]:
    """The unit of the report's time axes: of the span from the crawl's start to its last
    rate (or its last run's end)."""
    ends = [r[0] for r in data["download_rate"][-1:]]
    ends += [stop for _, stop in data.get("run_spans", [])]
    return time_unit(max(ends, default=data["start"]) - data["start"])


def stops(data: dict[str, Any]) -> list[tuple[float, float, int]]:
    """(stopped, restarted, run) of every resume of one crawl: the gaps between its runs."""
    spans = sorted(data.get("run_spans", []))
    return [(a[1], b[0], run) for run, (a, b) in enumerate(itertools.pairwise(spans), 2)]


def broken(rates: list[list[float]], gaps: list[tuple[float, float, int]]) -> list[list[float]]:
    """``rates`` with a row of NaN wherever a gap falls between two rows, so that a line
    drawn through them breaks there."""
    restarts = sorted(restart for _, restart, _ in gaps)
    out: list[list[float]] = []
    for row in rates:
        while restarts and restarts[0] <= row[0]:
            if out:
                out.append([restarts[0], math.nan, math.nan])
            restarts.pop(0)
        out.append(row)
    return out


def write_plots(data: dict[str, Any], out: Path) -> None:
    figure = load_plotting()
    rate_figure(figure, data).savefig(out / PNG_RATE, dpi=100)
    uniqueness_figure(figure, data).savefig(out / PNG_UNIQUENESS, dpi=100)
    if data["star"]:
        _pages_per_pld(figure, data, out / PNG_PLDS)
        _host_delays(figure, data, out / PNG_DELAYS)


def rate_figure(figure: Any, data: dict[str, Any]) -> Any:
    """Fig. 6 (see the module docstring), drawn on matplotlib's ``figure`` class."""
    start = data["start"]
    unit, seconds = time_axis(data)
    gaps = stops(data)
    rates = broken(data["download_rate"], gaps)
    times = [(r[0] - start) / seconds for r in rates]
    marker = "." if len(rates) < DOTTED else None
    fig = _figure(figure, 5.5)
    fig.subplots_adjust(hspace=0.12)
    pages, mbits = fig.subplots(2, 1, sharex=True)
    pages.plot(times, [r[1] for r in rates], color="tab:blue", marker=marker)
    pages.set_ylabel("pages/s")
    mbits.plot(times, [r[2] / 1e6 for r in rates], color="tab:orange", marker=marker)
    mbits.set_ylabel("Mbit/s")
    mbits.set_xlabel(f"{unit} since the crawl began")
    for ax in (pages, mbits):
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
    for stopped, restarted, run in gaps:
        for ax in (pages, mbits):
            ax.axvspan((stopped - start) / seconds, (restarted - start) / seconds, color="0.85")
            ax.axvline((restarted - start) / seconds, color="grey", linestyle="--")
        pages.annotate(
            f"restart (run {run})",
            ((restarted - start) / seconds, 1),
            xycoords=("data", "axes fraction"),
            xytext=(3, -3),
            textcoords="offset points",
            va="top",
            fontsize="small",
            color="dimgrey",
        )
    if "agents" in data:
        for i, agent in enumerate(data["agents"]):
            for j, t in enumerate(agent["restarts"]):
                for ax in (pages, mbits):
                    ax.axvline(
                        (t - start) / seconds,
                        color=f"C{i + 2}",
                        linestyle="--",
                        label=f"restart of {agent['agent']}" if j == 0 and ax is pages else None,
                    )
        if any(agent["restarts"] for agent in data["agents"]):
            pages.legend(loc="lower left", fontsize="small")
    pages.set_title("Download rate (Fig. 6)")
    return fig


def uniqueness_figure(figure: Any, data: dict[str, Any]) -> Any:
    """Fig. 7(a) (see the module docstring), drawn on matplotlib's ``figure`` class."""
    fig = _figure(figure, 4)
    ax = fig.subplots()
    points = data["uniqueness"]
    # a point's p is over the pages since the one before: a step over them, from 0
    pages = [0.0, *(u[0] for u in points)] if points else []
    shares = [points[0][1], *(u[1] for u in points)] if points else []
    ax.step(pages, shares, where="pre")
    ax.plot(pages[1:], shares[1:], ".", color="tab:blue")
    ax.set_ylim(0, 1)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.set_xlabel("pages crawled")
    ax.set_ylabel("p (new URLs / URLs checked)")
    ax.set_title("Probability of uniqueness p (Fig. 7(a))")
    return fig


def _pages_per_pld(figure: Any, data: dict[str, Any], path: Path) -> None:
    fig = _figure(figure, 4)
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
    fig.savefig(path, dpi=100)


def _host_delays(figure: Any, data: dict[str, Any], path: Path) -> None:
    fig = _figure(figure, 3)
    ax = fig.subplots()
    delays = data["host_delays"]
    bars = ax.bar(range(len(delays)), list(delays.values()), width=0.6)
    ax.bar_label(bars, [f"{n:,}" for n in delays.values()], fontsize="small")
    ax.set_xticks(range(len(delays)), [f"{float(k):g} s" for k in delays])
    ax.set_xlim(-1, max(len(delays), 2))
    ax.set_yscale("log")
    ax.set_ylim(top=max(delays.values(), default=1) * 3)
    ax.set_xlabel("host delay tau_h its budget gives the PLD")
    ax.set_ylabel("crawled PLDs")
    ax.set_title("Politeness: host delays in force at the end")
    fig.savefig(path, dpi=100)


def _figure(figure: Any, height: float) -> Any:
    """An 8-inch-wide figure of ``height`` inches with fixed margins for the axis labels
    and the title: matplotlib's constrained layout measures every tick label and took
    two thirds of the report's time, which a demo waits for at its close."""
    fig = figure(figsize=(8, height))
    fig.subplots_adjust(left=0.1, right=0.95, bottom=0.6 / height, top=1 - 0.4 / height)
    return fig
