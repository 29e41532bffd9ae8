"""A user's mistakes, each made as a user makes it, each answered by one line.

A ``scrapy startproject`` project with the README's block pasted as written is run with
one mistake at a time on the command line (a misspelt setting, a value out of range or
of another type, a JOBDIR that is a file or cannot be written); the repository's own
project runs the broad spider with seeds that are no URLs, a seeds file that does not
exist, no seeds; ``irlscrapy check``, ``repair``, ``report`` and ``agents`` are pointed
at a directory or a Redis that holds no crawl. Each must end non-zero, with no
traceback and no knock-on error, in one ERROR line (or one ``irlscrapy:`` line) naming
the setting or argument as the user wrote it; ``irlscrapy check`` on an empty
directory exits 2 and leaves it empty.

And the mistake that used to be silent: the README's block without its
``IRL_ALLOW_PRIVATE_ADDRESSES`` line, against the docs site on loopback. The crawl
fetches nothing, so it must end with finish reason ``irlscrapy_all_refused`` and one
ERROR line that names the setting and the network to allow.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.redisserver import RedisServer
from irlscrapy.scheduler.emptycrawl import ALL_REFUSED_REASON

from .project import Project, Site, serve_docs, startproject
from .readme import code_blocks

REPO = Path(__file__).resolve().parents[3]
SECTION = "Adding it to an existing project"
#: Knock-on errors of a crawl stopped while it was being built (issue 36).
KNOCK_ON = ("Traceback", "Task exception was never retrieved", "Engine slot not assigned")


def _project(parent: Path, blocks: list[str]) -> Project:
    project = startproject(parent)
    project.append_settings("\n".join(blocks))
    return project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The README's block and its private-address line, pasted as written."""
    return _project(tmp_path_factory.mktemp("mistakes"), code_blocks(SECTION, "python"))


def _one_line(proc: subprocess.CompletedProcess[str], *named: str) -> str:
    """The run's one error line, after checking it ended non-zero with no traceback."""
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    for knock_on in KNOCK_ON:
        assert knock_on not in output, output[-3000:]
    errors = [line for line in output.splitlines() if " ERROR: " in line]
    if not errors:  # the irlscrapy command: its one line on stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("irlscrapy: ")]
    assert len(errors) == 1, output[-3000:]
    for name in named:
        assert name in errors[0], errors[0]
    return errors[0]


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("IRL_HOST_DELAYY=1", "IRL_HOST_DELAYY is not an irlscrapy setting; did you mean"),
        ("IRL_HOST_DELAY=-1", "IRL_HOST_DELAY=-1: must be 0 or more"),
        ("IRL_IP_DELAY=fast", "IRL_IP_DELAY=fast: must be a number"),
        ("IRL_CRAWL_CONTINUOUS=maybe", "IRL_CRAWL_CONTINUOUS=maybe: must be true or false"),
        ("IRL_ALLOW_PRIVATE_ADDRESSES=intranet", "IRL_ALLOW_PRIVATE_ADDRESSES=intranet"),
    ],
)
def test_a_wrong_setting_is_one_line_naming_it(
    project: Project, docs_site: Site, setting: str, named: str
) -> None:
    proc = project.run(project.crawl_command(docs_site.url, "-s", setting), timeout=120)
    _one_line(proc, named)
    assert not project.items()


def test_a_jobdir_that_is_a_file_is_one_line(project: Project, docs_site: Site) -> None:
    jobdir = project.root / "not-a-directory"
    jobdir.write_text("mine\n")
    proc = project.run(project.crawl_command(docs_site.url, "-s", f"JOBDIR={jobdir}"), 120)
    _one_line(proc, f"JOBDIR={jobdir}: it is a file, not a directory")
    assert jobdir.read_text() == "mine\n"


def test_a_jobdir_under_a_read_only_directory_is_one_line(
    project: Project, docs_site: Site
) -> None:
    """The suite runs as root, whom chmod does not stop: the parent is bind-mounted
    read-only in a mount namespace of the crawl's own (``unshare``)."""
    parent = project.root / "read-only"
    parent.mkdir()
    jobdir = parent / "crawls" / "docs"
    crawl = project.crawl_command(docs_site.url, "-s", f"JOBDIR={jobdir}")
    mount = f'mount --bind -o ro "{parent}" "{parent}" && exec "$@"'
    proc = project.run(["unshare", "-rm", "sh", "-c", mount, "sh", *crawl], 120)
    _one_line(proc, f"JOBDIR={jobdir}: {parent} cannot be written to")
    assert list(parent.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["-a", "seeds=example.org,example.net"], "-a seeds=example.org,example.net"),
        (["-a", "seeds=my-seeds.txt"], "-a seeds=my-seeds.txt: no such file"),
        ([], "the broad spider needs seeds: -a seeds=URL"),
    ],
)
def test_a_wrong_broad_spider_argument_is_one_line_naming_it(
    tmp_path: Path, arguments: list[str], named: str
) -> None:
    """``scrapy crawl broad`` from the repository, which uses settings/broad.py."""
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "broad", *arguments, "-s", f"JOBDIR={tmp_path}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    _one_line(proc, named)


def _irlscrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "irlscrapy", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("command", ["check", "repair", "report"])
def test_a_state_command_on_an_empty_directory_is_refused_and_writes_nothing(
    tmp_path: Path, command: str
) -> None:
    proc = _irlscrapy(command, str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    _one_line(proc, f"{tmp_path} is not a crawl's state directory")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["check", "repair", "report"])
def test_a_state_command_on_the_temporary_directory_is_refused(command: str) -> None:
    temporary = Path(tempfile.gettempdir())
    before = sorted(p.name for p in temporary.iterdir() if p.name in ("LOCK", "report"))
    proc = _irlscrapy(command, str(temporary))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    _one_line(proc, f"{temporary} is not a crawl's state directory")
    assert sorted(p.name for p in temporary.iterdir() if p.name in ("LOCK", "report")) == before


def test_a_report_out_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("mine\n")
    proc = _irlscrapy("report", str(tmp_path), "--out", str(out))
    assert proc.returncode == 2
    _one_line(proc, f"--out {out}: it is a file, not a directory")
    assert out.read_text() == "mine\n"


@pytest.fixture(scope="module")
def empty_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.mark.parametrize(
    "action", [["status"], ["leave", "agent-1"], ["remove", "agent-1"]], ids=lambda a: a[0]
)
def test_an_agents_command_on_a_redis_without_the_crawl_is_refused(
    empty_redis: RedisServer, action: list[str]
) -> None:
    name, *rest = action
    proc = _irlscrapy("agents", name, "--redis", empty_redis.url, "--crawl", "docs", *rest)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    _one_line(proc, f"there is no crawl 'docs' at {empty_redis.url}")
    client = empty_redis.client()
    try:
        assert client.dbsize() == 0  # nothing written
    finally:
        client.close()


def test_an_agents_command_with_no_redis_url_is_one_line() -> None:
    proc = _irlscrapy("agents", "status", "--redis", "localhost:6379", "--crawl", "docs")
    assert proc.returncode == 2
    _one_line(proc, "--redis localhost:6379")


def test_a_crawl_whose_seeds_are_all_refused_says_which_setting_to_set(
    tmp_path: Path, docs_site: Site
) -> None:
    """The README's block without the private-address line, and a site on loopback."""
    blocks = code_blocks(SECTION, "python")
    without = [block for block in blocks if "IRL_ALLOW_PRIVATE_ADDRESSES" not in block]
    assert len(without) < len(blocks), "the README no longer names the setting there"
    project = _project(tmp_path, without)
    proc = project.run(project.crawl_command(docs_site.url), timeout=180)
    assert f"'finish_reason': '{ALL_REFUSED_REASON}'" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "127.0.0.1 resolves to 127.0.0.1, a loopback address" in errors[0]
    assert 'set IRL_ALLOW_PRIVATE_ADDRESSES = "127.0.0.0/8"' in errors[0]
    assert not project.items()


def test_a_crawl_whose_seeds_robots_txt_disallows_says_so(project: Project, tmp_path: Path) -> None:
    """The README's whole block, and a site on loopback whose robots.txt disallows all
    (``scrapy startproject`` sets ROBOTSTXT_OBEY = True)."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /\n")
    (root / "index.html").write_text('<title>home</title><a href="a.html">a</a>')
    own_jobdir = f"JOBDIR={tmp_path / 'job'}"
    with serve_docs(root) as site:
        crawl = project.crawl_command(site.url, "-s", own_jobdir, feed="robots.jsonl")
        proc = project.run(crawl, timeout=180)
    assert f"'finish_reason': '{ALL_REFUSED_REASON}'" in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "by their host's robots.txt (ROBOTSTXT_OBEY" in errors[0], errors
    assert not project.items("robots.jsonl")
