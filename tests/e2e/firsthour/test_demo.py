"""The README's first command, the demo, run as written: it ends within seconds of its
page cap, its summary counts pages and robots.txt apart, and it logs no ERROR line.

The command is read from the README's first ``sh`` block at test time; the part after
``pip install . &&`` runs in a directory holding a copy of the project's ``scrapy.cfg``
and ``settings/`` (irlscrapy itself is installed), so the report it writes,
``crawl-report/``, lands there and not in the repository.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .readme import README, code_blocks

#: The bar: from the line where the cap is reached to the process's exit.
CAP_TO_EXIT_SECONDS = 5.0
#: The demo crawls 3,000 responses: about 35 s on an idle core, more on a busy machine.
DEMO_TIMEOUT = 240
SUMMARY = re.compile(
    r"summary \((?P<reason>\w+)\): in (?P<crawling>[\d.]+) s of crawling"
    r"(?: \(then (?P<closing>[\d.]+) s closing\))?, (?P<responses>\d+) responses "
    r"\([\d.]+/s\): (?P<parsed>\d+) pages parsed, (?P<robots>\d+) robots.txt, "
    r"(?P<errors>\d+) HTTP errors not parsed; CLOSESPIDER_PAGECOUNT (?P<cap>[\d,]+) counts "
    r"responses"
)


def demo_command() -> list[str]:
    """The README's first command, without its ``pip install . &&``."""
    first = code_blocks("irlscrapy", "sh")[0].splitlines()[0]
    install, _, crawl = first.partition(" && ")
    assert install == "pip install .", first
    assert crawl.startswith("scrapy crawl "), first
    return shlex.split(crawl)


def run_timed(args: list[str], cwd: Path) -> tuple[list[tuple[float, str]], float, int]:
    """Run ``args`` with the test's virtualenv first on PATH; each line of its output
    with the time it arrived (seconds since the start), the time it exited, its code."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(Path.home())}
    if "PYTHONPATH" in os.environ:  # a work tree's code rather than the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    began = time.monotonic()
    with subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        assert process.stdout is not None
        lines = [(time.monotonic() - began, line.rstrip("\n")) for line in process.stdout]
        code = process.wait(timeout=DEMO_TIMEOUT)
    return lines, time.monotonic() - began, code


@pytest.mark.e2e
def test_the_readme_demo_ends_at_its_cap_and_says_what_it_counted(tmp_path: Path) -> None:
    root = README.parent
    shutil.copy(root / "scrapy.cfg", tmp_path)
    shutil.copytree(root / "settings", tmp_path / "settings")
    args = demo_command()
    lines, exited, code = run_timed(args, tmp_path)
    log = "\n".join(line for _, line in lines)
    assert code == 0, log[-3000:]

    closing = [at for at, line in lines if "Closing spider (closespider_pagecount)" in line]
    assert len(closing) == 1, log[-3000:]
    cap_to_exit = exited - closing[0]
    print(f"demo: {exited:.1f} s wall, {cap_to_exit:.1f} s from the cap to the exit")
    assert cap_to_exit < CAP_TO_EXIT_SECONDS, log[-3000:]

    summary = SUMMARY.search(log)
    assert summary is not None, log[-3000:]
    responses, parsed = int(summary["responses"]), int(summary["parsed"])
    robots, errors = int(summary["robots"]), int(summary["errors"])
    assert parsed + robots + errors == responses
    assert parsed > 0 and robots > 0
    assert summary["cap"] == "3,000" and responses >= 3000
    # the rate is over the crawling time: the close is counted apart
    assert summary["closing"] is not None and float(summary["closing"]) < CAP_TO_EXIT_SECONDS
    stats = dict(re.findall(r"^ ?[{ ]'([^']+)': (\d+),?}?$", log, re.M))
    assert int(stats["robotstxt/response_count"]) == robots
    assert int(stats["response_received_count"]) == responses

    errors_logged = [line for _, line in lines if "] ERROR: " in line]
    assert errors_logged == [], errors_logged[:5]
    assert "Traceback" not in log
    # robots.txt is retried by the robots cache alone, never by RetryMiddleware
    assert not re.search(r"Gave up retrying <GET [^>]*/robots\.txt>", log)
    assert (tmp_path / "crawl-report" / "report.html").is_file()
    # the report's rate figure has its points over the demo's few seconds (issue 39)
    data = json.loads((tmp_path / "crawl-report" / "report.json").read_text())
    assert len(data["download_rate"]) >= 30
