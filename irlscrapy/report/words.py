"""The report's words: the summary in plain sentences, one caption per figure, and why
the host delays are what they are, from the numbers of ``report.json``.

No HTML here (:mod:`irlscrapy.report.render` escapes and places the sentences), no
matplotlib; tested with the rendering in tests/component/test_report_figures.py.
"""

from __future__ import annotations

from typing import Any

#: Scrapy's finish reasons, in words; another is shown as it is.
FINISH_REASONS = {
    "finished": "it ran out of URLs to crawl",
    "closespider_pagecount": "it reached CLOSESPIDER_PAGECOUNT",
    "closespider_timeout": "it reached CLOSESPIDER_TIMEOUT",
    "closespider_itemcount": "it reached CLOSESPIDER_ITEMCOUNT",
    "closespider_errorcount": "it reached CLOSESPIDER_ERRORCOUNT",
    "shutdown": "it was stopped (Ctrl-C or a signal)",
}
#: Where the host delay came from (the "open" line's ``pace.source``).
PACE_SOURCES = {
    "IRL_HOST_DELAY": "IRL_HOST_DELAY, as the crawl set it",
    "DOWNLOAD_DELAY": "the project's DOWNLOAD_DELAY (irlscrapy keeps a project's pace)",
    "default": "irlscrapy's default for a focused crawl (neither IRL_HOST_DELAY nor "
    "DOWNLOAD_DELAY was set)",
}


def duration(seconds: float) -> str:
    """``seconds`` as a person says it: 7.3 s, 4 min 12 s, 3 h 5 min."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {s} s"
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m} min"


def count(n: float, one: str, many: str | None = None) -> str:
    return f"{n:,.0f} {one if n == 1 else (many or one + 's')}"


def finish(reason: str | None) -> str:
    if reason is None:
        return "its last run did not close (killed?), so no finish reason was recorded"
    return f"it finished because {FINISH_REASONS.get(reason, reason)}"


def plain_summary(data: dict[str, Any]) -> list[str]:
    """The summary's sentences: what was fetched, what was found, how long, why it ended."""
    s = data["summary"]
    runs = s["runs"]
    runs_said = f"in {count(runs, 'run')}" if runs > 1 else "in one run"
    if "agents" in data:
        runs_said = f"by {count(len(data['agents']), 'agent')}, {count(runs, 'run')} in all"
    other = s.get("ignored_responses", 0)
    sentences = [
        f"The crawl received {count(s['pages'], 'response')} in "
        f"{duration(s['seconds_crawling'])} of crawling {runs_said}: "
        f"{count(s['pages_parsed'], 'page')} parsed by the spider, "
        f"{count(s['robots_responses'], 'robots.txt file')} and "
        f"{count(other, 'other response')} (HTTP errors the spider does not handle); "
        f"{count(s.get('download_errors', 0), 'download')} failed (no response).",
    ]
    found = f"It found {count(s['unique_urls'], 'unique URL')}"
    if s.get("p") is not None:
        checked = s["unique_urls"] + s["duplicates"]
        found += f": {s['p']:.0%} of the {checked:,.0f} links it checked were new"
    sentences.append(found + ".")
    reason = finish(s.get("finish_reason"))
    sentences.append(reason[0].upper() + reason[1:] + ".")
    return sentences


def state_dir_sentence(data: dict[str, Any]) -> str:
    """Where the crawl's state is: named only if it is still there."""
    if "agents" in data:
        return f"One crawl of {len(data['agents'])} agents, from their state directories:"
    if data.get("state_dir_exists", True):
        return f"The crawl's state directory (resume it with JOBDIR): {data['state_dir']}."
    return (
        "The crawl's state directory was temporary and is removed; crawl with JOBDIR=DIR "
        "to keep it (to stop and resume, and to make the report again)."
    )


RATE_CAPTION = (
    "Pages and megabits downloaded per second, averaged between two consecutive lines of "
    "the crawl's timeline (closer together early in a run); read the pace of the crawl "
    "over time from the upper plot, the bandwidth it used from the lower one."
)
RESUME_CAPTION = (
    " A shaded gap is a time the crawl was stopped; the dashed line after it is the "
    "restart, from which the resumed run counts on."
)
AGENT_RESTART_CAPTION = " A dashed line is the restart of an agent, in its colour."
UNIQUENESS_CAPTION = (
    "The share of the links checked against URLseen that were new, between two lines of "
    "the timeline, against the pages crawled so far: it falls as the crawl sees more of "
    "the web, and a crawl in a trap or a small site drives it towards 0. URLseen checks "
    "links in batches, so p is drawn in steps: each step is the share of new links among "
    "those checked while the pages under it were crawled."
)
PLDS_CAPTION = (
    "Mean and median pages crawled per PLD, the PLDs grouped by their in-degree (how "
    "many other PLDs link to them) in powers of two: STAR gives well-linked PLDs larger "
    "budgets, so the curves should rise to the right."
)


def delays_caption(data: dict[str, Any]) -> str:
    """What the host-delay figure shows, and why the delays are what they are."""
    politeness = data["politeness"]
    delay, floor = politeness.get("IRL_HOST_DELAY"), politeness.get("IRL_HOST_DELAY_MIN")
    budget = politeness.get("IRL_BUDGET_DEFAULT")
    if delay is None or floor is None or budget is None:
        return "The crawled PLDs by the host delay their final STAR budget gives them."
    pace = data.get("pace") or {}
    source = PACE_SOURCES.get(pace.get("source", ""), "IRL_HOST_DELAY")
    words = [
        "The crawled PLDs by the host delay tau_h their final STAR budget gives them: "
        f"tau_h = max(IRL_HOST_DELAY_MIN, IRL_HOST_DELAY x IRL_BUDGET_DEFAULT / budget). "
        f"A PLD with the default budget ({budget:,}) waits {delay:g} s between two requests "
        f"to a host; that delay comes from {source}."
    ]
    if floor < delay:
        at = budget * delay / floor
        origin = ""
        if "set" in pace:
            origin = (
                " (as the crawl set it)"
                if "IRL_HOST_DELAY_MIN" in pace["set"]
                else " (not set, so derived: the smaller of its default and half of tau_h)"
            )
        words.append(
            f"A larger budget shortens the delay, down to the floor IRL_HOST_DELAY_MIN = "
            f"{floor:g} s{origin}, reached at a budget of {at:,.0f}."
        )
    else:
        words.append(
            f"The floor IRL_HOST_DELAY_MIN is the delay itself ({floor:g} s), so no budget "
            "shortens it: every PLD waits the same."
        )
    values = [float(k) for k in data["host_delays"]]
    if len(values) == 1:
        only = values[0]
        why = "the default budget" if only == delay else "the floor" if only == floor else ""
        if why:
            words.append(f"Every crawled PLD is at {why} here.")
    cap = politeness.get("IRL_ROBOTS_MAX_CRAWL_DELAY")
    limit = f" (up to IRL_ROBOTS_MAX_CRAWL_DELAY = {cap:g} s)" if cap is not None else ""
    words.append(
        f"A host's robots.txt Crawl-delay{limit} and back-off after errors only lengthen "
        "it; they are not in this figure (their counts are in the robots.txt and stats "
        "tables)."
    )
    return " ".join(words)
