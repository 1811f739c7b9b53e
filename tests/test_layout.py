"""The layout's import contracts: each room imports only the rooms below it.

Every ``import`` statement of every module is read from its source (lazy ones inside
functions too, ``if TYPE_CHECKING:`` blocks excepted: they never run), so a violating
import fails here whether or not a test happens to execute it.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("server.engine", "server.errors", "server.logging"),
    ("server.spec",),
    ("server.protocol", "server.storage"),
    ("server.game",),
    ("server.transport", "server.viewer"),
    ("server.checker", "server.doctor"),
    ("tournaments",),
    ("participants",),
    ("server.web",),
    ("server.cli",),
)
"""From the bottom up: a module may import its own room and the rooms of the layers below it."""

THIRD_PARTY_BANNED = {
    "server.engine": ("grpc", "structlog", "asyncio", "google", "craits"),
    "server.spec": ("grpc", "asyncio", "craits"),
    "server.game": ("grpc",),
    "server.storage": ("grpc", "craits"),
    "server.viewer": ("grpc", "craits"),
}
"""Rooms that must not reach for these packages: the engine is pure, and the game loop knows no gRPC."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_modules() -> list[Path]:
    return sorted(
        p for top in ("server", "tournaments", "participants") for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts
    )


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, *, typing_too: bool = False) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import that can run (and with ``typing_too`` those of
    ``if TYPE_CHECKING:`` blocks as well), resolved to absolute names."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[tuple[int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not typing_too:
                yield from (item for other in child.orelse for item in walk_one(other))
                continue
            yield from walk_one(child)

    def walk_one(node: ast.AST) -> Iterator[tuple[int, str]]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}" if base else alias.name
        else:
            yield from walk(node)

    yield from walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))


def room_of(name: str) -> str | None:
    """The room (longest matching prefix in LAYERS) a module belongs to, if it is the project's."""
    best = None
    for layer in LAYERS:
        for room in layer:
            if (name == room or name.startswith(room + ".")) and (best is None or len(room) > len(best)):
                best = room
    return best


def layer_of(room: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if room in layer)


def violations(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        room = room_of(_module_name(path))
        if room is None:
            continue
        for line, name in imports_of(path):
            target = room_of(name)
            where = f"{path.relative_to(ROOT)}:{line}"
            if target is not None and target != room and layer_of(target) >= layer_of(room):
                found.append(f"{where}: {room} imports {name} ({target} is not below it)")
            banned = THIRD_PARTY_BANNED.get(room, ())
            if name.split(".")[0] in banned:
                found.append(f"{where}: {room} imports {name}")
    return found


def test_every_room_imports_only_the_rooms_below_it() -> None:
    assert violations(_project_modules()) == []


def test_a_violating_import_is_caught(tmp_path: Path) -> None:
    """The check itself: an engine module that imports the referee, a game module that imports
    grpc, and a lazy upward import inside a function are each reported."""
    fake_root = ROOT / "server" / "engine" / "_layout_probe.py"
    game_probe = ROOT / "server" / "game" / "_layout_probe.py"
    storage_probe = ROOT / "server" / "storage" / "_layout_probe.py"
    try:
        fake_root.write_text("from server.game import referee\n")
        game_probe.write_text("import grpc\n")
        storage_probe.write_text("def f():\n    from tournaments import runner\n")
        found = violations([fake_root, game_probe, storage_probe])
    finally:
        for probe in (fake_root, game_probe, storage_probe):
            probe.unlink(missing_ok=True)
    assert len(found) == 3
    assert "server.engine imports server.game.referee" in found[0]
    assert "server.game imports grpc" in found[1]
    assert "server.storage imports tournaments.runner" in found[2]


def circles(paths: list[Path]) -> list[str]:
    """Pairs of modules that import each other, anywhere in their source (in a function, or
    only for type checking: either way neither file sits above the other)."""
    modules = {_module_name(p): p for p in paths}

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    lines: dict[tuple[str, str], int] = {}
    for name, path in modules.items():
        for line, imported in imports_of(path, typing_too=True):
            target = module_of(imported)
            if target is not None and target != name:
                lines.setdefault((name, target), line)
    return sorted(
        f"{a} <-> {b} ({modules[a].relative_to(ROOT)}:{line}, {modules[b].relative_to(ROOT)}:{lines[(b, a)]})"
        for (a, b), line in lines.items() if a < b and (b, a) in lines
    )


def test_no_two_modules_import_each_other() -> None:
    assert circles(_project_modules()) == []


def test_a_circle_between_two_modules_is_caught() -> None:
    """Two modules of one room that import each other are a circle, whether one of the imports
    is lazy (in a function) or only for type checking; a module importing another that does not
    import it back is not."""
    folder = ROOT / "server" / "checker"
    probes = {name: folder / f"_circle_{name}.py" for name in "abcd"}
    try:
        probes["a"].write_text("from server.checker import _circle_b\n")
        probes["b"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from server.checker._circle_a import x\n")
        probes["c"].write_text("import server.checker.report\n\n\ndef f():\n    from server.checker import _circle_d\n")
        probes["d"].write_text("import server.checker._circle_c\n")
        found = circles([*probes.values(), folder / "report.py"])
    finally:
        for probe in probes.values():
            probe.unlink(missing_ok=True)
    assert found == [
        "server.checker._circle_a <-> server.checker._circle_b (server/checker/_circle_a.py:1, server/checker/_circle_b.py:3)",
        "server.checker._circle_c <-> server.checker._circle_d (server/checker/_circle_c.py:5, server/checker/_circle_d.py:1)",
    ]


def test_every_project_module_belongs_to_a_room() -> None:
    orphans = [str(p.relative_to(ROOT)) for p in _project_modules() if room_of(_module_name(p)) is None]
    assert orphans == [] or orphans == ["server/__init__.py"]


def test_the_bot_kit_imports_nothing_of_the_referee() -> None:
    kit = ROOT / "clients" / "python" / "craits_bot"
    found = []
    for path in sorted(kit.rglob("*.py")):
        for line, name in imports_of_any(path):
            if name.split(".")[0] in ("server", "tournaments"):
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert found == []


def imports_of_any(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.lineno, node.module


@pytest.mark.parametrize(
    "path", [p for p in _project_modules() if p.name != "__main__.py"], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_module_imports_on_its_own(path: Path) -> None:
    """Importing any module first (no other project module loaded) works: no hidden cycle."""
    name = _module_name(path)
    saved = {k: v for k, v in sys.modules.items() if k == "server" or k.startswith(("server.", "tournaments", "participants"))}
    for key in saved:
        del sys.modules[key]
    try:
        importlib.import_module(name)
    finally:
        for key in [k for k in sys.modules if k == "server" or k.startswith(("server.", "tournaments", "participants"))]:
            del sys.modules[key]
        sys.modules.update(saved)
