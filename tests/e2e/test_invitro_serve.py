"""The manual's ``irlscrapy invitro serve`` command, run as written: its first line is
the JSON object the manual shows (every key it names is there), its proxy serves the
seeds, and the request log it was given records what was fetched.

The command and the sample are read from docs/broad-spider.md at test time."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .firsthour.readme import code_blocks

SECTION = "The in-vitro web"
#: Building the broad profile's web and binding its servers takes about a second.
START_TIMEOUT = 60


def keys(value: Any) -> set[str]:
    """Every key of ``value``'s objects, nested ones too."""
    if isinstance(value, dict):
        return set(value).union(*(keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys(v) for v in value))
    return set()


@pytest.mark.e2e
def test_the_manuals_serve_command_prints_what_it_shows_and_serves_the_seeds(
    tmp_path: Path,
) -> None:
    (command,) = code_blocks(SECTION, "sh")
    args = shlex.split(command, comments=True)
    assert args[:3] == ["irlscrapy", "invitro", "serve"], command
    (sample,) = code_blocks(SECTION, "text")
    shown = set(re.findall(r'"(\w+)":', sample))
    assert {"proxy", "dns", "seeds", "settings", "env"} <= shown, sample

    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(Path.home())}
    if "PYTHONPATH" in os.environ:  # a work tree's code rather than the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    with subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stdout is not None
            first = server.stdout.readline()
            assert first, server.communicate(timeout=START_TIMEOUT)[1][-3000:]
            printed = json.loads(first)
            assert shown <= keys(printed), (shown - keys(printed), first)
            assert printed["env"]["http_proxy"] == printed["proxy"]

            proxy = urllib.request.ProxyHandler({"http": printed["proxy"]})
            with urllib.request.build_opener(proxy).open(printed["seeds"][0], timeout=10) as page:
                assert page.status == 200
                assert page.read()
        finally:
            server.terminate()
            server.wait(timeout=START_TIMEOUT)
    log = (tmp_path / "requests.jsonl").read_text(encoding="utf-8")
    logged = [json.loads(line) for line in log.splitlines()]
    seed_host = urllib.parse.urlsplit(printed["seeds"][0]).hostname
    assert [(r["host"], r["status"]) for r in logged] == [(seed_host, 200)], logged
