"""`make setup` and `make test` install what they need from Debian (scripts/system-deps.sh):
run here with a fake `apt-get` that records its arguments and a fake `id`, never the real apt."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.machine import fake_program, fresh_path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "system-deps.sh"


def run_script(tmp_path: Path, what: str, *, uid: int, have: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """Its standard error and the apt-get calls it made, on a machine lacking bubblewrap,
    chromium, PostgreSQL and Caddy (less those in ``have``), as user ``uid``."""
    bin_dir = tmp_path / "bin"
    path = fresh_path(bin_dir, lacking=("bwrap", "chromium", "initdb", "pg_ctl", "caddy", "apt-get", "id"))
    calls = tmp_path / "apt-calls"
    fake_program(bin_dir, "apt-get", f'echo "$*" >> {calls}')
    fake_program(bin_dir, "id", f'[ "$1" = "-u" ] && echo {uid}')
    fake_program(bin_dir, "systemctl", f'echo "systemctl $*" >> {calls}')  # (as if each unit were enabled)
    for program in have:
        fake_program(bin_dir, program, "echo DejaVuSans.ttf")  # (fc-list: the font the tests need)
    done = subprocess.run(["/bin/bash", str(SCRIPT), what], env={"PATH": path}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stderr, calls.read_text().splitlines() if calls.exists() else []


def test_setup_installs_bubblewrap_as_root(tmp_path: Path) -> None:
    said, calls = run_script(tmp_path, "setup", uid=0)
    assert calls == ["update -qq", "install -y -qq --no-install-recommends bubblewrap"]
    assert "installing Debian's bubblewrap" in said


def test_setup_not_as_root_prints_the_one_line_that_installs_it(tmp_path: Path) -> None:
    said, calls = run_script(tmp_path, "setup", uid=1000)
    assert calls == []
    assert "sudo apt-get install -y --no-install-recommends bubblewrap" in said


def test_setup_with_bubblewrap_there_does_nothing(tmp_path: Path) -> None:
    said, calls = run_script(tmp_path, "setup", uid=0, have=("bwrap",))
    assert (said, calls) == ("", [])


def test_the_tests_get_bubblewrap_chromium_postgresql_and_caddy(tmp_path: Path) -> None:
    _, calls = run_script(tmp_path, "test", uid=0)
    postgresql = [] if list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) else ["postgresql"]  # (found there too)
    assert calls == ["update -qq", " ".join(["install -y -qq --no-install-recommends bubblewrap chromium",
                                             "fonts-dejavu-core fontconfig", *postgresql, "caddy"]),
                     "systemctl is-enabled caddy", "systemctl disable --now caddy"]  # (Debian's starts on port 80)


def test_the_tests_packages_the_machine_has_are_not_installed_again(tmp_path: Path) -> None:
    _, calls = run_script(tmp_path, "test", uid=0, have=("bwrap", "chromium", "fc-list", "initdb", "caddy"))
    assert calls == []


def test_make_setup_and_make_test_run_it() -> None:
    """`make demo` runs `make setup`, which installs the sandbox; `make test` also the tests' packages."""
    for target, step in (("setup", "bash scripts/system-deps.sh setup"), ("test-deps", "bash scripts/system-deps.sh test"),
                         ("kits", "bash clients/java/build-debian.sh build/kits/java"),
                         ("kits", "bash clients/cpp/build-debian.sh build/kits/cpp")):
        done = subprocess.run(["make", "-n", target], cwd=SCRIPT.parents[1], capture_output=True, text=True,
                              timeout=60, check=False)
        assert step in done.stdout.splitlines(), done.stdout


def test_the_kits_get_a_jdk_grpc_java_and_grpc_cpp_from_debian(tmp_path: Path) -> None:
    """`make kits` (and `make test`): every package of the Java and C++ kits' Debian build that
    dpkg does not list as installed, in one apt-get line."""
    bin_dir = tmp_path / "bin"
    path = fresh_path(bin_dir, lacking=("apt-get", "id", "dpkg-query"))
    calls = tmp_path / "apt-calls"
    fake_program(bin_dir, "apt-get", f'echo "$*" >> {calls}')
    fake_program(bin_dir, "id", '[ "$1" = "-u" ] && echo 0')
    fake_program(bin_dir, "dpkg-query", '[ "$3" = libprotobuf-java ] && echo "install ok installed"; exit 0')
    done = subprocess.run(["/bin/bash", str(SCRIPT), "kits"], env={"PATH": path}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    install = calls.read_text().splitlines()[1].split()
    assert install[:4] == ["install", "-y", "-qq", "--no-install-recommends"]
    assert {"openjdk-17-jdk-headless", "libgrpc-java", "libnetty-java", "libperfmark-java",
            "protobuf-compiler-grpc-java-plugin", "libgeronimo-annotation-1.3-spec-java", "libgrpc++-dev",
            "protobuf-compiler-grpc", "cmake"} <= set(install[4:])
    assert "libprotobuf-java" not in install  # (installed already)
    assert "bubblewrap" not in install  # (the kits alone: `kits` is not `test`)
