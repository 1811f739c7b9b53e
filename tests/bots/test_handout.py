"""A student's handout installs into a fresh virtual environment and plays (issue 30, point 7).

``craits handout`` writes the kit's wheels (built from this checkout), a bot to start from
and a README; the token is printed once for the teacher and is in no file or folder name.
The test does what the README says, in a new venv that shares nothing with the project's
(the wheels from the handout, grpcio and protobuf from the package registry pip is
configured with), puts the token where the README says, and plays a ladder round against
the referee with it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from participants.roster import handout_students
from server.cli import main as craits_cli
from server.errors import UserError
from tests.tournaments.test_remote_bots import craits, wait_for_address
from tournaments.config import load_config
from tournaments.handout import write_handouts
from tournaments.ladder import reopen_ladder

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "alice-handout-token-5150"


def test_a_handout_installs_into_a_fresh_venv_and_its_bot_plays(tmp_path: Path) -> None:
    file = tmp_path / "class.toml"
    file.write_text(
        'name = "class"\ntable_size = 2\nseed = 5\naddress = "127.0.0.1:0"\n[flags]\nshort_game = true\n'
        "[clocks]\nconnect_timeout_s = 120.0\n"
        f'[[bots]]\nname = "alice"\ntoken = "{TOKEN}"\n[[bots]]\nname = "house"\nbuiltin = "random"\n',
        encoding="utf-8",
    )
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr

    with craits("ladder", "run", str(file), "--out", str(tmp_path / "out"), "--rounds", "1") as (ladder, lines):
        address, _ = wait_for_address(lines)
        written = subprocess.run(
            [sys.executable, "-m", "server.cli", "handout", str(file), "alice", "--address", address,
             "-o", str(tmp_path / "handouts")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert written.returncode == 0, written.stderr
        folder = tmp_path / "handouts" / "alice"
        assert written.stdout.count(TOKEN) == 1 and "alice" in written.stdout
        assert sorted(p.name for p in folder.iterdir()) == ["README.md", "my_bot.py", "wheels"]
        wheels = sorted(p.name for p in (folder / "wheels").iterdir())
        assert [w.split("-")[0] for w in wheels] == ["craits_bot", "craits_protocol"]
        for path in folder.rglob("*"):
            assert TOKEN not in str(path)
            assert not path.is_file() or TOKEN.encode() not in path.read_bytes(), path
        readme = (folder / "README.md").read_text()
        assert address in readme and "alice" in readme and "token.txt" in readme and "CRAITS_TOKEN" in readme

        # as the README says, in the fresh venv (bash for the wildcard)
        pip = subprocess.run(["bash", "-c", f"{venv}/bin/pip install --quiet wheels/*.whl"], cwd=folder,
                             capture_output=True, text=True, timeout=600)
        assert pip.returncode == 0, pip.stderr
        where = subprocess.run([str(venv / "bin" / "python"), "-c", "import craits_bot; print(craits_bot.__file__)"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr

        (folder / "token.txt").write_text(TOKEN + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAITS_", "VIRTUAL_ENV", "PYTHON"))}
        bot = subprocess.Popen([str(venv / "bin" / "python"), "my_bot.py"], cwd=folder, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert ladder.wait(timeout=600) == 0
        finally:
            bot.terminate()
            output, _ = bot.communicate(timeout=60)
    assert "connected to " + address + " as 'alice'" in output, output
    _, store = reopen_ladder(tmp_path / "out")
    with store:
        results = store.results()
    assert results and all(r.seats[r.bots.index("alice")].status == "ok" for r in results)
    assert all(r.seats[r.bots.index("alice")].counters["decisions"] > 0 for r in results)


def test_a_handout_for_a_tls_referee_carries_its_certificate_and_connects_to_grpcs(tmp_path: Path) -> None:
    """tls = "self-signed" (as tournaments/examples/classroom.toml has it): my_bot.py connects to
    grpcs:// and trusts referee-cert.pem, the certificate the referee will serve from its output
    folder (made now, reused by the referee); --tls-ca hands out another file; a plain referee's
    handout has no certificate."""
    from server.transport.tls import server_tls
    from tournaments.config import load_config

    file = tmp_path / "class.toml"
    file.write_text('name = "class"\ntable_size = 2\naddress = "127.0.0.1:50999"\ntls = "self-signed"\n'
                    f'[[bots]]\nname = "alice"\ntoken = "{TOKEN}"\n[[bots]]\nname = "house"\nbuiltin = "random"\n',
                    encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "server.cli", "handout", str(file), "-o", "handouts"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "handouts" / "alice"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "my_bot.py", "referee-cert.pem", "wheels"]
    bot = (folder / "my_bot.py").read_text()
    assert 'SERVER = "grpcs://127.0.0.1:50999"' in bot and "CRAITS_TLS_CA" in bot
    config = load_config(file)
    served = server_tls(config.tls, tmp_path / "logs" / "class", config.listen_address())
    assert served is not None and served.news == "reused from an earlier run"
    assert (folder / "referee-cert.pem").read_bytes() == served.cert_pem
    readme = (folder / "README.md").read_text()
    assert "grpcs://127.0.0.1:50999" in readme and served.fingerprint in readme and "openssl x509" in readme

    other = tmp_path / "other.pem"
    other.write_bytes(served.cert_pem)
    done = subprocess.run([sys.executable, "-m", "server.cli", "handout", str(file), "-o", "h2", "--tls-ca",
                           str(other)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "h2" / "alice" / "referee-cert.pem").read_bytes() == served.cert_pem
    done = subprocess.run([sys.executable, "-m", "server.cli", "handout", str(file), "-o", "h3", "--tls-ca",
                           str(tmp_path / "nope.pem")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.startswith("craits: error: --tls-ca ") and "Traceback" not in done.stderr

    file.write_text(file.read_text().replace('tls = "self-signed"\n', ""), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "server.cli", "handout", str(file), "-o", "plain"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "plain" / "alice" / "referee-cert.pem").exists()
    assert 'SERVER = "127.0.0.1:50999"' in (tmp_path / "plain" / "alice" / "my_bot.py").read_text()


def test_a_roster_handout_per_participant_in_python_and_javascript_whose_bots_play_live(tmp_path: Path) -> None:
    """A class run from a roster (issue 38, point 1): `craits handout` reads the tokens `roster
    import` wrote (checked against the roster, printed once), writes a folder per participant
    with the kit of the language asked for, a bot to start from and a README that says where
    to log in, how to submit and how to connect live; each bot, started as its README says,
    plays on the ladder under its owner's name."""
    (tmp_path / "students.csv").write_text("name,email\nalice,a@example.org\nbob,\n", encoding="utf-8")
    imported = subprocess.run([sys.executable, "-m", "server.cli", "roster", "import", "class", "students.csv"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    tokens = dict(line.split("\t") for line in imported.stdout.splitlines())
    file = tmp_path / "class.toml"
    with socket.socket() as probe:  # (a free port: the handouts are written before the ladder starts)
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    # (two house bots: a ladder starts its referee once a table can be filled by bots it has)
    file.write_text(f'name = "class"\ntable_size = 2\nroster = "class"\naddress = "{address}"\nseed = 5\n'
                    "pause_s = 1\n[flags]\nshort_game = true\n"
                    '[[bots]]\nname = "house-random"\nbuiltin = "random"\n'
                    '[[bots]]\nname = "house-default"\nbuiltin = "default"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAITS_")}
    made = {}
    for name, kit in (("alice", "python"), ("bob", "javascript")):
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "handout", str(file), name, "--kit", kit,
             "--web", "https://arena.example.org", "-o", str(tmp_path / kit)],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.count(tokens[name]) == 1 and "token: " + tokens[name] in done.stdout
        made[name] = folder = tmp_path / kit / name
        for path in folder.rglob("*"):
            assert tokens[name] not in str(path)
            assert not path.is_file() or tokens[name].encode() not in path.read_bytes(), path
        readme = (folder / "README.md").read_text()
        for said in (address, "https://arena.example.org/login", "https://arena.example.org/api/submit",
                     "Or connect live", "token.txt", f"as **{name}**"):
            assert said in readme, said
        (folder / "token.txt").write_text(tokens[name] + "\n")
    assert sorted(p.name for p in made["alice"].iterdir()) == ["README.md", "my_bot.py", "token.txt", "wheels"]
    assert sorted(p.name for p in made["bob"].iterdir()) == [
        "README.md", "clients", "my_strategy.js", "proto", "token.txt"]
    with craits("ladder", "run", str(file), "--out", str(tmp_path / "out"), "--rounds", "8") as (ladder, lines):
        wait_for_address(lines)
        # each as its README says (the Python kit from the project's own environment: the wheels'
        # install is the test above)
        play_js = next(line.strip() for line in (made["bob"] / "README.md").read_text().splitlines()
                       if "node clients/js/bot.js" in line)
        bots = [subprocess.Popen([sys.executable, "my_bot.py"], cwd=made["alice"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT),
                subprocess.Popen(["bash", "-c", play_js], cwd=made["bob"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)]
        try:
            assert ladder.wait(timeout=300) == 0
        finally:
            outputs = []
            for bot in bots:
                bot.terminate()
                outputs.append(bot.communicate(timeout=60)[0])
    _, store = reopen_ladder(tmp_path / "out")
    with store:
        results = store.results()
    for name in ("alice", "bob"):
        theirs = [r.seats[r.bots.index(name)] for r in results if name in r.bots]
        assert theirs and all(s.status == "ok" and s.counters["decisions"] > 0 for s in theirs), outputs


def test_a_roster_handout_refuses_a_token_renewed_since_and_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "students.csv").write_text("name\nalice\nbob\n", encoding="utf-8")
    assert craits_cli(["roster", "import", str(tmp_path / "class"), str(tmp_path / "students.csv")]) == 0
    from participants.roster import Roster

    Roster(tmp_path / "class").renew("bob")  # (not written to the tokens file: as if printed elsewhere)
    file = tmp_path / "class.toml"
    file.write_text('name = "class"\ntable_size = 3\nroster = "class"\naddress = "127.0.0.1:50998"\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"no working token in .*class-tokens.csv for bob .*craits roster renew"):
        handout_students(tmp_path / "class", [], None)
    with pytest.raises(UserError, match="'carl': not on the roster"):
        handout_students(tmp_path / "class", ["carl"], None)
    students = handout_students(tmp_path / "class", ["alice"], None)
    with pytest.raises(UserError, match="--kit cobol: the kits are python, javascript"):
        write_handouts(load_config(file, check_paths=False), ["alice"], tmp_path / "h", None, kit="cobol",
                       students=students)
    assert not (tmp_path / "h").exists()
