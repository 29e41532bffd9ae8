"""Every command and snippet the README and the manual show is run by a test, or says why
it is not: the docs cannot drift from the code unnoticed.

The scheme: the line right above each fenced code block of README.md and docs/*.md is an
HTML comment (invisible in the rendered page), one of

    <!-- run by: tests/e2e/firsthour/test_demo.py -->
    <!-- not run: <why> -->

``run by`` names a test file (optionally followed by a note in parentheses). That file
must read the block at test time: one of its ``section("...")`` or ``code_blocks("...")``
calls (the heading given as a string, or as a module-level string constant) must name a
section whose text holds the block word for word. A block that repeats another word for
word (the README's demo, again in the manual's "Getting started") is run with its twin.
``not run`` gives a reason; an output sample says ``not run: output, ...``. Run or not,
every ``irlscrapy ...`` command of an ``sh`` block must parse with this tree's CLI.

Out of scope, by rule and not by marker:
- MyST directives (```` ```{toctree} ````, ```` ```{include} ````) are not code blocks;
- BENCHMARKS.md, which docs/benchmarks.md includes: its commands are run by hand and
  recorded with their figures, which is what that page is for.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from irlscrapy import cli
from tests.e2e.firsthour.readme import section

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>.*)$")
HEADING = re.compile(r"^#+ (.*)$")
MARKER = re.compile(r"^\s*<!-- (?P<kind>run by|not run): (?P<rest>.*?) -->\s*$")
READERS = ("section", "code_blocks")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    heading: str
    info: str
    body: str
    marker: re.Match[str] | None

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.heading!r})"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page`` (directives left out), with the line above each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found = []
    heading = ""
    number = 0
    while number < len(lines):
        fence = FENCE.match(lines[number])
        if not fence:
            title = HEADING.match(lines[number])
            heading = title[1] if title else heading
            number += 1
            continue
        start, indent, ticks = number, fence["indent"], fence["ticks"]
        number += 1
        while number < len(lines) and lines[number].strip() != ticks:
            number += 1
        body = "".join(line.removeprefix(indent) + "\n" for line in lines[start + 1 : number])
        info = fence["info"].strip()
        if not info.startswith("{"):
            above = MARKER.match(lines[start - 1]) if start else None
            found.append(Block(page, start + 1, heading, info, body, above))
        number += 1
    return found


def every_block() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def headings_read_by(test_file: Path) -> list[str]:
    """The headings ``test_file`` hands to section() or code_blocks()."""
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    headings = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name not in READERS:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            headings.append(first.value)
        elif isinstance(first, ast.Name) and first.id in constants:
            headings.append(constants[first.id])
    return headings


def test_the_pages_have_the_blocks_this_test_expects_to_find() -> None:
    """The lister itself: it finds the README's demo, an indented block in a list, and
    leaves the toctree directives out."""
    found = every_block()
    assert any(b.page.name == "README.md" and "scrapy crawl broad" in b.body for b in found)
    assert any(b.page.name == "agents.md" and b.body.startswith("for agent") for b in found)
    assert not any("toctree" in b.info or "maxdepth" in b.body for b in found)
    assert len(found) >= 20, [b.where() for b in found]


def test_every_block_of_the_readme_and_the_manual_is_run_or_says_why_not() -> None:
    unmarked = [block.where() for block in every_block() if block.marker is None]
    assert not unmarked, f"put <!-- run by: TEST --> or <!-- not run: WHY --> above {unmarked}"


def test_a_block_marked_not_run_gives_a_reason() -> None:
    bare = [
        block.where()
        for block in every_block()
        if block.marker and block.marker["kind"] == "not run" and len(block.marker["rest"]) < 6
    ]
    assert not bare, bare


def test_a_block_marked_run_by_is_read_by_that_test_file() -> None:
    wrong = []
    for block in every_block():
        if not block.marker or block.marker["kind"] != "run by":
            continue
        test_file = ROOT / block.marker["rest"].split()[0]
        if not (test_file.is_file() and test_file.name.startswith("test_")):
            wrong.append(f"{block.where()}: {test_file.relative_to(ROOT)} is no test file")
            continue
        headings = headings_read_by(test_file)
        if not any(block.body in section(heading) for heading in headings):
            wrong.append(f"{block.where()}: {test_file.name} reads only {headings}")
    assert not wrong, wrong


def test_the_run_by_check_reads_a_heading_given_as_a_constant() -> None:
    """test_mistakes.py names its section through ``SECTION``: that must count."""
    path = ROOT / "tests" / "e2e" / "firsthour" / "test_mistakes.py"
    assert "Adding it to an existing project" in headings_read_by(path)


def irlscrapy_commands() -> list[tuple[str, list[str]]]:
    """Every ``irlscrapy ...`` command of the ``sh`` blocks (run or not), as argv."""
    found = []
    for block in every_block():
        if block.info != "sh":
            continue
        for line in block.body.replace("\\\n", " ").splitlines():
            for command in re.split(r"&&|;|\|", line):
                argv = shlex.split(command, comments=True)
                if argv[:1] == ["irlscrapy"]:
                    found.append((block.where(), argv[1:]))
    return found


def parses(argv: list[str]) -> bool:
    try:
        cli._parser().parse_args(argv)
    except SystemExit:
        return False
    return True


def test_every_irlscrapy_command_the_docs_show_parses_with_the_cli_of_this_tree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Blocks that are not run still name subcommands and options that exist."""
    commands = irlscrapy_commands()
    assert {argv[0] for _, argv in commands} >= {"report", "check", "repair", "invitro"}
    refused = [
        f"{where}: irlscrapy {shlex.join(argv)}" for where, argv in commands if not parses(argv)
    ]
    assert not refused, (refused, capsys.readouterr().err)


def test_a_misspelt_option_does_not_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """The check above can fail: the parser refuses what the CLI does not have."""
    assert parses(["report", "crawls/demo", "--out", "/tmp/r"])
    assert not parses(["report", "crawls/demo", "--output", "/tmp/r"])
    assert "unrecognized arguments: --output" in capsys.readouterr().err
