"""The package's layering, read from the imports of every module of irlscrapy/ (module
level, function level and TYPE_CHECKING alike, so a hidden cycle counts too):

- no import circle: modules form a hierarchy, each standing above what it imports;
- the algorithm modules (DRUM and its files, the record file, every module of
  irlscrapy.scheduler.frontier: BEAST, the workbench, the admitted journal and the rest,
  STAR's budget functions, the in-vitro web's generator) import no Scrapy or Twisted,
  themselves or through what they import: they are the paper's structures, usable and
  testable without a crawler;
- the in-vitro web (irlscrapy/invitro/) imports nothing of the crawler but
  irlscrapy.exceptions: the test web knows nothing of what it tests (the oracle that
  applies the crawler's rules to it is irlscrapy.oracle, outside);
- the spiders import no scheduler: a spider hands over Links and Requests, and the
  add-on (settings by name) joins it to the frontier;
- the storage engine (irlscrapy/storage/) imports nothing of irlscrapy but itself and
  irlscrapy.exceptions, and no Scrapy or Twisted;
- no arrow runs back up the layers of docs/architecture.md (LAYERS), but the ones
  KNOWN_UPWARD lists;
- the benchmarks (bench/) and the shared harness (harness/) import nothing from tests/:
  what both need lives in harness/;
- no module is longer than MAX_MODULE_LINES.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "irlscrapy"
#: The frontier's structures: every module of this package (its docstring says so).
FRONTIER = "irlscrapy.scheduler.frontier"
ALGORITHMS = (
    "irlscrapy.storage.drum",
    "irlscrapy.storage.drumcache",
    "irlscrapy.storage.drumjournal",
    "irlscrapy.storage.drummerge",
    "irlscrapy.storage.recordfile",
    "irlscrapy.star.budgets",
    "irlscrapy.invitro.web",
    "irlscrapy.invitro.paths",
    "irlscrapy.invitro.replies",
    "irlscrapy.invitro.linkplan",
    "irlscrapy.invitro.content",
    "irlscrapy.invitro.profiles",
)
#: docs/architecture.md, section 1: the layers from the bottom up, each the module
#: prefixes it holds (a module is in the layer of its longest matching prefix).
LAYERS = (
    ("vocabulary", ("irlscrapy.exceptions", "irlscrapy.domains", "irlscrapy.links",
                    "irlscrapy.version")),
    ("storage", ("irlscrapy.storage",)),
    ("pure structures", (FRONTIER, "irlscrapy.star.budgets", "irlscrapy.dupefilters.urlkey",
                         "irlscrapy.spiders.extract", "irlscrapy.invitro")),
    ("settings", ("irlscrapy.defaults",)),
    ("run time", ("irlscrapy.runtime", "irlscrapy.state", "irlscrapy.startcheck")),
    ("components", ("irlscrapy.dupefilters", "irlscrapy.scheduler", "irlscrapy.star",
                    "irlscrapy.middlewares", "irlscrapy.warc", "irlscrapy.report",
                    "irlscrapy.spiders")),
    ("multi-agent", ("irlscrapy.distributed",)),
    ("entry points", ("irlscrapy", "irlscrapy.addon", "irlscrapy.cli", "irlscrapy.oracle")),
)  # fmt: skip
#: Arrows up that are known: the broad spider, run without the add-on, turns STAR's
#: middleware on at the add-on's order (the add-on holds the orders of every component
#: so that it imports none of them).
KNOWN_UPWARD = {
    ("irlscrapy.spiders.broad", "irlscrapy.addon"),
}
#: STYLE.md: split a module past ~500 lines; none may pass this.
MAX_MODULE_LINES = 600
CRAWL_FRAMEWORKS = {"scrapy", "twisted"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
PURE = (*ALGORITHMS, *(name for name in MODULES if name.startswith(f"{FRONTIER}.")))


def _imported(name: str, path: Path) -> Iterator[str]:
    """Every module ``name`` imports: irlscrapy's by their full names, others by their
    top-level package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name if alias.name.startswith("irlscrapy") else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if not module.startswith("irlscrapy"):
                yield module.split(".")[0]
                continue
            for alias in node.names:  # ``from irlscrapy.x import y``: y may be a module
                child = f"{module}.{alias.name}"
                yield child if child in MODULES else module


GRAPH = {
    name: {m for m in _imported(name, path) if m in MODULES and m != name}
    for name, path in MODULES.items()
}
EXTERNAL = {
    name: {m for m in _imported(name, path) if not m.startswith("irlscrapy")}
    for name, path in MODULES.items()
}


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for imported in GRAPH[stack.pop()]:
            if imported not in seen:
                seen.add(imported)
                stack.append(imported)
    return seen


def test_no_import_circle() -> None:
    circles = sorted(name for name in MODULES if name in _reachable(name))
    assert not circles, f"modules that import themselves through others: {circles}"


def test_the_algorithm_modules_import_no_crawl_framework() -> None:
    assert set(ALGORITHMS) <= set(MODULES), set(ALGORITHMS) - set(MODULES)
    assert f"{FRONTIER}.beast" in PURE and f"{FRONTIER}.workbench" in PURE
    offenders = {
        name: sorted(
            f"{module} imports {framework}"
            for module in {name} | _reachable(name)
            for framework in EXTERNAL[module] & CRAWL_FRAMEWORKS
        )
        for name in PURE
    }
    assert not {name: found for name, found in offenders.items() if found}


def test_the_in_vitro_web_knows_nothing_of_the_crawler() -> None:
    allowed = {"irlscrapy.exceptions"}
    crawler = {
        name: sorted(
            m for m in GRAPH[name] if not m.startswith("irlscrapy.invitro") and m not in allowed
        )
        for name in MODULES
        if name.startswith("irlscrapy.invitro")
    }
    assert not {name: found for name, found in crawler.items() if found}


def test_the_scheduler_imports_nothing_of_the_multi_agent_mode() -> None:
    """The agent plugs in (irlscrapy.scheduler.peers): the scheduler and what it
    imports reach no module of irlscrapy.distributed."""
    found = {
        name: sorted(m for m in _reachable(name) if m.startswith("irlscrapy.distributed"))
        for name in MODULES
        if name.startswith("irlscrapy.scheduler")
    }
    assert not {name: modules for name, modules in found.items() if modules}


def test_the_spiders_import_no_scheduler() -> None:
    found = {
        name: sorted(m for m in _reachable(name) if m.startswith("irlscrapy.scheduler"))
        for name in MODULES
        if name.startswith("irlscrapy.spiders")
    }
    assert not {name: modules for name, modules in found.items() if modules}


def test_the_storage_engine_imports_nothing_above_it() -> None:
    storage = [name for name in MODULES if name.startswith("irlscrapy.storage")]
    assert "irlscrapy.storage.drum" in storage
    above = {
        name: sorted(
            m for m in GRAPH[name]
            if not m.startswith("irlscrapy.storage") and m != "irlscrapy.exceptions"
        )
        for name in storage
    }  # fmt: skip
    assert not {name: found for name, found in above.items() if found}
    framework = {name: sorted(EXTERNAL[name] & CRAWL_FRAMEWORKS) for name in storage}
    assert not {name: found for name, found in framework.items() if found}


def _layer(name: str) -> int:
    """The index in LAYERS of the layer ``name`` is in."""
    matches = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if name == prefix or name.startswith(prefix + ".")
    ]
    assert matches, f"{name} is in no layer of LAYERS"
    return max(matches)[1]


def test_no_arrow_runs_back_up_the_layers() -> None:
    upward = {
        (name, imported)
        for name, imports in GRAPH.items()
        for imported in imports
        if _layer(imported) > _layer(name)
    }
    assert upward - KNOWN_UPWARD == set(), sorted(upward - KNOWN_UPWARD)
    assert KNOWN_UPWARD - upward == set(), (
        f"gone, take them off KNOWN_UPWARD: {KNOWN_UPWARD - upward}"
    )


def test_the_benchmarks_and_the_harness_import_nothing_from_the_tests() -> None:
    root = PACKAGE.parent
    paths = [*(root / "bench").glob("*.py"), *(root / "harness").rglob("*.py")]
    assert any(path.parts[-2] == "harness" for path in paths)
    found = {
        str(path.relative_to(root)): sorted(
            name for name in _top_level_imports(path) if name.split(".")[0] == "tests"
        )
        for path in paths
    }
    assert not {path: names for path, names in found.items() if names}


def _top_level_imports(path: Path) -> Iterator[str]:
    """Every module ``path`` imports, by its full name (relative imports left out: they
    stay within the file's own package)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module


def test_the_layer_reader_places_modules_by_their_longest_prefix() -> None:
    assert _layer("irlscrapy.scheduler.frontier.beast") == 2
    assert _layer("irlscrapy.scheduler.irl") == 5
    assert _layer("irlscrapy.storage.drum") == 1
    assert _layer("irlscrapy") == len(LAYERS) - 1


def test_the_import_reader_sees_modules_and_frameworks() -> None:
    """The reader itself sees imports: scheduler.irl imports the frontier and Scrapy, the
    frontier Twisted (a reader that saw nothing would pass the tests above)."""
    assert "irlscrapy.scheduler.stages" in GRAPH["irlscrapy.scheduler.irl"]
    assert "scrapy" in EXTERNAL["irlscrapy.scheduler.irl"]
    assert "twisted" in EXTERNAL["irlscrapy.scheduler.stages"]


def test_no_module_is_too_long() -> None:
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"
