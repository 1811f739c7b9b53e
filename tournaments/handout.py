"""What a teacher hands a student: a folder that installs the bot kit and plays.

``craits handout FILE [BOT ...] --address HOST:PORT`` writes, for each student's bot of a
tournament file (a bot with a ``token`` and no command), ``<out>/<bot>/`` with:

* ``wheels/``: the protocol package (``proto/python``) and the kit (``clients/python``),
  built from this checkout, so a student installs exactly the protocol this referee speaks
  (``pip install wheels/*.whl`` brings grpcio and protobuf from the registry);
* ``my_bot.py``: a bot to start from, already pointed at the referee and named;
* ``README.md``: the address, the bot's name, how to install and run it, and where the token goes.

The token is in none of these, nor in the folder's name: it is printed once, for the teacher
to give to the student (a handout forwarded or left on a shared drive gives nobody a seat).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from server.errors import UserError
from server.transport.tls import CERT_FILE, server_tls
from tournaments import handout_kits
from tournaments.config import TournamentConfig

ROOT = Path(__file__).resolve().parents[1]
"""The checkout whose kit is handed out."""
PACKAGES = (("proto", "python"), ("clients", "python"))
"""The packages built into wheels, as paths under ROOT (the protocol first: the kit needs it)."""
_NOT_COPIED = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.pyc", "node_modules")
TOKEN_FILE = "token.txt"


@dataclass(frozen=True, slots=True)
class Handout:
    bot: str
    folder: Path
    token: str


@dataclass(frozen=True, slots=True)
class HandedCert:
    """The referee's certificate a handout carries (its bots connect over TLS)."""

    pem: bytes
    source: Path
    fingerprint: str = ""


def handout_bots(config: TournamentConfig, names: Sequence[str]) -> list[tuple[str, str]]:
    """(name, token) of the students' bots asked for (all of them when ``names`` is empty)."""
    students = {bot.name: bot.token for bot in config.bots if bot.token and bot.command is None and bot.builtin is None}
    if not students:
        raise UserError(f"{config.name}: no bot connects on its own (a bot with a token and no command): "
                        "a handout is for a student's bot that connects with its token")
    unknown = [name for name in names if name not in students]
    if unknown:
        raise UserError(f"{', '.join(map(repr, unknown))}: not a student's bot of {config.name} "
                        f"(those are: {', '.join(students)})")
    return [(name, students[name]) for name in (names or students)]


def student_address(config: TournamentConfig, address: str | None) -> str:
    """Where a student's bot connects: ``address``, else the file's when other machines can use it."""
    if address:
        return address
    listen = config.listen_address()
    host = listen.rpartition(":")[0]
    if host in ("0.0.0.0", "::", "[::]", ""):
        port = listen.rpartition(":")[2]
        raise UserError(f"{config.name} listens on {listen} (every interface): give --address with this "
                        f"machine's address on the class's network, e.g. --address 192.168.1.10:{port}")
    return listen


def build_wheels(into: Path) -> list[Path]:
    """Wheels of the protocol package and the kit, built from copies of their folders (the
    checkout is left as it was, and two builds at once do not meet)."""
    for parts in PACKAGES:
        if not (ROOT.joinpath(*parts) / "pyproject.toml").is_file():
            raise UserError(f"{ROOT.joinpath(*parts)}: not found; craits handout builds the kit from a "
                            "checkout of craits (after `make setup`)")
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="craits-handout-") as tmp:
        for top in {parts[0] for parts in PACKAGES}:
            shutil.copytree(ROOT / top, Path(tmp) / top, ignore=_NOT_COPIED)
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                   "--wheel-dir", str(into), *(str(Path(tmp).joinpath(*parts)) for parts in PACKAGES)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise UserError(f"building the kit's wheels failed:\n{done.stderr.strip() or done.stdout.strip()}")
    return sorted(into.glob("*.whl"))


def referee_cert(config: TournamentConfig, tls_ca: str | None) -> HandedCert | None:
    """The certificate the students' bots must trust, when the file's referee speaks TLS:
    ``tls_ca``'s file, else for ``tls = "self-signed"`` the one the referee will serve from its
    output folder (``logs/<name>/tls/``, made now if it is not there yet, as the referee would);
    None for plain text, or an organizer's own certificate (from an authority the students'
    systems trust) without ``tls_ca``."""
    if tls_ca is not None:
        path = Path(tls_ca)
        try:
            pem = path.read_bytes()
        except OSError as err:
            raise UserError(f"--tls-ca {tls_ca}: cannot read it: {err.strerror or err}") from None
        if b"-----BEGIN CERTIFICATE-----" not in pem:
            raise UserError(f"--tls-ca {tls_ca}: not a PEM certificate (-----BEGIN CERTIFICATE-----)")
        return HandedCert(pem, path)
    wanted = config.tls
    if not wanted.self_signed:
        return None
    made = server_tls(wanted, config.output_dir(), config.listen_address())
    assert made is not None
    return HandedCert(made.cert_pem, made.cert_path, made.fingerprint)


KIT_NAMES = ("python", *handout_kits.KITS)
"""The kits a handout can carry (``--kit``): the Python kit's wheels, or a compiled language's sources."""


@dataclass(frozen=True, slots=True)
class Student:
    """Who a compiled kit's handout is for: the bot's name and where its referee is."""

    name: str
    server: str


def write_handouts(config: TournamentConfig, names: Sequence[str], out_dir: Path, address: str | None,
                   tls_ca: str | None = None, *, kit: str = "python") -> list[Handout]:
    """One folder per student's bot under ``out_dir`` (see the module docstring)."""
    if kit not in KIT_NAMES:
        raise UserError(f"--kit {kit}: the kits are {', '.join(KIT_NAMES)}")
    bots = handout_bots(config, names)
    where = student_address(config, address)
    cert = referee_cert(config, tls_ca)
    tls = tls_ca is not None or config.tls.enabled
    server = f"grpcs://{where}" if tls else where
    taken = [out_dir / name for name, _ in bots if (out_dir / name).exists()]
    if taken:
        raise UserError(f"{', '.join(map(str, taken))}: already there; remove it or give another --out")
    if kit != "python":
        return _write_kit_handouts(handout_kits.KITS[kit], config, bots, out_dir, server, cert)
    with tempfile.TemporaryDirectory(prefix="craits-wheels-") as tmp:
        wheels = build_wheels(Path(tmp))
        made = []
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, token in bots:
            # Written beside, then renamed: a handout is there whole or not at all.
            part = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
            try:
                (part / "wheels").mkdir()
                for wheel in wheels:
                    shutil.copy2(wheel, part / "wheels" / wheel.name)
                (part / "my_bot.py").write_text(
                    _BOT.format(server=server, name=name, token_file=TOKEN_FILE, cert_file=CERT_FILE),
                    encoding="utf-8")
                readme = _README.format(name=name, server=server, tournament=config.name, token_file=TOKEN_FILE,
                                        wheels="\n".join(f"    wheels/{w.name}" for w in wheels))
                if cert is not None:
                    (part / CERT_FILE).write_bytes(cert.pem)
                    readme += _README_TLS.format(cert_file=CERT_FILE, fingerprint=(
                        f"Its SHA-256 fingerprint is\n\n    {cert.fingerprint}\n\n" if cert.fingerprint else ""))
                (part / "README.md").write_text(readme, encoding="utf-8")
                part.chmod(0o755)
                part.rename(out_dir / name)
            except BaseException:
                shutil.rmtree(part, ignore_errors=True)
                raise
            made.append(Handout(name, out_dir / name, token))
    return made


def _write_kit_handouts(kit: handout_kits.Kit, config: TournamentConfig, bots: list[tuple[str, str]], out_dir: Path,
                        server: str, cert: HandedCert | None) -> list[Handout]:
    """The handouts of a compiled language's kit (tournaments.handout_kits), written as the Python ones."""
    with tempfile.TemporaryDirectory(prefix="craits-kit-") as tmp:
        shared = kit.prepare(Path(tmp))
        made = []
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, token in bots:
            student = Student(name, server)
            part = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
            try:
                kit.write(part, student, shared)
                readme = _README_KIT.format(name=name, server=server, tournament=config.name,
                                            token_file=TOKEN_FILE) + kit.readme(student, shared)
                if cert is not None:
                    (part / CERT_FILE).write_bytes(cert.pem)
                    readme += _README_TLS.format(cert_file=CERT_FILE, fingerprint=(
                        f"Its SHA-256 fingerprint is\n\n    {cert.fingerprint}\n\n" if cert.fingerprint else ""))
                (part / "README.md").write_text(readme, encoding="utf-8")
                part.chmod(0o755)
                part.rename(out_dir / name)
            except BaseException:
                shutil.rmtree(part, ignore_errors=True)
                raise
            made.append(Handout(name, out_dir / name, token))
    return made


_README_KIT = """# {name}: your bot for Craits Arena ({tournament})

Your bot is **{name}**. It plays against your classmates' bots through the referee at
**{server}**.

## Your token

Your teacher gives you a **token**: a secret that lets your bot, and only your bot, take its
seat. Put it in a file named `{token_file}` in this folder (one line, nothing else), or in the
environment variable `CRAITS_TOKEN`. Do not share it, and do not put it in your code.
"""


_BOT = '''"""{name}'s bot for Craits Arena. Change choose() and play again: python my_bot.py

The kit (craits_bot) calls choose() for every decision with the legal actions, sorted; return
one of them. If your code raises, the kit answers the first legal action instead, prints the
traceback here, and the referee counts it as a bot error on the board: look at this terminal.
"""

import os
from pathlib import Path

from craits_bot import Bot, run

SERVER = "{server}"
NAME = "{name}"
TOKEN_FILE = Path(__file__).with_name("{token_file}")
CERT_FILE = Path(__file__).with_name("{cert_file}")  # the referee's certificate, when it speaks TLS


class MyBot(Bot):
    name = NAME

    def choose(self, request):
        # request.legal_actions: what you may do (each has .text, e.g. "5S", "8H:clubs", "draw")
        # request.hand: your cards; request.observation: the table as you may see it
        plays = [a for a in request.legal_actions if a.text != "draw"]
        return plays[0] if plays else request.legal_actions[0]


if __name__ == "__main__":
    token = TOKEN_FILE.read_text().strip() if TOKEN_FILE.is_file() else None  # else CRAITS_TOKEN or --token
    if CERT_FILE.is_file():
        os.environ.setdefault("CRAITS_TLS_CA", str(CERT_FILE))
    run(MyBot(), server=SERVER, name=NAME, token=token)
'''

_README = """# {name}: your bot for Craits Arena ({tournament})

Your bot is **{name}**. It plays against your classmates' bots through the referee at
**{server}**.

## Install (once)

You need Python 3.10 or later. In this folder:

    python3 -m venv .venv
    .venv/bin/pip install wheels/*.whl

(On Windows: `py -m venv .venv`, then `.venv\\Scripts\\pip install` with each wheel's name.)
This installs the bot kit and the protocol it speaks, built for this referee:

{wheels}

and, from the package registry, grpcio and protobuf.

## Your token

Your teacher gives you a **token**: a secret that lets your bot, and only your bot, take its
seat. Put it in a file named `{token_file}` in this folder (one line, nothing else), or in the
environment variable `CRAITS_TOKEN`. Do not share it, and do not put it in your code.

## Play

    .venv/bin/python my_bot.py

The bot connects to {server}, says it is {name}, and plays every game it is given; leave it
running. Ctrl-C stops it (its games in progress go on without it: come back soon). To improve
it, edit `choose()` in `my_bot.py` and start it again.

If your code raises an exception, the kit plays the first legal action instead, prints the
traceback in this terminal between two lines of `!`, and the board counts it as a
**bot error** of yours: read the traceback and fix it.

If the bot says the referee refused it, check the token in `{token_file}`; if it cannot reach
the referee, check that the teacher's referee is running and that you are on the class network.
"""

_README_TLS = """
## The referee's certificate

The referee encrypts its connections (TLS), so nobody on the network can read your token or
your cards. `{cert_file}` in this folder is its certificate: `my_bot.py` trusts it (and no other
referee) when it connects. {fingerprint}Compare it with the one your teacher shows:

    openssl x509 -in {cert_file} -noout -fingerprint -sha256

If the bot says the referee's certificate is not one it trusts, ask your teacher for the
current `{cert_file}` and put it in this folder.
"""
