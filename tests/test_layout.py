"""The layout's rules, checked on the source (CONTRIBUTING.md, "Layout"):

- no import cycle inside any package (`api/`, `engine/`, `scrapers/`, `store/` and every
  subpackage of theirs), nor through several of them (imports inside functions count: they
  only hide a cycle), and the store's plumbing (`store/_db/`) imports none of its resources;
- the web pages and the MCP tools use a resource through its `actions` and `schemas`, never
  its REST handlers;
- no module over 400 lines and no function over 60 in the service's packages;
- every third-party module the code imports is a declared dependency (of an optional runtime
  extra such as `browser` too; tests and benchmarks: of the `dev` extra too).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("api", "engine", "scrapers", "store")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules_of(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def runtime_nodes(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of `tree` but those under `if TYPE_CHECKING:` (names for the checker only)."""
    for node in tree.body:
        if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            yield from ast.walk(node)


def absolute_module(node: ast.ImportFrom, package: str) -> str | None:
    """The module `node` imports from, a relative import resolved against `package`."""
    if node.level == 0:
        return node.module
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imported_modules(tree: ast.Module, known: dict[str, Path], package: str = "") -> Iterator[str]:
    """The modules of `known` that `tree` imports, anywhere but under `if TYPE_CHECKING`;
    relative imports are resolved against `package`, the importing module's package."""
    for node in runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom) and (module := absolute_module(node, package)):
            submodules = [f"{module}.{a.name}" for a in node.names]
            named = [m for m in submodules if m in known]
            yield from named
            if len(named) < len(submodules) and module in known:
                yield module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return cycles


def package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Each module of `packages` (their subpackages' included) and the modules of theirs it
    imports."""
    known = {name: path for package in packages for name, path in modules_of(package).items()}
    return {
        name: set(imported_modules(ast.parse(path.read_text()), known, package_of(name, path)))
        - {name}
        for name, path in known.items()
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside(package: str) -> None:
    """Every subpackage too: a cycle inside `engine/analysis/` is a cycle inside `engine/`."""
    assert import_cycles(import_graph((package,))) == []


def test_no_import_cycle_between_packages() -> None:
    assert import_cycles(import_graph(PACKAGES)) == []


def test_the_stores_plumbing_imports_no_resource() -> None:
    """`store/_db/` is what every resource builds on; a resource it imported would be a cycle
    of packages even where no two modules import each other."""
    known = modules_of("store")
    offenders = [
        f"{name} imports {target}"
        for name, path in known.items()
        if name.startswith("store._db")
        for target in imported_modules(ast.parse(path.read_text()), known, package_of(name, path))
        if not target.startswith("store._db")
    ]
    assert offenders == []


def test_relative_imports_are_resolved() -> None:
    tree = ast.parse("from .records import X\nfrom ..db import unit\nfrom . import rows")
    known = dict.fromkeys(["s.m.records", "s.db.unit", "s.m.rows"], ROOT)
    assert sorted(imported_modules(tree, known, "s.m")) == ["s.db.unit", "s.m.records", "s.m.rows"]


def test_an_import_inside_a_function_counts() -> None:
    tree = ast.parse("def load():\n    from .reader import read\n    return read()")
    known = dict.fromkeys(["s.reader"], ROOT)
    assert list(imported_modules(tree, known, "s")) == ["s.reader"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("folder", ["api/web", "api/mcp"])
def test_pages_and_tools_use_actions_not_rest_handlers(folder: str) -> None:
    known = modules_of("api")
    offenders = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for target in imported_modules(ast.parse(path.read_text()), known)
        if target.endswith(".rest")
    ]
    assert offenders == []


def source_files() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:  # history, written once per schema change
                yield path


def test_no_module_over_the_line_limit() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in source_files()
        if (lines := path.read_text().count("\n")) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_over_the_line_limit() -> None:
    long = {}
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert long == {}


def declared(extra: str | None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    if extra:
        requirements += project["optional-dependencies"][extra]
    return {Requirement(line).name.lower().replace("_", "-") for line in requirements}


def third_party_imports(paths: list[Path]) -> set[str]:
    local = {*PACKAGES, "tests", "bench"}
    names = set()
    for path in paths:
        for node in runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in local and n not in sys.stdlib_module_names}


def undeclared(paths: list[Path], allowed: set[str]) -> list[str]:
    distributions = packages_distributions()
    missing = []
    for module in sorted(third_party_imports(paths)):
        owners = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not owners & allowed:
            missing.append(f"{module} (from {', '.join(sorted(owners))})")
    return missing


def runtime_extras() -> list[str]:
    """The optional extras of the service itself (every one but `dev`)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [extra for extra in project.get("optional-dependencies", {}) if extra != "dev"]


def test_the_service_imports_only_declared_dependencies() -> None:
    # An optional extra counts (`browser`: imported lazily, its absence a clear error).
    allowed = declared(None).union(*(declared(extra) for extra in runtime_extras()))
    assert undeclared(list(source_files()), allowed) == []


def test_tests_and_benchmarks_import_only_declared_dependencies() -> None:
    paths = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").rglob("*.py"))
    assert undeclared(paths, declared("dev")) == []
