"""A package's private modules (`_name`) are its own: other packages import what its
`__init__` offers. A module may import the private modules of its own package and of the
packages that contain it (`engine/monitors/_actor.py` may use `engine/_supervisor.py`), never
those of a sibling or a child package (`engine/_engine.py` may not reach into
`engine/monitors/_actor.py`): that is what keeps a package free to rearrange its insides.
Imports under `if TYPE_CHECKING:` count too: a name for the checker is still a dependency."""

from __future__ import annotations

import ast

from tests.test_layout import PACKAGES, absolute_module, modules_of, package_of


def owner_of_private(target: str) -> str | None:
    """The package whose private module `target` is (None if no part of it is private)."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:index])
    return None


def may_import(importer_package: str, target: str) -> bool:
    owner = owner_of_private(target)
    return owner is None or importer_package == owner or importer_package.startswith(owner + ".")


def imported_targets(tree: ast.Module, package: str) -> set[str]:
    """Every module and imported name `tree` reaches for, relative imports resolved."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (module := absolute_module(node, package)):
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    known: dict[str, object] = {}
    for package in PACKAGES:
        known.update(modules_of(package))
    trespasses = []
    for package_name in PACKAGES:
        for name, path in modules_of(package_name).items():
            package = package_of(name, path)
            for target in imported_targets(ast.parse(path.read_text()), package):
                if target in known and not may_import(package, target):
                    trespasses.append(f"{name} -> {target}")
    assert trespasses == []


def test_the_rule_tells_own_from_other() -> None:
    assert may_import("engine.monitors", "engine.monitors._actor")
    assert may_import("engine.monitors", "engine._supervisor")  # an enclosing package's
    assert not may_import("engine", "engine.monitors._actor")  # a child package's
    assert not may_import("engine.runs", "engine.monitors._poll")  # a sibling's
    assert not may_import("api.http", "api.mcp._protocol")
    assert may_import("api.http", "api.mcp.wire")
