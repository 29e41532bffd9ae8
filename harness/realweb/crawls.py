"""The two crawls of the real web, and what their logs say.

:func:`run` runs one in a namespace of its own and returns a :class:`Crawl`: its stats
and progress lines (from the crawl's log) and its requests (from nginx's).

Both are ``scrapy crawl broad`` of the web's seed file with the project's settings, the
same :data:`~harness.realweb.sites.USER_AGENT` and robots.txt obeyed:

- *stock*: ``-s ADDONS={}`` (Scrapy's own scheduler, RobotsTxtMiddleware, no delays:
  Scrapy's defaults, as tests/e2e/conftest.py's STOCK);
- *irl*: the add-on on, with issue 16's politeness (tau_h 0.05 s, tau_s 0.01 s; the floors
  equal the delays, so STAR's budgets leave them as they are and the audit knows the
  delay in force) and loopback addresses allowed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from . import accesslog, netns
from .netns import NamespaceRun
from .server import RealWeb
from .sites import USER_AGENT, host_delay

HOST_DELAY = 0.05
IP_DELAY = 0.01

COMMON = {
    "USER_AGENT": USER_AGENT,
    "ROBOTSTXT_OBEY": "True",
    "TELNETCONSOLE_ENABLED": "0",
    "IRL_REPORT_DIR": "",  # no report at close
    "IRL_PROGRESS_INTERVAL": "2",
}
STOCK = {**COMMON, "ADDONS": "{}"}
IRL = {
    **COMMON,
    "IRL_HOST_DELAY": str(HOST_DELAY),
    "IRL_HOST_DELAY_MIN": str(HOST_DELAY),
    "IRL_IP_DELAY": str(IP_DELAY),
    "IRL_IP_DELAY_MIN": str(IP_DELAY),
    "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
}


def irl_host_delay(host: str) -> float:
    """The least gap the irl crawl owes ``host``: HOST_DELAY, or its Crawl-delay."""
    return host_delay(host, HOST_DELAY)


#: One stat of the dumped dict: a number or a quoted string on a line of its own
#: (pprint's layout); datetimes and other values are left out.
_STAT = re.compile(r"^[{ ]'([^']+)': (-?[0-9][0-9.e+-]*|'[^']*')[,}]$", re.M)
_DUMP = "Dumping Scrapy stats:"
#: A progress line (irlscrapy.report.progress) and the IRL scheduler's frontier in it.
_PROGRESS = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) .*progress: .*?(\d+) responses .* (\d+) in flight"
)
_FRONTIER = {
    "urlseen": re.compile(r"URLseen ([\d,]+) pending"),
    "beast_urls": re.compile(r"BEAST ([\d,]+) URLs"),
    "beast_queues": re.compile(r"in ([\d,]+) queues"),
    "workbench_urls": re.compile(r"workbench ([\d,]+) URLs"),
    "workbench_hosts": re.compile(r"/ ([\d,]+) hosts"),
    "due": re.compile(r"\(([\d,]+) due\)"),
}
#: The columns of :meth:`Crawl.series`.
SERIES = ("t", "pages", "in_flight", *_FRONTIER)


def command(
    seeds: Path, settings: dict[str, str], extra: dict[str, str] | None = None
) -> list[str]:
    """``python -m scrapy crawl broad -a seeds=FILE -s NAME=VALUE ...``."""
    args = [sys.executable, "-m", "scrapy", "crawl", "broad", "-a", f"seeds={seeds}"]
    for name, value in {**settings, **(extra or {})}.items():
        args += ["-s", f"{name}={value}"]
    return args


def parse_stats(log: str) -> dict[str, Any]:
    """The numeric and string stats of the last stats dump in a crawl's log ({} if the
    crawl dumped none)."""
    start = log.rfind(_DUMP)
    if start < 0:
        return {}
    block = log[start + len(_DUMP) :]
    end = block.find("}\n")
    block = block[: end + 1] if end >= 0 else block
    stats: dict[str, Any] = {}
    for name, value in _STAT.findall(block):
        stats[name] = value[1:-1] if value.startswith("'") else float(value)
    return stats


def run(
    web: RealWeb,
    directory: Path,
    settings: dict[str, str],
    *,
    timeout: float,
    grace: float,
    cwd: Path,
    limit_file: Path | None = None,
    nice: int = 0,
) -> Crawl:
    """Crawl ``web`` with ``settings`` (:func:`command`) in a namespace of its own
    (:func:`harness.realweb.netns.run`, which ``limit_file`` may give a lower time
    limit while the crawl runs), the crawler at niceness ``nice``; its files go to
    ``directory``."""
    args = command(web.seeds_file, settings)
    done = netns.run(
        web,
        directory,
        ["nice", "-n", str(nice), *args] if nice else args,
        cwd=cwd,
        timeout=timeout,
        grace=grace,
        limit_file=limit_file,
    )
    return Crawl.read(done)


@dataclass
class Crawl:
    """One finished crawl: the namespace run, what its log says, and nginx's log of it."""

    run: NamespaceRun
    log: str = field(repr=False)
    stats: dict[str, Any]
    requests: list[accesslog.Request] = field(repr=False)

    @classmethod
    def read(cls, run: NamespaceRun) -> Crawl:
        log = run.crawl_log.read_text(errors="replace")
        return cls(run, log, parse_stats(log), accesslog.read(run.access_log))

    @property
    def pages(self) -> set[accesslog.Page]:
        return accesslog.pages(self.requests)

    @property
    def wall(self) -> float:
        return self.run.wall

    @property
    def finish_reason(self) -> str | None:
        return self.stats.get("finish_reason")

    def progress(self, last: int = 5) -> list[str]:
        """The last ``last`` progress lines (irlscrapy.report.progress)."""
        lines = [line for line in self.log.splitlines() if "progress: " in line]
        return lines[-last:]

    def series(self) -> list[list[float]]:
        """The progress lines as rows of :data:`SERIES`: seconds since the first line
        (the log's clock, to the second), pages, requests in flight, and the IRL
        scheduler's frontier (-1 where the line has none: stock Scrapy's)."""
        rows: list[list[float]] = []
        first: datetime | None = None
        for line in self.log.splitlines():
            found = _PROGRESS.match(line)
            if found is None:
                continue
            at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S")
            first = first or at
            row = [(at - first).total_seconds(), int(found.group(2)), int(found.group(3))]
            for pattern in _FRONTIER.values():
                value = pattern.search(line)
                row.append(int(value.group(1).replace(",", "")) if value else -1)
            rows.append(row)
        return rows

    def describe(self) -> str:
        """A few lines for a failure message: how it ended, its last progress."""
        tail = "\n".join(self.progress())
        return (
            f"returncode {self.run.returncode}, {self.run.wall:.1f} s, stopped at the "
            f"timeout: {self.run.stopped}, finish_reason {self.finish_reason}; "
            f"log {self.run.crawl_log}\n{tail}"
        )
