"""The project deploys to a real Scrapyd and runs there: deploy, schedule, cancel, resume.

A Scrapyd process on 127.0.0.1 with its own scrapyd.conf (eggs, logs, dbs and jobs
directories in a temporary directory) receives the egg that the real ``scrapyd-deploy``
builds from a copy of the repository (its scrapy.cfg with the ``[deploy]`` URL pointed
at this Scrapyd). Jobs crawl the tiny in-vitro web with QUICK_IRL politeness.

Scrapyd runs without the checkout on ``PYTHONPATH``, as on a real host: the ``irlscrapy``
that runs must be the egg's (the egg's ``settings`` package moves the egg ahead of any
installed copy), which the broad spider's "irlscrapy ... from ..." line shows. The
settings that run must be the egg's too: the copy the egg is built from differs from
the checkout in its ``settings/broad.py``, whose ``BOT_NAME`` is :data:`EGG_BOT_NAME`,
and each job's log names its bot.

Scrapyd's ``jobs_dir`` makes each job's JOBDIR ``<jobs_dir>/<project>/<spider>/<jobid>``
(overriding a ``setting=JOBDIR=...``), so scheduling again with the same ``jobid``
resumes a cancelled job.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import irlscrapy
from harness.childprocess import stop_child
from harness.redisserver import RedisServer

from .conftest import (
    QUICK_IRL,
    ROOT,
    SEED,
    TINY_DOWNLOAD_TIMEOUT,
    downloads,
    invitro_pid,
    read_log,
)
from .firsthour.readme import code_blocks

pytestmark = pytest.mark.e2e

PROJECT = "irlscrapy"  # the [deploy] project of the repository's scrapy.cfg
SPIDER = "broad"
#: What the egg is built from: the build files and the two packages it carries.
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md", "irlscrapy", "settings")
#: The deployed egg's BOT_NAME, written into the settings/broad.py of the copy it is
#: built from. Nothing else says it: the checkout's settings name the bot "irlscrapy",
#: and pip installs no settings package at all.
EGG_BOT_NAME = "irlscrapy-as-deployed"
SPIDER_ARGS = (("seeds", "invitro"), ("profile", "tiny"), ("seed", str(SEED)))
QUICK = (*QUICK_IRL, f"DOWNLOAD_TIMEOUT={TINY_DOWNLOAD_TIMEOUT}", "TELNETCONSOLE_ENABLED=0")
JOB_TIMEOUT = 60.0


@dataclass
class Scrapyd:
    """A running Scrapyd: its URL, the directory holding its own directories, and its
    process (whose output goes to ``root / "scrapyd.out"``)."""

    url: str
    root: Path
    process: subprocess.Popen[bytes] | None  # None: started by the README's commands

    def output(self) -> str:
        return (self.root / "scrapyd.out").read_text(errors="replace")

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        return self._answer(f"{self.url}{endpoint}?{urllib.parse.urlencode(params)}", None)

    def post(self, endpoint: str, data: list[tuple[str, str]]) -> dict[str, Any]:
        return self._answer(self.url + endpoint, urllib.parse.urlencode(data).encode())

    def _answer(self, url: str, body: bytes | None) -> dict[str, Any]:
        """One call of Scrapyd's JSON API, whose status must be ok."""
        with urllib.request.urlopen(url, data=body, timeout=30) as response:
            answer: dict[str, Any] = json.load(response)
        assert answer.get("status") == "ok", (url, answer, self.output()[-2000:])
        return answer

    def schedule(self, job: str, *settings: str, **spider_args: str) -> None:
        data = [("project", PROJECT), ("spider", SPIDER), ("jobid", job)]
        data += [("setting", s) for s in settings]
        data += [*SPIDER_ARGS, *spider_args.items()]
        assert self.post("schedule.json", data)["jobid"] == job

    def runs(self, job: str) -> tuple[int, int]:
        """(runs of ``job`` pending or running, runs finished): a job id scheduled again
        (to resume) appears once per run."""
        jobs = self.get("listjobs.json", project=PROJECT)
        active = sum(j["id"] == job for state in ("pending", "running") for j in jobs[state])
        return active, sum(j["id"] == job for j in jobs["finished"])

    def wait_until_finished(self, job: str, runs: int = 1) -> None:
        deadline = time.monotonic() + JOB_TIMEOUT
        while time.monotonic() < deadline:
            if self.runs(job) == (0, runs):
                return
            time.sleep(0.2)
        raise AssertionError(
            f"job {job} did not finish run {runs} within {JOB_TIMEOUT} s; its log ends:\n"
            + self.log(job)[-3000:]
        )

    def jobdir(self, job: str) -> Path:
        return self.root / "jobs" / PROJECT / SPIDER / job

    def log(self, job: str) -> str:
        path = self.root / "logs" / PROJECT / SPIDER / f"{job}.log"
        return path.read_text(errors="replace") if path.exists() else "(no log yet)"


def free_port() -> int:
    """A port free on loopback now (Scrapyd cannot listen on port 0 and say which)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def without_checkout() -> dict[str, str]:
    """The environment of a Scrapyd host: this process's, minus the checkout on PYTHONPATH
    (which would put the checkout's ``settings`` ahead of the egg's) and minus any
    SCRAPY_SETTINGS_MODULE (Scrapyd's runner lets it override the egg's entry point)."""
    drop = {"PYTHONPATH", "SCRAPY_SETTINGS_MODULE"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def run_in_copy(copy: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a build command in the project's copy, outside the checkout; it must succeed."""
    result = subprocess.run(
        args, cwd=copy, env=without_checkout(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def stop_jobs(server: Scrapyd) -> None:
    """Cancel what a failed test left running: stopping Scrapyd does not stop its jobs,
    and each job's in-vitro web stops when its crawl does."""
    if server.process is not None and server.process.poll() is not None:
        return
    jobs = server.get("listjobs.json", project=PROJECT)
    running = [j["id"] for state in ("pending", "running") for j in jobs[state]]
    for job in running:
        server.post("cancel.json", [("project", PROJECT), ("job", job)])
    deadline = time.monotonic() + 30
    while running and time.monotonic() < deadline:
        jobs = server.get("listjobs.json", project=PROJECT)
        running = [j["id"] for state in ("pending", "running") for j in jobs[state]]
        time.sleep(0.2)


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scrapyd]:
    root = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
    # Scrapyd reads scrapyd.conf from its working directory (and, later, ~/.scrapyd.conf).
    (root / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        "bind_address = 127.0.0.1\n"
        f"http_port = {port}\n"
        f"eggs_dir = {root / 'eggs'}\n"
        f"logs_dir = {root / 'logs'}\n"
        f"dbs_dir = {root / 'dbs'}\n"
        f"jobs_dir = {root / 'jobs'}\n"
        "items_dir =\n"
        "poll_interval = 0.2\n"
    )
    with open(root / "scrapyd.out", "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "scrapyd"],
            cwd=root,
            env=without_checkout(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Scrapyd(f"http://127.0.0.1:{port}/", root, process)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"scrapyd exited:\n{server.output()[-3000:]}"
            try:
                server.get("daemonstatus.json")
                break
            except OSError:
                assert time.monotonic() < deadline, f"no answer:\n{server.output()[-3000:]}"
                time.sleep(0.2)
        yield server
    finally:
        stop_jobs(server)
        stop_child(process, 15)


def copy_project(copy: Path) -> None:
    """Copy what a build reads (:data:`BUILD_FILES`) from the checkout into ``copy``."""
    for name in BUILD_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, copy / name)


@pytest.fixture(scope="module")
def deployed(scrapyd: Scrapyd, tmp_path_factory: pytest.TempPathFactory) -> Scrapyd:
    """The repository deployed with ``scrapyd-deploy``, from a copy whose scrapy.cfg
    targets this Scrapyd (the repository's own scrapy.cfg is left as it is) and whose
    settings/broad.py ends by naming the bot :data:`EGG_BOT_NAME`."""
    copy = tmp_path_factory.mktemp("project")
    copy_project(copy)
    with open(copy / "settings" / "broad.py", "a", encoding="utf-8") as broad:
        broad.write(f"\n# Only this test's egg says this.\nBOT_NAME = {EGG_BOT_NAME!r}\n")
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "scrapy.cfg")
    assert cfg["deploy"]["project"] == PROJECT
    cfg["deploy"]["url"] = scrapyd.url
    with open(copy / "scrapy.cfg", "w") as f:
        cfg.write(f)
    deploy = Path(sys.executable).with_name("scrapyd-deploy")
    assert deploy.exists(), f"{deploy} is missing: pip install '.[test]' installs scrapyd-client"
    # --debug shows setup.py's output if the build fails
    result = run_in_copy(copy, [str(deploy), "--debug"])
    assert '"status": "ok"' in result.stdout, result.stdout + result.stderr[-3000:]
    return scrapyd


def stat(log: str, name: str) -> int | str | None:
    """One value of the stats dump at the end of a crawl's log."""
    found = re.findall(rf"^ '{re.escape(name)}': (.+?),?$", log, re.MULTILINE)
    if not found:
        return None
    value = found[-1]
    return int(value) if value.isdigit() else value.strip("'")


def pythonpath_of_invitro(log: str) -> list[str]:
    """PYTHONPATH of the running in-vitro web whose pid the broad spider logged."""
    environ = Path(f"/proc/{invitro_pid(log)}/environ").read_bytes().split(b"\0")
    value = next((v for v in environ if v.startswith(b"PYTHONPATH=")), b"PYTHONPATH=")
    return value.decode().removeprefix("PYTHONPATH=").split(os.pathsep)


def test_scrapyd_deploy_puts_the_project_and_its_broad_spider_on_scrapyd(
    deployed: Scrapyd,
) -> None:
    assert PROJECT in deployed.get("listprojects.json")["projects"]
    assert deployed.get("listspiders.json", project=PROJECT)["spiders"] == [SPIDER]
    eggs = list((deployed.root / "eggs" / PROJECT).glob("*.egg"))
    assert len(eggs) == 1, eggs


def test_the_egg_carries_the_settings_package_its_entry_point_names(deployed: Scrapyd) -> None:
    egg = next((deployed.root / "eggs" / PROJECT).glob("*.egg"))
    with zipfile.ZipFile(egg) as archive:
        names = set(archive.namelist())
        entry_points = archive.read("EGG-INFO/entry_points.txt").decode()
        broad = archive.read("settings/broad.py").decode()
    assert {name.split("/")[0] for name in names} == {"EGG-INFO", "irlscrapy", "settings"}
    assert {"settings/__init__.py", "settings/broad.py"} <= names
    assert re.search(r"^settings = settings\.broad$", entry_points, re.MULTILINE), entry_points
    assert f"BOT_NAME = {EGG_BOT_NAME!r}" in broad


def test_a_build_for_pip_carries_only_the_irlscrapy_package(tmp_path: Path) -> None:
    """``pip install`` builds a wheel through setuptools' PEP 517 backend, which runs
    setup.py for ``bdist_wheel``; only ``bdist_egg`` adds ``settings``. The wheel's
    packages are the ones ``build_py`` collects, which is what runs here: building the
    wheel itself would need the ``wheel`` package, or an isolated build from an index."""
    copy = tmp_path / "project"
    copy_project(copy)
    build = tmp_path / "lib"
    run_in_copy(copy, [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)])
    assert sorted(path.name for path in build.iterdir()) == ["irlscrapy"]


def test_a_scheduled_job_runs_the_eggs_code_with_its_settings_and_arguments(
    deployed: Scrapyd,
) -> None:
    job = "finish"
    deployed.schedule(
        job,
        "CLOSESPIDER_PAGECOUNT=150",
        "IRL_TRAPS_MAX_PATH_DEPTH=1",  # an IRL_* override with a visible effect: a trap stat
        *QUICK,
    )
    deployed.wait_until_finished(job)
    log = deployed.log(job)
    egg = next((deployed.root / "eggs" / PROJECT).glob("*.egg"))
    # The egg's settings ran: no settings but the egg's name the bot EGG_BOT_NAME.
    checkout = runpy.run_path(str(ROOT / "settings" / "broad.py"))
    assert checkout["BOT_NAME"] != EGG_BOT_NAME
    assert f"started (bot: {EGG_BOT_NAME})" in log, log[:3000]
    assert f"'BOT_NAME': '{EGG_BOT_NAME}'" in log, log[:3000]
    # And the egg's code, which its settings package put first on sys.path.
    assert f"irlscrapy {irlscrapy.__version__} from {egg}" in log, log[:3000]
    assert "in-vitro web (tiny, seed 0," in log, log[:3000]
    assert "'CLOSESPIDER_PAGECOUNT': '150'" in log
    assert f"'JOBDIR': '{deployed.jobdir(job)}'" in log
    assert stat(log, "finish_reason") == "closespider_pagecount", log[-3000:]
    responses, pages = stat(log, "response_received_count"), stat(log, "irl/spider/pages")
    assert isinstance(responses, int) and responses >= 150, log[-3000:]
    assert isinstance(pages, int) and pages > 0, log[-3000:]
    dropped = stat(log, "irl/traps/path_depth")
    assert isinstance(dropped, int) and dropped > 0, log[-3000:]
    assert "Traceback" not in log, log
    # The frontier's state is in the job's JOBDIR under Scrapyd's jobs_dir.
    state = {p.name for p in deployed.jobdir(job).iterdir()}
    assert {"beast", "urlseen", "dns", "robots"} <= state, state


def test_cancel_stops_a_job_gracefully_and_the_same_jobid_resumes_it(
    deployed: Scrapyd, tmp_path: Path
) -> None:
    job = "resume"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    # A small workbench keeps most of the frontier in BEAST's disk queues at the stop.
    small = (*QUICK, "IRL_WORKBENCH_URLS=100")
    deployed.schedule(job, *small, invitro_log=str(first))
    deadline = time.monotonic() + JOB_TIMEOUT
    while len(downloads(first)) < 300:
        assert deployed.runs(job) != (0, 1), "the job ended before it was cancelled"
        assert time.monotonic() < deadline, deployed.log(job)[-3000:]
        time.sleep(0.2)
    # The job's in-vitro web, a child process, runs the egg's irlscrapy too.
    egg = next((deployed.root / "eggs" / PROJECT).glob("*.egg"))
    assert pythonpath_of_invitro(deployed.log(job))[0] == str(egg)
    assert deployed.post("cancel.json", [("project", PROJECT), ("job", job)])["prevstate"] == (
        "running"
    )
    deployed.wait_until_finished(job)
    stopped = deployed.log(job)
    assert "Received SIGINT, shutting down gracefully" in stopped, stopped[-3000:]
    assert stat(stopped, "finish_reason") == "shutdown", stopped[-3000:]
    seeds = re.search(r"; seeds (.+)$", stopped, re.MULTILINE)
    assert seeds, stopped[:3000]

    deployed.schedule(job, *small, "CLOSESPIDER_PAGECOUNT=200", invitro_log=str(second))
    deployed.wait_until_finished(job, runs=2)
    resumed = deployed.log(job)[len(stopped) :]  # Scrapy appends to the job's log file
    queued = re.search(
        rf"resuming from {re.escape(str(deployed.jobdir(job)))}: (\d+) URLs", resumed
    )
    assert queued and int(queued.group(1)) > 0, resumed[:3000]
    assert stat(resumed, "finish_reason") == "closespider_pagecount", resumed[-3000:]
    assert "Traceback" not in resumed, resumed
    # It went on from the stop: the seeds, answered in the first run, are not fetched again.
    again = set(seeds.group(1).split(", ")) & set(downloads(second))
    assert not again, again
    # CLOSESPIDER_PAGECOUNT counts every response, robots.txt and the proxy's answers for
    # unresolvable hosts included: the server answered at least that many requests.
    assert len(read_log(second)) >= 200


def test_agents_of_one_crawl_run_as_scrapyd_jobs(
    deployed: Scrapyd, redis_server: RedisServer
) -> None:
    """Two agents of one multi-agent crawl, each a job whose settings come through
    ``schedule.json``: they join the crawl in Redis, exchange URLs, and end at their page
    limit. (Each job starts its own copy of the tiny web; the copies are identical.)"""
    crawl = (
        *QUICK,
        f"IRL_REDIS_URL={redis_server.url}",
        "IRL_CRAWL_ID=scrapyd",
        "IRL_AGENT_MEMBERS=a,b",
        "IRL_AGENT_PARTITIONS=16",
        "IRL_EXCHANGE_AGE=1",
        "CLOSESPIDER_PAGECOUNT=150",
    )
    for agent in "ab":
        deployed.schedule(f"agent-{agent}", *crawl, f"IRL_AGENT_ID={agent}")
    for agent in "ab":
        deployed.wait_until_finished(f"agent-{agent}")
    received = 0
    for agent in "ab":
        log = deployed.log(f"agent-{agent}")
        assert f"Agent {agent} of crawl scrapyd: " in log and "members a, b" in log, log[:3000]
        assert stat(log, "finish_reason") == "closespider_pagecount", log[-3000:]
        sent = stat(log, "irl/agent/urls_out")
        assert isinstance(sent, int) and sent > 0, log[-3000:]
        got = stat(log, "irl/agent/urls_in")
        received += got if isinstance(got, int) else 0
        assert "Traceback" not in log, log[-3000:]
    assert received > 0


# -- the README's section, as written ------------------------------------------------------

#: The port of the README's Scrapyd. The test's Scrapyd takes a free port instead, so
#: that it meets neither a Scrapyd the machine runs nor another test's: every README
#: command and the deploy target of the project's scrapy.cfg get that port, and nothing
#: else of them changes.
README_PORT = "6800"
#: A progress line of a crawl's log (the first comes IRL_PROGRESS_INTERVAL, 5 s, in).
PROGRESS = r".*\[irlscrapy\.report\.progress\] INFO: progress:"


def commands(block: str) -> list[str]:
    """A README sh block's commands, one a line once its continuations are joined."""
    joined = re.sub(r"\\\n\s*", "", block)
    return [line for line in joined.splitlines() if line.strip()]


def fresh_venv(path: Path) -> Path:
    """A new virtualenv of its own (its pip installs into it) that sees this one's
    packages as installed, so that ``pip install .`` needs no index for irlscrapy's
    dependencies, scrapyd or scrapyd-client. Their scripts stay in this virtualenv's
    bin, which comes after the new one's on the shell's PATH."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    (site,) = path.glob("lib/python*/site-packages")
    parent = next(Path(p) for p in sys.path if p.endswith("site-packages"))
    (site / "parent-venv.pth").write_text(f"{parent}\n")
    return path


def test_the_readmes_commands_deploy_schedule_cancel_and_resume_a_job_with_its_settings(
    tmp_path: Path,
) -> None:
    """The section "Deploying to Scrapyd" pasted into a shell on a fresh machine, from the
    repository's root (a copy of it): a new virtualenv, an empty home directory. The
    first block runs as one script; the commands of the others one at a time, with the
    waits a user would make in between. The resumed run has the job's settings."""
    setup, schedule_and_stop, resume = code_blocks("Deploying to Scrapyd", "sh")
    port = str(free_port())
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    copy_project(repo)
    scrapy_cfg = (ROOT / "scrapy.cfg").read_text()
    assert f"url = http://127.0.0.1:{README_PORT}/" in scrapy_cfg
    (repo / "scrapy.cfg").write_text(scrapy_cfg.replace(README_PORT, port))
    venv = fresh_venv(tmp_path / "venv")
    env = {
        **without_checkout(),
        "HOME": str(home),
        "PATH": os.pathsep.join(
            [str(venv / "bin"), str(Path(sys.executable).parent), "/usr/bin", "/bin"]
        ),
    }

    def sh(script: str) -> str:
        result = subprocess.run(
            ["bash", "-e", "-c", script.replace(README_PORT, port)],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (script, result.stdout[-3000:], result.stderr[-3000:])
        return result.stdout

    root = home / "scrapyd"
    server = Scrapyd(f"http://127.0.0.1:{port}/", root, None)
    try:
        sh(setup)
        assert (next(venv.glob("lib/python*/site-packages")) / "irlscrapy").is_dir()
        assert server.get("listspiders.json", project=PROJECT)["spiders"] == [SPIDER]

        schedule, listjobs, cancel = commands(schedule_and_stop)
        job = re.search(r"jobid=(\S+)", schedule)
        assert job, schedule
        job_id = job.group(1)
        assert '"status": "ok"' in sh(schedule)
        deadline = time.monotonic() + JOB_TIMEOUT
        while not re.search(PROGRESS, server.log(job_id)):
            assert time.monotonic() < deadline, server.log(job_id)[-3000:]
            time.sleep(0.5)
        assert f'"id": "{job_id}"' in sh(listjobs)
        assert '"prevstate": "running"' in sh(cancel)
        server.wait_until_finished(job_id)
        stopped = server.log(job_id)
        assert stat(stopped, "finish_reason") == "shutdown", stopped[-3000:]
        settings = re.findall(r"setting=(\w+)=(\S+)", schedule)
        assert dict(settings).keys() >= {"CLOSESPIDER_PAGECOUNT", "IRL_HOST_DELAY"}

        (resumed_schedule,) = commands(resume)
        assert '"status": "ok"' in sh(resumed_schedule)
        # Resumed, and crawling: Scrapy ignores a SIGINT that comes while the crawl
        # opens (its engine is not running yet to be stopped, and then starts).
        resuming = rf"resuming from {re.escape(str(server.jobdir(job_id)))}: \d+ URLs"
        deadline = time.monotonic() + JOB_TIMEOUT
        while not re.search(resuming + PROGRESS, server.log(job_id)[len(stopped) :], re.DOTALL):
            assert time.monotonic() < deadline, server.log(job_id)[-3000:]
            time.sleep(0.5)
        server.post("cancel.json", [("project", PROJECT), ("job", job_id)])
        server.wait_until_finished(job_id, runs=2)
        resumed = server.log(job_id)[len(stopped) :]
        log = stopped + resumed
        assert "Traceback" not in log, log[log.find("Traceback") - 2000 :][:5000]
        # The resumed run has the job's settings (a resume without them ran at the
        # default delays): each run's "open" record says the settings in force.
        timeline = server.jobdir(job_id) / "report" / "timeline.jsonl"
        runs = [json.loads(line) for line in timeline.read_text().splitlines()]
        in_force = [r["settings"] for r in runs if r["event"] == "open"]
        assert len(in_force) == 2, in_force
        for name, value in settings:
            assert [float(run[name]) for run in in_force] == [float(value)] * 2, name
        # And its spider arguments: the same in-vitro web.
        assert "in-vitro web (tiny, seed 0," in resumed, resumed[:3000]
    finally:
        pid = root / "twistd.pid"
        if pid.exists():  # the README's Scrapyd started
            stop_jobs(server)
            os.kill(int(pid.read_text()), signal.SIGTERM)
