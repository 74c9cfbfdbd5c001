"""The layout in docs/architecture.md holds: each room imports only what its line there allows.

The rules are read from that page's table "The rooms", so the page and this test cannot
disagree: a room's line names rooms (`store`), one name a room may take from another
(`store.postings.Postings`: that name only), "base" (the rooms the sentence after the table
names), "—" for nothing, or "everything"/"anything" (every room on a line above), less those
after "but".
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "memory_bank"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# The web frameworks the rooms below http/ may not import.
FRAMEWORKS = {"connexion", "starlette", "uvicorn", "httpx", "mcp", "mcp_types"}


@dataclass
class Rules:
    """What each room may import, as the table says."""

    order: list[str] = field(default_factory=list)  # the table's lines, ground floor first
    base: set[str] = field(default_factory=set)
    rooms: dict[str, set[str]] = field(default_factory=dict)  # rooms it may import anything of
    # Rooms it may take single names from, and those (module, name) pairs only.
    names: dict[str, dict[str, set[tuple[str, str]]]] = field(default_factory=dict)


def _room(cell: str) -> str:
    """The room a table line is about: `store/` is store, `app.py` is app."""
    found = re.fullmatch(r"`([\w.]+?)(?:/|\.py)`", cell.strip())
    if not found:
        raise ValueError(f"cannot read the room {cell!r} in {ARCHITECTURE.name}")
    return found.group(1)


def parse_rules(text: str) -> Rules:
    """The rules of the table under "## The rooms" (and the "base" sentence after it)."""
    section = text.split("\n## The rooms\n", 1)[1].split("\n## ", 1)[0]
    base_sentence = re.search(r'"base" is (.+?)\.', section)
    if base_sentence is None:
        raise ValueError('no sentence saying what "base" is')
    rules = Rules(base=set(re.findall(r"`(\w+)`", base_sentence.group(1))))
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        room, may = _room(cells[0]), cells[-1]
        rooms, names = rules.rooms.setdefault(room, set()), rules.names.setdefault(room, {})
        head, _, but = may.partition(" but ")
        if head in {"everything", "anything"}:
            rooms |= set(rules.order) - set(re.findall(r"`(\w+)`", but))
        else:
            for item in re.findall(r"`([\w.]+)`", may):
                *path, name = item.split(".")
                if not path:
                    rooms.add(name)
                else:  # room.module.Name: that one name from that room
                    names.setdefault(path[0], set()).add((".".join(["memory_bank", *path]), name))
            if re.search(r"\bbase\b", may):
                rooms |= rules.base
            rest = re.sub(r"`[\w.]+`|\([^)]*\)|\bbase\b|\band\b|[,—]", "", may)
            if rest.strip():
                raise ValueError(f"cannot read what {room} may import: {may!r}")
        rules.order.append(room)
    return rules


RULES = parse_rules(ARCHITECTURE.read_text(encoding="utf-8"))
# Rooms that must work without any web framework: storage, search, the domain and the base.
FRAMEWORK_FREE = {"store", "search", "models", "domain", "auth", *RULES.base}


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


def test_the_table_lists_every_room_of_the_package():
    rooms = {room for room, _ in MODULES}
    assert set(RULES.order) == rooms
    assert len(RULES.order) == len(rooms)  # one line each


def test_no_rule_runs_back_up_a_floor():
    for i, room in enumerate(RULES.order):
        below = set(RULES.order[:i])
        assert RULES.rooms[room] | set(RULES.names[room]) <= below, room


@pytest.mark.parametrize(
    ("room", "path"), MODULES, ids=[str(p.relative_to(PACKAGE)) for _, p in MODULES]
)
def test_imports_follow_the_layout(room, path):
    assert _violations(room, path) == []


def _violations(room: str, path: Path) -> list[str]:
    """What a module imports against its room's rule."""
    allowed = RULES.rooms.get(room, set()) | {room, ""}
    narrow = RULES.names.get(room, {})
    found = []
    for module, name in _imports(path):
        target = _room_of(module, name)
        if target is not None and target not in allowed:
            if target not in narrow:
                found.append(f"{room} may not import {module} ({name})")
            elif (module, name) not in narrow[target]:
                found.append(f"{room} takes {module}.{name} from {target}, beyond its line")
        if room in FRAMEWORK_FREE and module.split(".")[0] in FRAMEWORKS:
            found.append(f"{room} imports the framework {module}")
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
        ("store", "from memory_bank.spec import load_spec\n", "may not import"),
        ("domain", "import starlette.responses\n", "framework"),
        ("search", "from memory_bank.store.postings import add\n", "beyond its line"),
        ("search", "import memory_bank.store.postings\n", "beyond its line"),
        ("web", "from memory_bank import cli\n", "may not import"),
        ("app", "from memory_bank import asgi\n", "may not import"),
    ],
)
def test_a_wrong_import_is_caught(tmp_path, room, source, wrong):
    bad = tmp_path / "bad.py"
    bad.write_text(source, encoding="utf-8")
    assert any(wrong in v for v in _violations(room, bad))


SAMPLE = """
## The rooms

| Room | Job | May import |
|---|---|---|
| `a.py` | A | — |
| `b/` | B | `a` |
| `c/` | C | `b.mod.Name` (a type), base |
| `d.py` | D | everything but `b` |
| `e/` | E | anything |

"base" is `a`.

## Next
"""


def test_the_table_reads_as_written():
    rules = parse_rules(SAMPLE)
    assert rules.order == ["a", "b", "c", "d", "e"]
    assert rules.base == {"a"}
    assert rules.rooms == {"a": set(), "b": {"a"}, "c": {"a"}, "d": {"a", "c"}, "e": {*"abcd"}}
    assert rules.names["c"] == {"b": {("memory_bank.b.mod", "Name")}}


def test_a_line_the_test_cannot_read_fails_loudly():
    with pytest.raises(ValueError, match="cannot read what b may import"):
        parse_rules(SAMPLE.replace("| `a` |", "| `a`, or whatever it needs |"))
