"""The layout in docs/architecture.md holds: each room imports only what its line there allows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memory_bank"
BASE = {"errors", "ids", "settings", "spec"}
# Room -> the rooms of memory_bank it may import (docs/architecture.md, one line per room).
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "ids": set(),
    "settings": set(),
    "spec": set(),
    "store": {"errors", "ids", "settings"},
    "search": {"store", *BASE},
    "auth": {"store", *BASE},
    "domain": {"auth", "search", "store", *BASE},
    "state": {"store", *BASE},
    "http": {"domain", "auth", "store", "state", *BASE},
    "web": {"store", *BASE},
    "api": {"http", "domain", "auth", "store", "web", "state", *BASE},
    "mcp": {"http", "search", "store", "state", "auth", *BASE},
    "app": {"api", "http", "domain", "auth", "search", "store", "web", "mcp", "state", *BASE},
    "asgi": {"app", *BASE},
    "cli": {
        *("app", "api", "http", "domain", "auth", "search", "store", "web", "mcp", "state"),
        *BASE,
    },
    "__main__": {"cli"},
    "__init__": set(),
}
# Rooms that must work without any web framework: storage, search, the domain and the base.
FRAMEWORK_FREE = {"store", "search", "domain", "auth", *BASE}
FRAMEWORKS = {"connexion", "starlette", "uvicorn", "httpx", "mcp", "mcp_types"}
# Search reads the index tables itself but writes nothing: from storage it takes a type only.
SEARCH_FROM_STORE = {("memory_bank.store.postings", "Postings")}


def _modules() -> list[tuple[str, Path]]:
    """(room, file) for every module of the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] == "store" and "migrations" in parts:
            continue  # Alembic's scripts import only SQLAlchemy and Alembic
        found.append((parts[0], path))
    return found


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, imported name or None) for every import in a file, nested ones included."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def _room_of(module: str, name: str | None) -> str | None:
    """The room of memory_bank an import reaches (None outside the package, '' for its root)."""
    parts = module.split(".")
    if parts[0] != "memory_bank":
        return None
    if len(parts) > 1:
        return parts[1]
    if name and ((PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir()):
        return name
    return ""


MODULES = _modules()


def test_every_room_has_a_rule():
    assert {room for room, _ in MODULES} <= set(MAY_IMPORT)


@pytest.mark.parametrize(
    ("room", "path"), MODULES, ids=[str(p.relative_to(PACKAGE)) for _, p in MODULES]
)
def test_imports_follow_the_layout(room, path):
    assert _violations(room, path) == []


def _violations(room: str, path: Path) -> list[str]:
    """What a module imports against its room's rule."""
    allowed = MAY_IMPORT[room] | {room, ""}
    found = []
    for module, name in _imports(path):
        target = _room_of(module, name)
        if target is not None and target not in allowed:
            found.append(f"{room} may not import {module} ({name})")
        if room in FRAMEWORK_FREE and module.split(".")[0] in FRAMEWORKS:
            found.append(f"{room} imports the framework {module}")
        if room == "search" and target == "store" and (module, name) not in SEARCH_FROM_STORE:
            found.append(f"search takes {module}.{name} from storage")
    return found


def test_nothing_imports_the_cli():
    for room, path in MODULES:
        if room in {"cli", "__main__"}:
            continue
        assert all(_room_of(m, n) != "cli" for m, n in _imports(path)), path


@pytest.mark.parametrize(
    ("room", "source", "wrong"),
    [
        ("store", "def f():\n    from memory_bank.http import security\n", "may not import"),
        ("domain", "import starlette.responses\n", "framework"),
        ("search", "from memory_bank.store.postings import add\n", "from storage"),
        ("web", "from memory_bank import cli\n", "may not import"),
    ],
)
def test_a_wrong_import_is_caught(tmp_path, room, source, wrong):
    bad = tmp_path / "bad.py"
    bad.write_text(source, encoding="utf-8")
    assert any(wrong in v for v in _violations(room, bad))
