"""A Scrapy user's project, made at test time by ``scrapy startproject``, and a real
site on loopback for it to crawl.

The site is HTML documentation that a Debian package ships (Flask's, about 80 pages,
``tests/system-packages.sh`` installs it), served by ``python3 -m http.server`` on an
ephemeral loopback port. The project gets one ordinary spider, ``docs``: it yields an
item per page (its URL and title) and a ``response.follow`` Request per link on the
site; nothing irlscrapy-specific. :func:`adopt` pastes the README's settings block
into the project's ``settings.py`` as written.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: The site's pages: Flask's documentation, as Debian ships it.
DOCS_ROOT = Path("/usr/share/doc/python-flask-doc/html")
DOCS_PACKAGE = "python-flask-doc"
PROJECT_NAME = "docs"

SPIDER = '''\
import scrapy


class DocsSpider(scrapy.Spider):
    """An ordinary spider: an item per page, a Request per link on the site."""

    name = "docs"
    allowed_domains = ["127.0.0.1"]

    def __init__(self, url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''


@dataclass
class Project:
    """A project directory made by ``scrapy startproject``, with the ``docs`` spider."""

    root: Path  # where scrapy.cfg is

    @property
    def settings(self) -> Path:
        return self.root / PROJECT_NAME / "settings.py"

    def append_settings(self, text: str) -> None:
        with open(self.settings, "a", encoding="utf-8") as settings:
            settings.write("\n" + text)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "scrapy", *args]

    def crawl_command(self, url: str, *args: str, feed: str = "items.jsonl") -> list[str]:
        """``scrapy crawl docs -a url=URL -o FEED ARGS...`` (``-o`` appends, so the
        feed of a stopped and resumed crawl holds every run's items)."""
        return self.command("crawl", "docs", "-a", f"url={url}", "-o", feed, *args)

    def run(self, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=self.root, capture_output=True, text=True, timeout=timeout)

    def start(self, args: list[str]) -> subprocess.Popen[str]:
        """The command in the background, its log (stderr) to ``crawl-<n>.log``."""
        number = len(list(self.root.glob("crawl-*.log")))
        with open(self.root / f"crawl-{number}.log", "w", encoding="utf-8") as log:
            return subprocess.Popen(  # (the child has its own copy of the file)
                args, cwd=self.root, stdout=log, stderr=subprocess.STDOUT, text=True
            )

    def items(self, feed: str = "items.jsonl") -> list[dict[str, str]]:
        path = self.root / feed
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def item_urls(self, feed: str = "items.jsonl") -> Counter[str]:
        return Counter(item["url"] for item in self.items(feed))


def startproject(parent: Path, name: str = "project") -> Project:
    """``scrapy startproject docs DIR`` in ``parent``, and the ``docs`` spider."""
    root = parent / name
    subprocess.run(
        [sys.executable, "-m", "scrapy", "startproject", PROJECT_NAME, str(root)],
        check=True,
        capture_output=True,
        text=True,
    )
    (root / PROJECT_NAME / "spiders" / "docs.py").write_text(SPIDER, encoding="utf-8")
    return Project(root)


def add_addon(project: Project) -> None:
    """What a user does with no more than the add-on's one line: fill the template's
    ``ADDONS = {}``."""
    text = project.settings.read_text(encoding="utf-8")
    assert "\nADDONS = {}\n" in text, "scrapy startproject's template changed"
    project.settings.write_text(
        text.replace("\nADDONS = {}\n", '\nADDONS = {"irlscrapy.Addon": 0}\n'),
        encoding="utf-8",
    )


@dataclass(frozen=True)
class Site:
    url: str  # the start page
    pages: int  # HTML files under the root


@contextmanager
def serve_docs(root: Path = DOCS_ROOT) -> Iterator[Site]:
    """``python3 -m http.server`` over ``root`` on an ephemeral loopback port."""
    if not root.is_dir():
        raise RuntimeError(
            f"{root} is missing: install {DOCS_PACKAGE} (sh tests/system-packages.sh)"
        )
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r"port (\d+)", line)
        assert match, f"http.server said {line!r}"
        pages = sum(1 for _ in root.rglob("*.html"))
        yield Site(f"http://127.0.0.1:{match[1]}/index.html", pages)
    finally:
        server.terminate()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()


def interrupt(process: subprocess.Popen[str], timeout: float = 60) -> int:
    """Ctrl-C: SIGINT once, as a terminal sends it, and wait for the crawl to end."""
    process.send_signal(signal.SIGINT)
    return process.wait(timeout)


def kill(process: subprocess.Popen[str]) -> int:
    """kill -9."""
    os.kill(process.pid, signal.SIGKILL)
    return process.wait(30)
