"""`craits play` sums up a crashed bot by what it died of, in each kit's language: the output of
real Python, Node, Java and C++ programs that die of an uncaught exception."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli.play import crash_line


def died(argv: list[str]) -> list[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    return (done.stdout + done.stderr).splitlines()


def test_python_is_summed_up_by_its_exception(tmp_path: Path) -> None:
    script = tmp_path / "bot.py"
    script.write_text("def choose():\n    return 1 / 0\n\nchoose()\n")
    assert crash_line(died([sys.executable, str(script)])) == "ZeroDivisionError: division by zero"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_node_is_summed_up_by_its_error_not_its_version(tmp_path: Path) -> None:
    script = tmp_path / "bot.js"
    script.write_text("function choose() { return null.id; }\nchoose();\n")
    assert crash_line(died(["node", str(script)])).startswith("TypeError: Cannot read properties of null")


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK here (scripts/system-deps.sh kits)")
def test_java_is_summed_up_by_its_exception_not_its_last_stack_frame(tmp_path: Path) -> None:
    source = tmp_path / "Main.java"
    source.write_text("public class Main {\n  static int choose(int[] a) { return a[3]; }\n"
                      "  public static void main(String[] args) {\n"
                      "    try { choose(new int[2]); } catch (RuntimeException e) { throw new IllegalStateException(\"no move\", e); }\n"
                      "  }\n}\n")
    lines = died(["java", str(source)])
    assert lines[-1].strip().startswith("...") or lines[-1].strip().startswith("at ")  # what it used to show
    assert crash_line(lines) == "java.lang.ArrayIndexOutOfBoundsException: Index 3 out of bounds for length 2"
    uncaused = lines[:next(i for i, line in enumerate(lines) if line.startswith("Caused by:"))]
    assert crash_line(uncaused) == "java.lang.IllegalStateException: no move"  # (without a cause: the exception)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler here")
def test_cpp_is_summed_up_by_the_type_and_what_of_the_exception_that_terminated_it(tmp_path: Path) -> None:
    source = tmp_path / "bot.cpp"
    source.write_text('#include <vector>\nint main() { std::vector<int> v(2); return v.at(3); }\n')
    subprocess.run(["g++", "-O0", "-o", str(tmp_path / "bot"), str(source)], check=True, timeout=120)
    assert crash_line(died([str(tmp_path / "bot")])).startswith("std::out_of_range: vector::_M_range_check")


def test_a_last_line_that_is_no_runtimes_trailer_is_kept() -> None:
    assert crash_line(["starting", "cannot open my_model.bin"]) == "cannot open my_model.bin"
    assert crash_line([]) == ""
