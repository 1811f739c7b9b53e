"""`craits doctor`: each item's verdict (present, absent, broken) with the command that fixes
it, and an exit status that says whether the README's two commands can run here."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server import doctor
from server.transport import sandbox
from tests.machine import fake_program, fresh_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _forget_the_sandbox_verdict() -> Iterator[None]:
    """The doctor looks afresh under the PATH a test gives it; the tests after see this machine's."""
    yield
    sandbox.problem.cache_clear()


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH without bubblewrap, chromium, PostgreSQL's server and Caddy; its folder, for fakes."""
    folder = tmp_path / "bin"
    monkeypatch.setenv("PATH", fresh_path(folder))
    return folder


def test_a_sandbox_that_works_is_ok() -> None:
    if sandbox.problem() is not None:
        pytest.skip(f"this machine cannot sandbox: {sandbox.problem()}")
    finding = doctor.check_sandbox()
    assert (finding.status, finding.fix) == ("ok", "")
    assert "bwrap makes a sandbox here" in finding.detail


def test_without_bwrap_the_sandbox_is_missing_with_the_apt_line(bare: Path) -> None:
    finding = doctor.check_sandbox()
    assert finding.status == "missing"
    assert finding.detail == "bwrap not found (Debian package bubblewrap)"
    assert finding.fix.endswith("apt-get install -y bubblewrap")
    assert finding.needed_by == ("make test",)  # (the demo plays its own bots without it)


def test_a_bwrap_that_cannot_make_a_sandbox_is_broken_with_the_reason(bare: Path) -> None:
    fake_program(bare, "bwrap", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1")
    finding = doctor.check_sandbox()
    assert finding.status == "broken"
    assert "No permissions to create new namespace" in finding.detail
    assert finding.fix == doctor.userns_fix()


def test_the_fix_for_user_namespaces_is_the_switch_that_turned_them_off(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "max_user_namespaces").write_text("15000\n")
    assert "--privileged" in doctor.userns_fix(tmp_path)  # (nothing turned off: a container forbids them)
    (tmp_path / "kernel" / "apparmor_restrict_unprivileged_userns").write_text("1\n")
    assert doctor.userns_fix(tmp_path).endswith("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
    (tmp_path / "kernel" / "unprivileged_userns_clone").write_text("0\n")
    assert doctor.userns_fix(tmp_path).endswith("sysctl -w kernel.unprivileged_userns_clone=1")


def test_node_present_absent_and_broken(bare: Path) -> None:
    if (bare / "node").exists():
        assert doctor.check_node().status == "ok"
        (bare / "node").unlink()
    absent = doctor.check_node()
    assert (absent.status, absent.needed_by) == ("missing", ("make demo", "make test"))
    assert absent.fix.endswith("apt-get install -y nodejs npm")
    fake_program(bare, "node", "exit 1")
    assert doctor.check_node().status == "broken"


def test_chromium_present_absent_and_broken(bare: Path) -> None:
    absent = doctor.check_chromium()
    assert (absent.status, absent.needed_by) == ("missing", ("make test",))
    assert absent.fix.endswith("apt-get install -y chromium fonts-dejavu-core fontconfig")
    fake_program(bare, "chromium", "exit 1")
    assert doctor.check_chromium().status == "broken"
    fake_program(bare, "chromium", "echo Chromium 156.0")
    assert (doctor.check_chromium().status, doctor.check_chromium().detail) == ("ok", "Chromium 156.0")


def test_postgresql_server_present_and_absent(bare: Path, tmp_path: Path) -> None:
    nowhere = (tmp_path / "no-postgresql",)
    absent = doctor.check_postgres_server(nowhere)
    assert (absent.status, absent.fix.endswith("apt-get install -y postgresql")) == ("missing", True)
    for program in ("initdb", "pg_ctl"):
        fake_program(bare, program, "echo 'initdb (PostgreSQL) 15.0'")
    present = doctor.check_postgres_server(nowhere)
    assert present.status == "ok" and "15.0" in present.detail


def test_a_taken_default_port_is_a_warning_with_who_holds_it() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        taken = doctor.check_port(port, "a test")
    assert (taken.status, taken.blocking) == ("warn", False)
    assert f"sport = :{port}" in taken.fix
    assert doctor.check_port(port, "a test").status == "ok"


def test_the_grpc_layer_and_the_disk_are_reported(tmp_path: Path) -> None:
    assert "gRPC I/O" in doctor.check_grpc_io().detail
    disk = doctor.check_disk(tmp_path / "logs")
    assert disk.status in ("ok", "warn") and "GiB free" in disk.detail


def test_caddy_present_absent_and_broken(bare: Path) -> None:
    absent = doctor.check_caddy()
    assert (absent.status, absent.needed_by) == ("missing", ("make test",))
    assert absent.fix.endswith("apt-get install -y caddy")
    fake_program(bare, "caddy", "exit 1")
    assert doctor.check_caddy().status == "broken"
    fake_program(bare, "caddy", "echo 2.6.2")
    assert (doctor.check_caddy().status, doctor.check_caddy().detail) == ("ok", "2.6.2")


def doctor_cli(path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", "doctor"], cwd=ROOT, env={**os.environ, "PATH": path},
                          capture_output=True, text=True, timeout=120, check=False)


def test_on_a_fresh_machine_the_demo_can_run_and_the_tests_say_what_they_need(tmp_path: Path) -> None:
    done = doctor_cli(fresh_path(tmp_path / "bin"))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "make demo: can run here" in lines
    assert any(line.startswith("make test: cannot run here: needs sandbox") and "chromium" in line for line in lines)
    items = [line.split()[1] for line in lines if line.split() and line.split()[0] in ("ok", "MISSING", "BROKEN", "warn")]
    assert items[:2] == ["python", "sandbox"]
    for item in ("node.js", "postgresql", "chromium", "caddy", "port", "grpc", "disk"):
        assert item in items, items
    assert any("fix: " in line and "apt-get install -y bubblewrap" in line for line in lines)


def test_where_everything_is_there_the_doctor_says_both_commands_can_run() -> None:
    if any(f.blocking for f in doctor.diagnose()):
        pytest.skip("this machine lacks something the tests need")
    done = doctor_cli(os.environ["PATH"])
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines()[-2:] == ["make demo: can run here", "make test: can run here"]


def test_the_java_and_cpp_kits_toolchains_are_listed_and_a_missing_jar_says_which_packages(tmp_path: Path) -> None:
    items = [f.item for f in doctor.diagnose()]
    assert items.index("java kit") == items.index("node.js") + 1 and "c++ kit" in items
    found = doctor.check_java(jars=tmp_path)  # (no jar there)
    assert found.status == "missing" and "grpc-netty.jar" in found.detail and "perfmark-api.jar" in found.detail
    assert "libgrpc-java" in found.fix and "libnetty-java" in found.fix and found.needed_by == (doctor.TEST,)
