"""The engine is pure (STYLE 1): no I/O, network, clock, threads, event loop or global random."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import server.engine

FORBIDDEN = ("grpc", "structlog", "asyncio", "time", "random", "socket", "threading", "datetime")
ENGINE_DIR = Path(server.engine.__file__).parent
REPO_ROOT = ENGINE_DIR.parent.parent

_PROBE = """
import json, sys
forbidden = set(json.loads(sys.argv[1]))
before = set(sys.modules)
import server.engine
new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in forbidden)
engine_modules = [m for name, m in sys.modules.items() if name.startswith("server.engine")]
held = sorted({
    name for m in engine_modules for name, value in vars(m).items()
    if type(value) is type(sys) and value.__name__.split(".")[0] in forbidden
})
print(json.dumps({"new": new, "held": held}))
"""


def test_importing_the_engine_in_a_fresh_interpreter_loads_no_forbidden_module() -> None:
    """Compares sys.modules before and after the import; -S keeps site hooks from loading extras.

    The interpreter itself may preload some (``time``), so the probe also checks that
    no engine module holds a reference to a forbidden module.
    """
    out = subprocess.run(
        [sys.executable, "-S", "-c", _PROBE, json.dumps(FORBIDDEN)],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=60,
    )
    report = json.loads(out.stdout)
    assert report == {"new": [], "held": []}


def engine_imports() -> dict[str, set[str]]:
    """Top-level modules each engine source file imports (relative imports excluded)."""
    found: dict[str, set[str]] = {}
    for path in sorted(ENGINE_DIR.glob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
                names.add("__import__")
        found[path.name] = names
    return found


def test_engine_source_imports_only_the_standard_library_and_nothing_forbidden() -> None:
    imports = engine_imports()
    assert "state.py" in imports, "the scan found the engine sources"
    for name, modules in imports.items():
        assert not modules & set(FORBIDDEN), f"{name} imports {sorted(modules & set(FORBIDDEN))}"
        third_party = {m for m in modules if m not in sys.stdlib_module_names and m != "__future__"}
        assert not third_party, f"{name} imports {sorted(third_party)}"
        assert "__import__" not in modules, f"{name} imports dynamically"
