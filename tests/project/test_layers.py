"""Imports point one way (docs/design.md, "Layers"): every module of hive_rpc imports
only from layers below its own, and the pure layers (core/, protocol/) import neither
trio nor anything that does I/O.

The areas are the package's folders, read from the disk: a new folder (or a module
left loose at the top) fails ``test_every_area_has_a_layer`` until it is given a
place here and in design.md.  Read from the source with ``ast``, so a cycle or an
upward import fails here before it can fail at run time; a module named in a string
(``"hive_rpc.cli.mcp_relay:cmd_mcp"``, ``importlib.import_module("hive_rpc.x")``)
counts as an import, since it is one, made later."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hive_rpc"

LAYERS: list[set[str]] = [
    {"pkg", "core", "protocol"},  # the package itself (__version__), pure rules and codecs
    {"host"},  # paths and peer credentials: what the host says
    {"rpc"},  # JSON-RPC connections
    {"store", "relay"},  # where prompts are kept; typing into terminals
    {"client"},  # finding, starting and talking to a hub
    {"runtime"},  # the registry and the activity stream: trio state
    {"agora"},  # dialogues between agents
    {"service"},  # the method table's handlers
    {"faces", "acp"},  # the ways in: sockets, LSP, EPC, MCP, HTTP; the ACP proxy
    {"hub"},  # the hub, assembled
    {"cli"},  # the commands
    {"__main__"},
]
"""Lowest first: a module's area may import its own area and the areas of the layers
before it."""
RANK = {area: rank for rank, areas in enumerate(LAYERS) for area in areas}

MODULE_IN_TEXT = re.compile(r"^hive_rpc(?:\.\w+)+(?=:\w+$|$)")
"""A string that names a module of the package (``hive_rpc.cli.mcp_relay`` or
``hive_rpc.cli.mcp_relay:cmd_mcp``)."""


def areas_on_disk() -> set[str]:
    """Each folder of the package with an ``__init__.py``, and each loose module."""
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    loose = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return folders | loose | {"pkg"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pkg"


def imports(path: Path) -> set[str]:
    """Absolute module names ``path`` imports (``from hive_rpc import x`` is ``hive_rpc.x``
    when x is a module of the package), and those its strings name."""
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
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = MODULE_IN_TEXT.match(node.value)
            if named:
                found.add(named.group(0))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_area_has_a_layer() -> None:
    missing = areas_on_disk() - set(RANK)
    assert not missing, f"add {sorted(missing)} to LAYERS (and to docs/design.md)"
    gone = set(RANK) - areas_on_disk()
    assert not gone, f"LAYERS names {sorted(gone)}, which are not in hive_rpc/ any more"


def test_strings_naming_modules_are_read() -> None:
    """The CLI loads ``hive-rpc mcp`` by a string: it is an import of the cli area."""
    assert "hive_rpc.cli.mcp_relay" in imports(PACKAGE / "cli" / "parser.py")


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
