"""Imports point one way (docs/design.md, "Layers"): every module of hive_rpc imports
only from layers below its own, and the pure layers (core/, protocol/) import neither
trio nor anything that does I/O.  Read from the source with ``ast``, so a cycle or an
upward import fails here before it can fail at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hive_rpc"

LAYERS: list[set[str]] = [
    # the package itself (__version__), pure rules and codecs, paths, small helpers
    {
        "pkg",
        "core",
        "protocol",
        "paths",
        "peercred",
        "aio_bridge",
        "reply_waiter",
        "start_record",
        "dispatch",
    },
    {"hub_start"},
    {"rpc_connection"},
    {"store", "relay", "activity", "client", "sync_client"},
    {"registry", "hub_connection", "mcp_relay"},
    {"agora"},
    {"service"},
    {"backends"},
    {"faces"},
    {"hub"},
    {"cli"},
    {"__main__"},
]
"""Lowest first: a module's area (``hive_rpc.AREA...``) may import its own area and
the areas of the layers before it."""
RANK = {area: rank for rank, areas in enumerate(LAYERS) for area in areas}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pkg"


def imports(path: Path) -> set[str]:
    """Absolute module names ``path`` imports (``from hive_rpc import x`` is ``hive_rpc.x``
    when x is a module of the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "hive_rpc":
                for alias in node.names:
                    sub = PACKAGE / alias.name
                    if sub.with_suffix(".py").exists() or (sub / "__init__.py").exists():
                        found.add(f"hive_rpc.{alias.name}")
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_area_has_a_layer() -> None:
    missing = {area(module_name(p)) for p in MODULES} - set(RANK)
    assert not missing, f"add {sorted(missing)} to LAYERS (and to docs/design.md)"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_down(path: Path) -> None:
    mine = area(module_name(path))
    upward = sorted(
        dep
        for dep in imports(path)
        if dep.split(".")[0] == "hive_rpc" and RANK.get(area(dep), 0) > RANK[mine]
    )
    assert not upward, f"{module_name(path)} ({mine}) imports a higher layer: {upward}"


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if area(module_name(p)) in ("core", "protocol")],
    ids=lambda p: module_name(p),
)
def test_the_pure_layers_import_no_io(path: Path) -> None:
    io = {"trio", "socket", "sqlite3", "subprocess", "asyncio", "nats"}
    used = sorted(dep for dep in imports(path) if dep.split(".")[0] in io)
    assert not used, f"{module_name(path)} is pure (docs/design.md) but imports {used}"
