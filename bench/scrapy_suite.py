"""Scrapy's own test suite, run as it ships and again with the irlscrapy add-on switched on.

    python bench/scrapy_suite.py                       # both runs, then the comparison
    python bench/scrapy_suite.py --only addon --keep   # rerun the add-on run only
    python bench/scrapy_suite.py --files test_crawl,test_engine

Run it with the interpreter whose Scrapy you want to test (the project's virtualenv);
it is not part of CI: both runs take tens of minutes on a 2-core machine. What it
downloads and builds lives under ``--cache`` (:data:`CACHE`, ``~/.cache/...``): not in
this repository, because the tests run ``scrapy`` commands in the sdist directory, and
Scrapy looks for a project's scrapy.cfg from there upwards: it would find this
repository's and load its settings (the add-on among them) in the stock run too.

``sdist/scrapy-X.tar.gz``  Scrapy's sdist of exactly the installed version X (pip
                           download), extracted to ``scrapy-X/``: its ``tests/`` tree,
                           its ``conftest.py`` and pytest configuration.
``venv-X/``                a virtualenv made once and reused: this repository (pip
                           install, not editable; reinstalled when its files change),
                           ``scrapy==X``, then the test requirements of the sdist's
                           tox.ini (``[testenv] deps``, ``{[section]key}`` and ``-r``
                           expanded) plus pytest-timeout, as of the day after X's release
                           (see :func:`ensure_environment`). A requirement that does not
                           install is printed and skipped. ``suite.json`` says what the
                           virtualenv holds.
``patch/sitecustomize.py`` the add-on switch (:data:`ADDON_SETTINGS`), below.

Each run's junit XML, pytest output (``-v``) and wall time go to
``bench/results/scrapy-suite/X/{stock,addon}.{xml,log,json}`` (ignored by git).

The runs: the test files :data:`FILES` (those missing in version X are named and
skipped), one pytest session per run from the extracted sdist, with ``-p
no:cacheprovider`` and ``--timeout`` :data:`TIMEOUT_S`. ``stock`` runs them as they are;
``addon`` puts ``patch/`` first on PYTHONPATH, so that the interpreter and every
subprocess a test starts (``scrapy crawl``, ``runspider``, CrawlerProcess scripts) import
its ``sitecustomize``, which sets :data:`ADDON_SETTINGS` in
``scrapy.settings.default_settings`` as Scrapy imports that module: every Settings()
then holds ``ADDONS = {"irlscrapy.Addon": 0}``, zero politeness delays and loopback
allowed by the address guard. A test that sets ADDONS itself replaces the add-on, as a
project would. The hook imports nothing at start-up, so an interpreter without Scrapy is
unaffected; the harness checks both before the add-on run.

The comparison: every test that passes in ``stock`` but fails, errors or times out in
``addon`` (or is missing from it) is classified by :data:`CLASSIFICATION`, a table of
(test-id pattern, error pattern) -> :data:`DIFFERENCES` key: a difference from stock
Scrapy by design, printed with the README.md line that documents it (or "NOT IN README"
when that line is missing); or a ``knock-on`` (:data:`KNOCK_ON`): a test that fails
only because an earlier failing test left garbage behind. Everything else is printed
as ``bug``. Also printed: each run's counts, timeouts and tests that took
:data:`TIMEOUT_S` or more (hangs), its wall time, and the test_closespider tests whose
crawl logged an ERROR (Scrapy's ``log_count/ERROR``), from the captured logs. Figures
are printed one JSON line each, as the other benchmarks do (``bench: scrapy_suite``).
The exit status is 1 when a bug was found.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from common import ADDON_ON_LOOPBACK, PROXY_VARIABLES, REPO, RESULTS, emit

BENCH_NAME = "scrapy_suite"
#: The sdist and the virtualenv: outside the repository, whose scrapy.cfg the tests'
#: ``scrapy`` commands would find above the sdist (see project_config_above).
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "irlscrapy-scrapy-suite"
#: Each run's junit XML, pytest output and wall time.
OUT = RESULTS / "scrapy-suite"
#: Scrapy's test files that exercise the scheduler, the engine, crawls and the commands.
FILES = (
    "test_crawl", "test_engine", "test_spider_crawl", "test_pipeline_crawl",
    "test_crawler", "test_request_cb_kwargs", "test_request_attribute_binding",
    "test_closespider", "test_engine_loop", "test_engine_close_spider", "test_request_left",
    "test_spidermiddleware_output_chain", "test_spider_start",
    "test_spidermiddleware_process_start", "test_spidermiddleware_start", "test_signals",
    "test_scheduler", "test_downloaderslotssettings", "test_spidermiddleware_httperror",
    "test_core_downloader", "test_stats", "test_dupefilters", "test_crawler_runners",
    "test_addons", "test_engine_stop_download_bytes", "test_engine_stop_download_headers",
    "test_engine_download", "test_feedexport", "test_feedexport_batch",
    "test_crawler_subprocess", "test_command_crawl", "test_command_runspider",
    "test_command_fetch", "test_command_parse", "test_command_check",
)  # fmt: skip
RUNS = ("stock", "addon")
#: pytest-timeout's limit per test; a test that reaches it counts as a hang.
TIMEOUT_S = 120
#: A whole run is killed after this long (a hang pytest-timeout could not break).
RUN_WALL_S = 4 * 3600
#: Seconds between progress lines while a run goes on.
PROGRESS_S = 60
#: Installed beside the sdist's own test requirements.
EXTRA_DEPS = ("pytest-timeout",)
ADDON_SETTINGS = ADDON_ON_LOOPBACK
#: Printed with the environment, the versions that decide most test outcomes.
SHOWN_VERSIONS = ("Scrapy", "Twisted", "pytest", "pytest-twisted", "pytest-timeout", "irlscrapy")

#: The differences from stock Scrapy that the add-on makes by design. Each key's value is
#: a phrase that its line in README.md or the manual must contain (the line is printed
#: beside the tests it covers; docs/project.md holds them), and the line as proposed,
#: used while neither has it.
DIFFERENCES: dict[str, tuple[str, str]] = {
    "order": (
        "The order is BEAST's across",
        "The order is BEAST's across domains, not Scrapy's priority order; within a host, "
        "`Request.priority` orders the URLs that reached the workbench together (one "
        "URLseen batch), so a later request of higher priority can follow earlier ones, "
        "and start requests are not queued apart (SCHEDULER_START_* are not used).",
    ),
    "one-per-host": (
        "One fetch at a time per host and per IP",
        "the workbench fetches one page of a host at a time, each after the host delay: "
        "CONCURRENT_REQUESTS_PER_DOMAIN and _PER_IP add no fetches on one host",
    ),
    "dup-no-dropped": (
        "no `request_dropped` signal",
        "a duplicate is known only after URLseen's batch check, so `enqueue_request` "
        "accepts it and `dupefilter/filtered` counts it (no `request_dropped` signal)",
    ),
    "private-internals": (
        "private attributes of Scrapy's scheduler",
        "Code that reads private attributes of Scrapy's scheduler (`dqs`, `mqs`) or "
        "RFPDupeFilter's (`JOBDIR/requests.seen`, `fingerprints`) finds IRLScheduler and "
        "DRUMDupeFilter instead, which have neither.",
    ),
    "reactorless": (
        "reactorless mode",
        "Scrapy's reactorless mode (`TWISTED_REACTOR_ENABLED = False`) is refused at "
        "start with a ConfigurationError: the download handler, the resolver and the "
        "WARC capture are Twisted code.",
    ),
    "dns-no-left": (
        "never sends `request_left_downloader`",
        "A request whose host does not resolve never reaches the downloader, so it never "
        "sends `request_left_downloader` (its errback gets CannotResolveHostError).",
    ),
    "ipv6-loopback": (
        "IPv6 loopback",
        "The address guard refuses the IPv6 loopback (`::1`) unless "
        "`IRL_ALLOW_PRIVATE_ADDRESSES` allows it (`127.0.0.0/8` does not); a crawl whose "
        "every URL is so refused ends `irlscrapy_all_refused`.",
    ),
}


@dataclass(frozen=True)
class Rule:
    """A test whose id matches ``test`` (re.search), failing with a message, traceback or
    captured output that matches ``error``, is the difference ``key`` (or a knock-on);
    ``reason`` says how."""

    test: str
    key: str
    reason: str
    error: str = ""


#: Read off each failure of the add-on run (Scrapy 2.19.0). A rule names its tests as
#: narrowly as the ids allow and the error it expects (searched in the failure's message,
#: traceback and captured output), so a failure of another kind in the same test is
#: still a bug. Key ``knock-on``: not a difference of its own (see KNOCK_ON).
CLASSIFICATION: tuple[Rule, ...] = (
    Rule(
        r"test_engine_loop\.py::TestRequestSendOrder::",
        "order",
        "one host, requests of priorities 0 and 1 arriving over several reactor turns, and "
        "start requests queued apart (SCHEDULER_START_*): the add-on sends them in the order "
        "they reach the workbench (by URLseen batch), by priority only within one batch",
        r"actual_nums=",
    ),
    Rule(
        r"test_crawl\.py::TestCrawl::test_fixed_delay$",
        "one-per-host",
        "the half without a delay: ten pages of one host with random latencies up to "
        "0.4 s, fetched in turn, average over 0.25 s apart when the draws are slow",
        r"test total or delay values are too small",
    ),
    Rule(
        r"test_engine\.py::TestEngine::test_crawler_dupefilter$",
        "dup-no-dropped",
        "scheduled == dropped + responses: duplicates send no request_dropped",
        r"scheduled_requests_count == dropped_requests_count \+ responses_count",
    ),
    Rule(
        r"test_engine_close_spider\.py::test_exception_scheduler$",
        "private-internals",
        "deletes Scheduler.dqs",
        r"has no attribute 'dqs'",
    ),
    Rule(
        r"test_dupefilters\.py::TestRFPDupeFilter::test_seenreq_truncated$",
        "private-internals",
        "truncates RFPDupeFilter's JOBDIR/requests.seen",
        r"requests\.seen",
    ),
    Rule(
        r"test_dupefilters\.py::TestRFPDupeFilter::test_fingerprints_deprecation$",
        "private-internals",
        "reads the deprecated RFPDupeFilter.fingerprints of the default DUPEFILTER_CLASS",
        r"DID NOT WARN|fingerprints",
    ),
    Rule(
        r"test_request_left\.py::test_noconnect$",
        "dns-no-left",
        "an unresolvable host: request_left_downloader is never sent",
        r"caught_times",
    ),
    Rule(
        r"::test_(ipv6_default_name_resolver|caching_hostname_resolver_ipv6)$",
        "ipv6-loopback",
        "http://[::1] is refused by the address guard, not by the resolver; its only URL "
        "refused, the crawl ends irlscrapy_all_refused, not finished",
        r"IRL_ALLOW_PRIVATE_ADDRESSES|'Spider closed \(finished\)' in",
    ),
    Rule(
        r"test_crawler_subprocess\.py::\w+::test_reactorless_|::test_no_reactor$",
        "reactorless",
        "TWISTED_REACTOR_ENABLED=False: the add-on's ConfigurationError",
        r"irlscrapy needs a Twisted reactor",
    ),
    Rule(
        r"test_crawler_subprocess\.py::TestAsyncCrawlerProcessSubprocess::"
        r"test_reactorless_shutdown_",
        "reactorless",
        "the script never logs 'Spider opened': its crawl is refused with the "
        "add-on's ConfigurationError (stderr, not in the report)",
        r"pexpect\.exceptions\.(EOF|TIMEOUT)",
    ),
    Rule(
        r"test_command_fetch\.py::TestFetchCommand::test_no_reactor$",
        "reactorless",
        "`scrapy fetch -s TWISTED_REACTOR_ENABLED=False` prints nothing: the add-on's "
        "ConfigurationError (stderr, not in the report)",
        r"assert '' == 'Works'",
    ),
    Rule(
        r".",
        "knock-on",
        "unraisable-exception warnings (ResourceWarning: files or subprocesses an earlier "
        "failing test left open) raised by GCTuning's gc.collect() at spider_opened",
        r"gctuning\.py\", line \d+, in spider_opened\s+(\|\s+)?gc\.collect\(\)",
    ),
)
#: What the ``knock-on`` rule means: a failure caused by another test's failure.
KNOCK_ON = (
    "knock-on: garbage an earlier failing test left (unclosed files, running subprocesses) "
    "is finalized by the add-on's full collection when this test's spider opens "
    "(irlscrapy/runtime/gctuning.py), and pytest turns its ResourceWarnings into this "
    "test's failure"
)


@dataclass
class Result:
    outcome: str  # passed, failed, error, skipped
    time: float
    message: str = ""
    text: str = ""
    output: str = ""  # captured stdout, stderr and log (junit_logging=all)


@dataclass
class Run:
    name: str
    results: dict[str, Result] = field(default_factory=dict)
    wall_s: float = 0.0
    returncode: int = 0


def note(*parts: Any) -> None:
    print("#", *parts, flush=True)


# -- the sdist and the virtualenv ---------------------------------------------------------


def scrapy_version() -> str:
    try:
        return version("scrapy")
    except PackageNotFoundError:
        sys.exit(f"no Scrapy installed for {sys.executable}; run this with the project's venv")


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def pip(python: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [str(python), "-m", "pip", "--disable-pip-version-check", *args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if check and out.returncode:
        sys.exit(f"pip {' '.join(args)} failed:\n{out.stdout[-2000:]}{out.stderr[-3000:]}")
    return out


def make_venv(venv: Path) -> Path:
    """A bare virtualenv (its pip upgraded), made if missing; its interpreter."""
    python = venv_python(venv)
    if not python.exists():
        note(f"creating the virtualenv {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip(python, "install", "--upgrade", "pip")
    return python


def ensure_sdist(cache: Path, python: Path, scrapy: str) -> Path:
    """Scrapy's sdist of version ``scrapy``, extracted; its directory."""
    root = cache / f"scrapy-{scrapy}"
    if (root / "tox.ini").exists():
        return root
    sdists = cache / "sdist"
    archive = sdists / f"scrapy-{scrapy}.tar.gz"
    if not archive.exists():
        note(f"downloading Scrapy {scrapy}'s sdist")
        pip(
            python,
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            f"scrapy=={scrapy}",
            "-d",
            str(sdists),
        )
    staging = cache / f"scrapy-{scrapy}.extracting"
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (top,) = staging.iterdir()  # the sdist's single top directory
    top.rename(root)
    staging.rmdir()
    return root


def project_config_above(path: Path) -> Path | None:
    """The scrapy.cfg that Scrapy's commands, started in ``path``, would take for their
    project's (scrapy.utils.conf.closest_scrapy_cfg walks up from the working directory)."""
    for directory in (path, *path.parents):
        if (directory / "scrapy.cfg").is_file():
            return directory / "scrapy.cfg"
    return None


def tox_deps(sdist: Path) -> list[str]:
    """The requirements of tox.ini's ``[testenv] deps``: ``{[section]key}`` references
    expanded, comments dropped, ``-r file`` read relative to the sdist."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(sdist / "tox.ini", encoding="utf-8")

    def expand(section: str, key: str) -> list[str]:
        return lines(ini.get(section, key, fallback=""), sdist)

    def lines(text: str, base: Path) -> list[str]:
        out = []
        for raw in text.splitlines():
            line = raw.split(" #", 1)[0].strip()
            ref = re.fullmatch(r"\{\[([^\]]+)\]([\w-]+)\}", line)
            included = re.fullmatch(r"(?:-r|--requirement)[\s=]*(\S+)", line)
            if not line or line.startswith("#"):
                continue
            if ref:
                out += expand(ref[1], ref[2])
            elif included:
                path = base / included[1]
                out += lines(path.read_text(encoding="utf-8"), path.parent)
            else:
                out.append(line)
        return out

    deps = expand("testenv", "deps")
    return list(dict.fromkeys(deps + list(EXTRA_DEPS)))


def release_cutoff(sdist: Path, scrapy: str) -> str | None:
    """The day after Scrapy ``scrapy`` was released (its entry in docs/news.rst), as
    pip's --uploaded-prior-to takes it; None if the sdist does not say."""
    news = sdist / "docs" / "news.rst"
    text = news.read_text(encoding="utf-8") if news.exists() else ""
    m = re.search(rf"^Scrapy {re.escape(scrapy)} \((\d{{4}}-\d{{2}}-\d{{2}})\)", text, re.M)
    if not m:
        return None
    day = datetime.date.fromisoformat(m[1]) + datetime.timedelta(days=1)
    return f"{day.isoformat()}T00:00:00Z"


def project_digest() -> str:
    """A digest of the files a pip install of this repository copies."""
    h = hashlib.sha256()
    paths = sorted(REPO.glob("irlscrapy/**/*"))
    for path in [REPO / "pyproject.toml", REPO / "setup.py", *paths]:
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def install(
    python: Path, venv: Path, scrapy: str, deps: list[str], cutoff: str | None
) -> dict[str, Any]:
    """This repository and scrapy==X, then the test requirements (each that fails to
    install is skipped); returns the virtualenv's stamp."""
    pin = f"scrapy=={scrapy}"
    constraints = venv / "constraints.txt"
    constraints.write_text(pin + "\n")
    note(
        f"installing {pin}, this repository and {len(deps)} test requirements"
        + (f" (as of {cutoff})" if cutoff else "")
    )
    pip(python, "install", "-c", str(constraints), pin, str(REPO))
    dated = ["--uploaded-prior-to", cutoff] if cutoff else []
    args = ["install", "-c", str(constraints), *dated]
    skipped = []
    if pip(python, *args, *deps, check=False).returncode:
        for dep in deps:  # one at a time, to find those that cannot be installed
            if pip(python, *args, dep, check=False).returncode:
                skipped.append(dep)
    listed = json.loads(pip(python, "list", "--format=json").stdout)
    return {
        "scrapy": scrapy,
        "deps": deps,
        "cutoff": cutoff,
        "skipped": skipped,
        "project": project_digest(),
        "versions": {d["name"].lower(): d["version"] for d in listed},
    }


def ensure_environment(cache: Path, scrapy: str) -> tuple[Path, Path]:
    """The virtualenv and the extracted sdist, made or brought up to date.

    The test requirements are mostly unpinned; installed today they can be newer than
    Scrapy X's test tree knows (pytest releases deprecate what older tests do, and the
    suite turns warnings into errors), so they are taken as of the day after X's release
    (pip's --uploaded-prior-to). This repository and Scrapy's own dependencies are not
    dated: they are what ``pip install .`` gives today."""
    venv = cache / f"venv-{scrapy}"
    python = make_venv(venv)
    sdist = ensure_sdist(cache, python, scrapy)
    cfg = project_config_above(sdist)
    if cfg is not None:
        sys.exit(
            f"{cfg} is above {sdist}: Scrapy's commands in the tests would load that "
            "project's settings; use a --cache directory outside any Scrapy project"
        )
    deps = tox_deps(sdist)
    cutoff = release_cutoff(sdist, scrapy)
    stamp = venv / "suite.json"
    state = json.loads(stamp.read_text()) if stamp.exists() else {}
    wanted = {"scrapy": scrapy, "deps": deps, "cutoff": cutoff}
    if any(state.get(k) != v for k, v in wanted.items()):
        if state:  # made for other requirements: start again (pip would not downgrade)
            shutil.rmtree(venv)
            python = make_venv(venv)
        state = install(python, venv, scrapy, deps, cutoff)
    elif state.get("project") != project_digest():
        note("reinstalling this repository (its files changed)")
        pip(python, "install", "--no-deps", "--force-reinstall", str(REPO))
        state["project"] = project_digest()
    stamp.write_text(json.dumps(state, indent=1))
    versions = state["versions"]
    note("in", venv, "; ".join(f"{n} {versions.get(n.lower(), '-')}" for n in SHOWN_VERSIONS))
    if state["skipped"]:
        note("test requirements that did not install (skipped):", ", ".join(state["skipped"]))
    return python, sdist


# -- the add-on switch --------------------------------------------------------------------

SITECUSTOMIZE = '''\
"""Written by bench/scrapy_suite.py: switches the irlscrapy add-on on in every Scrapy
of this interpreter and of the subprocesses it starts (they inherit PYTHONPATH).

Nothing is imported at start-up: a finder waits for scrapy.settings.default_settings
and sets SETTINGS in it once Scrapy has executed it. Any failure leaves imports as
they are, so an interpreter without Scrapy (pip, venv) runs unaffected."""

import sys

TARGET = "scrapy.settings.default_settings"
SETTINGS = {settings!r}


class _Loader:
    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        for name, value in SETTINGS.items():
            setattr(module, name, value)


class _Finder:
    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET:
            return None
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None and spec.loader is not None:
                    spec.loader = _Loader(spec.loader)
                    return spec
        except Exception:
            pass
        return None


sys.meta_path.insert(0, _Finder())
'''

#: Run in the add-on environment (from the sdist directory, as the tests are) before the
#: add-on run; prints what it finds as JSON.
CHECK = """\
import json, sys
started_with_scrapy = "scrapy" in sys.modules
from scrapy.settings import Settings
import irlscrapy
s = Settings()
print(json.dumps({
    "started_with_scrapy": started_with_scrapy,
    "settings": {k: getattr(s[k], "copy_to_dict", lambda: s[k])() for k in %r},
    "irlscrapy": irlscrapy.__file__,
}))
"""


def write_patch(cache: Path) -> Path:
    patch = cache / "patch"
    patch.mkdir(parents=True, exist_ok=True)
    (patch / "sitecustomize.py").write_text(SITECUSTOMIZE.format(settings=ADDON_SETTINGS))
    return patch


def run_env(patch: Path | None) -> dict[str, str]:
    """The environment of a run: no proxy variables, no PYTHONPATH but ``patch``'s.

    ``patch`` goes in with a trailing empty entry: the tests start scripts with
    ``PYTHONPATH=<dir>:$PYTHONPATH``, which without a PYTHONPATH of ours ends in an empty
    entry (the working directory, the sdist, where ``tests`` is imported from); ours
    must end the same way."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    env.pop("PYTHONPATH", None)
    env.pop("PYTEST_ADDOPTS", None)
    if patch is not None:
        env["PYTHONPATH"] = str(patch) + os.pathsep
    return env


def check_patch(python: Path, sdist: Path, patch: Path) -> None:
    """Exits unless the patch switches the add-on on and imports nothing at start-up."""
    out = subprocess.run(
        [str(python), "-c", CHECK % (list(ADDON_SETTINGS),)],
        cwd=sdist,
        env=run_env(patch),
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(f"the add-on patch does not work:\n{out.stderr[-3000:]}")
    found = json.loads(out.stdout.splitlines()[-1])
    if found["settings"] != ADDON_SETTINGS or found["started_with_scrapy"]:
        sys.exit(f"the add-on patch does not work: {found}")
    bare = subprocess.run(
        [str(python), "-c", "import sys, sitecustomize; assert 'scrapy' not in sys.modules"],
        env={**run_env(patch), "PYTHONNOUSERSITE": "1"},
        capture_output=True,
        text=True,
    )
    if bare.returncode:
        sys.exit(f"sitecustomize imports Scrapy at start-up:\n{bare.stderr[-2000:]}")
    note(
        f"add-on patch checked: Settings()['ADDONS'] = {found['settings']['ADDONS']}, "
        f"irlscrapy from {found['irlscrapy']}"
    )


# -- the runs -----------------------------------------------------------------------------

#: One verbose pytest line: "tests/test_x.py::Class::test_y[p] PASSED   [ 12%]".
VERBOSE_LINE = re.compile(
    r"^(?P<id>tests/\S+::\S+) (?P<outcome>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
    r"(?:.*\[\s*(?P<pct>\d+)%\])?"
)


def run_pytest(
    name: str, python: Path, sdist: Path, files: list[str], out_dir: Path, patch: Path | None
) -> Run:
    xml = out_dir / f"{name}.xml"
    log = out_dir / f"{name}.log"
    cmd = [
        str(python),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--timeout={TIMEOUT_S}",
        f"--junitxml={xml}",
        "-o",
        "junit_logging=all",  # captured output and log in the XML, passing tests too
        "-v",
        "-rfE",
        *(f"tests/{f}.py" for f in files),
    ]
    note(f"{name}: {' '.join(cmd[1:])}")
    counts: dict[str, int] = {}
    last = {"pct": "0", "id": ""}
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as log_file:
        proc = subprocess.Popen(
            cmd,
            cwd=sdist,
            env=run_env(patch),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        assert proc.stdout is not None
        done = threading.Event()

        def progress() -> None:
            while not done.wait(PROGRESS_S):
                tally = ", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items()))
                note(
                    f"{name}: {time.monotonic() - started:5.0f} s  {last['pct']:>3}%  "
                    f"{tally}  (at {last['id']})"
                )

        ticker = threading.Thread(target=progress, daemon=True)
        ticker.start()
        killer = threading.Timer(RUN_WALL_S, os.killpg, (proc.pid, signal.SIGKILL))
        killer.start()
        try:
            for line in proc.stdout:
                log_file.write(line)
                m = VERBOSE_LINE.match(line)
                if not m:
                    continue
                counts[m["outcome"]] = counts.get(m["outcome"], 0) + 1
                last["id"] = m["id"]
                last["pct"] = m["pct"] or last["pct"]
                if m["outcome"] in ("FAILED", "ERROR"):
                    note(f"{name}: {m['outcome']} {m['id']}")
            proc.wait()
        finally:
            killer.cancel()
            done.set()
            # Scripts a failing test left running (a crawl started with --no-stop whose
            # test gave up on it) are in the run's process group: end them with the run.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    wall = time.monotonic() - started
    (out_dir / f"{name}.json").write_text(
        json.dumps({"files": files, "wall_s": wall, "returncode": proc.returncode})
    )
    note(f"{name}: pytest exited {proc.returncode} after {wall:.0f} s; output in {log}")
    return load_run(name, out_dir)


def load_run(name: str, out_dir: Path) -> Run:
    meta = json.loads((out_dir / f"{name}.json").read_text())
    run = Run(name, wall_s=meta["wall_s"], returncode=meta["returncode"])
    xml = out_dir / f"{name}.xml"
    if xml.exists():
        run.results = parse_junit(xml)
    return run


def kept(name: str, out_dir: Path, files: list[str]) -> Run | None:
    """The run ``name`` of an earlier invocation, if it ran the same files."""
    meta = out_dir / f"{name}.json"
    if not meta.exists() or not (out_dir / f"{name}.xml").exists():
        return None
    if json.loads(meta.read_text())["files"] != files:
        return None
    return load_run(name, out_dir)


def node_id(classname: str, name: str) -> str:
    """pytest's node id from junit's classname and name: "tests.test_x.TestY" and
    "test_z" give "tests/test_x.py::TestY::test_z" (the files run are all in tests/)."""
    parts = classname.split(".")
    if len(parts) >= 2 and parts[0] == "tests":
        return "::".join([f"tests/{parts[1]}.py", *parts[2:], name])
    return "::".join([*parts, name])


def parse_junit(xml: Path) -> dict[str, Result]:
    """Each test's outcome (the worst of its call and teardown), time, message and
    captured output."""
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    out: dict[str, Result] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        tid = node_id(case.get("classname", ""), case.get("name", ""))
        result = Result("passed", float(case.get("time") or 0))
        for child in case:
            if child.tag in ("system-out", "system-err"):
                result.output += child.text or ""
            kind = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(child.tag)
            if kind and rank[kind] > rank[result.outcome]:
                result.outcome = kind
                result.message = child.get("message", "")
                result.text = child.text or ""
        old = out.get(tid)
        if old is None or rank[result.outcome] > rank[old.outcome]:
            out[tid] = result
    return out


# -- the comparison -----------------------------------------------------------------------


def is_timeout(r: Result) -> bool:
    return "Timeout" in r.message and "pytest-timeout" in (r.message + r.text)


def summary_line(r: Result) -> str:
    """The failure in one line: pytest's message, or for a bare AssertionError the
    statement that failed (the traceback's last '>' line)."""
    text = r.message
    if text.strip() in ("", "AssertionError"):
        failed = [ln[1:].strip() for ln in r.text.splitlines() if ln.startswith(">")]
        errors = [ln[1:].strip() for ln in r.text.splitlines() if ln.startswith("E ")]
        text = f"AssertionError at: {failed[-1]}" if failed else (errors or [text])[0]
    text = " ".join(text.split())
    return text[:160] + ("..." if len(text) > 160 else "")


def classify(tid: str, r: Result) -> Rule | None:
    blob = f"{r.message}\n{r.text}\n{r.output}"
    for rule in CLASSIFICATION:
        if re.search(rule.test, tid) and (not rule.error or re.search(rule.error, blob)):
            return rule
    return None


def readme_line(key: str) -> str:
    """The clause of README.md or the manual (docs/) that documents the difference ``key``."""
    phrase, proposed = DIFFERENCES[key]
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    text = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in pages)
    at = text.find(phrase)
    if at < 0:
        return f"NOT IN README (proposed: {proposed})"
    start = max(text.rfind(sep, 0, at) + len(sep) for sep in (". ", "; ", ": ", "- "))
    ends = [e for e in (text.find(sep, at) for sep in (". ", "; ")) if e >= 0]
    return text[max(start, 0) : min(ends) + 1 if ends else None]


def counts(run: Run) -> dict[str, int]:
    out = {"tests": len(run.results), "passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for r in run.results.values():
        out[r.outcome] += 1
    out["timeouts"] = sum(is_timeout(r) for r in run.results.values())
    out["slow"] = sum(r.time >= TIMEOUT_S for r in run.results.values())
    return out


def report(runs: dict[str, Run]) -> int:
    """Prints the counts of each run and, with both, the regressions; returns how many
    regressions are bugs."""
    for run in runs.values():
        c = counts(run)
        print(
            f"{run.name:6} {c['tests']:5} tests  {c['passed']:5} passed  "
            f"{c['failed']:4} failed  {c['error']:4} errors  {c['skipped']:4} skipped  "
            f"{c['timeouts']} timeouts, {c['slow']} hangs (>= {TIMEOUT_S} s)  "
            f"wall {run.wall_s:.0f} s  (pytest exit {run.returncode})"
        )
        for figure, value in c.items():
            emit(BENCH_NAME, figure, value, "tests", run=run.name)
        emit(BENCH_NAME, "wall_s", round(run.wall_s, 1), "s", run=run.name)
    if set(runs) != set(RUNS):
        return 0
    stock, addon = runs["stock"], runs["addon"]
    regressions = []
    for tid, r in stock.results.items():
        if r.outcome != "passed":
            continue
        a = addon.results.get(tid, Result("missing", 0.0, "not in the add-on run's XML"))
        if a.outcome in ("failed", "error", "missing"):
            regressions.append((tid, a, classify(tid, a)))
    order = {**{k: i for i, k in enumerate(DIFFERENCES)}, "knock-on": len(DIFFERENCES)}
    regressions.sort(key=lambda x: (order.get(x[2].key, 99) if x[2] else 100, x[0]))
    bugs = sum(rule is None for _, _, rule in regressions)
    knock_ons = sum(rule is not None and rule.key == "knock-on" for _, _, rule in regressions)
    print(
        f"\n{len(regressions)} tests pass stock and fail with the add-on: "
        f"{len(regressions) - bugs - knock_ons} documented differences, "
        f"{knock_ons} knock-on, {bugs} bugs\n"
    )
    print(f"{'outcome':8} {'class':18} test / error / why")
    by_key: dict[str, list[str]] = {}
    for tid, a, rule in regressions:
        kind = "TIMEOUT" if is_timeout(a) else a.outcome.upper()
        key = rule.key if rule else "bug"
        print(f"{kind:8} {key:18} {tid}\n{'':28}{summary_line(a)}")
        if rule is not None:
            by_key.setdefault(rule.key, []).append(tid)
            print(f"{'':28}why: {rule.reason}")
    if by_key:
        print("\nREADME.md's line for each difference:")
        for key, tids in by_key.items():
            line = KNOCK_ON if key == "knock-on" else readme_line(key)
            print(f"  {key} ({len(tids)} tests): {line}")
    closespider_errors(stock, addon)
    emit(BENCH_NAME, "regressions", len(regressions), "tests")
    emit(BENCH_NAME, "knock_on", knock_ons, "tests")
    emit(BENCH_NAME, "bugs", bugs, "tests")
    return bugs


#: An ERROR or CRITICAL record in pytest's captured log (its default log format).
ERROR_RECORD = re.compile(r"^(?:ERROR|CRITICAL) +\S+:\S+:\d+ .*$", re.M)


def closespider_errors(stock: Run, addon: Run) -> None:
    """test_closespider's tests whose crawl logged an ERROR (Scrapy's log_count/ERROR)
    with the add-on, and whether they did stock, from the captured logs."""
    hits = []
    for tid, r in sorted(addon.results.items()):
        if "test_closespider" in tid and (records := ERROR_RECORD.findall(r.output)):
            before = stock.results.get(tid)
            also = bool(before and ERROR_RECORD.search(before.output))
            hits.append(f"  {tid} ({'also' if also else 'not'} stock): {records[0][:120]}")
    print(f"\ntest_closespider tests that logged an ERROR with the add-on: {len(hits)}")
    print("\n".join(hits))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", help="comma-separated test file names (default: all 35)")
    parser.add_argument("--only", choices=RUNS, help="run only this one")
    parser.add_argument(
        "--keep", action="store_true", help="reuse a run's results from an earlier invocation"
    )
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help=f"sdist and virtualenv directory ({CACHE})"
    )
    args = parser.parse_args()
    cache = args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    scrapy = scrapy_version()
    note(f"Scrapy {scrapy} (from {sys.executable})")
    python, sdist = ensure_environment(cache, scrapy)
    wanted = args.files.split(",") if args.files else list(FILES)
    wanted = [f.strip().removeprefix("tests/").removesuffix(".py") for f in wanted]
    missing = [f for f in wanted if not (sdist / "tests" / f"{f}.py").exists()]
    if missing:
        note(f"not in Scrapy {scrapy}, skipped:", ", ".join(missing))
    files = [f for f in wanted if f not in missing]
    if not files:
        sys.exit("no test files to run")
    out_dir = OUT / scrapy
    out_dir.mkdir(parents=True, exist_ok=True)
    patch = write_patch(cache)
    runs: dict[str, Run] = {}
    for name in RUNS:
        previous = kept(name, out_dir, files)
        skip = args.only is not None and args.only != name
        if skip or (args.keep and previous is not None):
            if previous:
                note(f"{name}: results of an earlier run reused ({out_dir / name}.xml)")
                runs[name] = previous
            continue
        if name == "addon":
            check_patch(python, sdist, patch)
        runs[name] = run_pytest(
            name, python, sdist, files, out_dir, patch if name == "addon" else None
        )
    print()
    bugs = report(runs)
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
