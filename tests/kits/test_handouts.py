"""`craits handout --kit java|cpp`: a folder a student builds as its README says (./build.sh,
with Debian's packages only) and plays from (./bot.sh, the token in token.txt), against a
referee on this machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.kits.conftest import Kits

CRAITS = str(Path(sys.executable).with_name("craits"))
TOKEN = "alice-kit-token-4242"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(("kit", "files", "source"), [
    ("java", ["README.md", "bot.sh", "build.sh", "pom.xml", "proto", "src"], "src/MyBot.java"),
    ("cpp", ["CMakeLists.txt", "README.md", "bot.sh", "build.sh", "examples", "include", "my_bot.cpp", "proto", "src"],
     "my_bot.cpp"),
])
def test_a_kit_handout_builds_in_a_fresh_folder_and_its_bot_plays(kits: Kits, tmp_path: Path, kit: str,
                                                                   files: list[str], source: str) -> None:
    # (kits: the toolchain is there, or the test skips; the handout builds everything itself)
    port = free_port()
    file = tmp_path / "class.toml"
    file.write_text(f'name = "class"\ntable_size = 2\naddress = "127.0.0.1:{port}"\n'
                    f'[[bots]]\nname = "alice"\ntoken = "{TOKEN}"\n[[bots]]\nname = "house"\nbuiltin = "random"\n')
    written = subprocess.run([CRAITS, "handout", str(file), "--kit", kit, "-o", str(tmp_path / "handouts")],
                             capture_output=True, text=True, timeout=120, check=False)
    assert written.returncode == 0, written.stderr
    folder = tmp_path / "handouts" / "alice"
    assert sorted(p.name for p in folder.iterdir()) == files
    assert written.stdout.count(TOKEN) == 1
    assert not any(TOKEN.encode() in p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert f"127.0.0.1:{port}" in (folder / "README.md").read_text() and "alice" in (folder / source).read_text()
    if kit == "java":  # (Maven cannot run here, no Maven Central: its file is at least well formed and points at proto/)
        pom = ElementTree.parse(folder / "pom.xml").getroot()
        ns = {"m": "http://maven.apache.org/POM/4.0.0"}
        assert pom.findtext("m:build/m:sourceDirectory", namespaces=ns) == "src"
        assert "${project.basedir}/proto" in (folder / "pom.xml").read_text()

    built = subprocess.run(["./build.sh"], cwd=folder, capture_output=True, text=True, timeout=900, check=False)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (folder / "token.txt").write_text(TOKEN + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAITS_")}
    referee = subprocess.Popen([CRAITS, "play", "--address", f"127.0.0.1:{port}", f"remote:alice:{TOKEN}", "random",
                                "--log-dir", str(tmp_path / "logs")], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    bot = subprocess.Popen(["./bot.sh"], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    try:
        table, _ = referee.communicate(timeout=300)
        said, _ = bot.communicate(timeout=60)
    finally:
        for proc in (referee, bot):
            proc.kill()
    assert referee.returncode == 0, table
    alice = next(line for line in table.splitlines() if line.split()[:2] in (["0", "alice"], ["1", "alice"]))
    assert " ok " in alice, table
    assert bot.returncode == 0 and f"connected to 127.0.0.1:{port} as 'alice'" in said, said


def test_a_java_kit_project_is_admitted_as_a_submission_its_build_run_in_the_build_sandbox(
        kits: Kits, tmp_path: Path) -> None:
    """The handout's folder zipped with a bot.toml: `build` runs build.sh in the build sandbox
    (javac and protoc there, with the JVM's files shown read-only), then check-bot on frames and
    a validation game play it."""
    from participants.admission import admit
    from participants.roster import Roster
    from tests.participants.uploads import zip_of

    file = tmp_path / "class.toml"
    file.write_text(f'name = "class"\ntable_size = 2\naddress = "127.0.0.1:{free_port()}"\n'
                    f'[[bots]]\nname = "alice"\ntoken = "{TOKEN}"\n[[bots]]\nname = "house"\nbuiltin = "random"\n')
    subprocess.run([CRAITS, "handout", str(file), "--kit", "java", "-o", str(tmp_path / "handouts")],
                   capture_output=True, text=True, timeout=120, check=True)
    folder = tmp_path / "handouts" / "alice"
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    files["bot.toml"] = b'command = ["sh", "bot.sh"]\nbuild = "bash build.sh"\n'
    roster = Roster.create(tmp_path / "roster")
    roster.add("alice")
    version = roster.submit("alice", zip_of(files, folder="alice"), "alice.zip")
    outcome = admit(roster, version)
    assert outcome.status == "admitted", (outcome.reason, outcome.build_log[-2000:], outcome.report[-2000:])
    assert "java kit: built build" in outcome.build_log
