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
import subprocess
import sys
from pathlib import Path

from tests.tournaments.test_remote_bots import craits, wait_for_address
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
