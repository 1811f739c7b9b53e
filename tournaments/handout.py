"""What a teacher hands a student: a folder that installs the bot kit and plays.

``craits handout FILE [NAME ...] --address HOST:PORT [--kit python|javascript]`` writes
``<out>/<NAME>/`` for each participant of the ladder file's roster (``roster = ...``: the way
a class runs), or for each student's bot of a file without one (a bot with a ``token`` and no
command: a quick ladder of a few trusted bots), with:

* the kit, from this checkout (:data:`KITS`: the Python kit's wheels, or the JavaScript kit
  with its packages), so a student's bot speaks exactly the protocol this referee speaks;
* a bot to start from, already pointed at the referee and named;
* the referee's certificate when it speaks TLS;
* ``README.md``: the address, the bot's name, how to install and run it, where the token goes,
  and with a roster the web address, how to log in and submit, and how to connect live.

The token is in none of these, nor in the folder's name: it is printed once, for the teacher
to give to the student (a handout forwarded or left on a shared drive gives nobody a seat).
With a roster the tokens are those ``craits roster import|add|renew`` appended to the tokens
file beside the roster folder, each checked against the roster (a renewed one is refused).
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


@dataclass(frozen=True, slots=True)
class Student:
    """What a handout is written for: the bot's name, the referee and the class's pages."""

    name: str
    server: str
    """The referee's address as the kit takes it (``grpcs://`` when it speaks TLS)."""
    tournament: str
    web: str | None = None
    """The class's web pages (a roster's), else None."""


Kit = handout_kits.Kit


def write_handouts(config: TournamentConfig, names: Sequence[str], out_dir: Path, address: str | None,
                   tls_ca: str | None = None, *, kit: str = "python", web: str | None = None,
                   students: Sequence[tuple[str, str]] | None = None) -> list[Handout]:
    """One folder per student under ``out_dir`` (see the module docstring). With a roster,
    ``students`` are its participants' (name, token), read and checked by the caller
    (:func:`participants.roster.handout_students`: the roster is a room above this one)."""
    if kit not in KITS:
        raise UserError(f"--kit {kit}: the kits are {', '.join(KITS)}")
    chosen = KITS[kit]
    if config.roster and students is None:
        raise UserError(f"{config.name}: a roster's handouts need its participants' tokens (craits handout FILE reads them)")
    bots = list(students) if students is not None else handout_bots(config, names)
    where = student_address(config, address)
    web = (web or f"http://{where.rpartition(':')[0]}:8080").rstrip("/") if config.roster else None
    cert = referee_cert(config, tls_ca)
    tls = tls_ca is not None or config.tls.enabled
    server = f"grpcs://{where}" if tls else where
    taken = [out_dir / name for name, _ in bots if (out_dir / name).exists()]
    if taken:
        raise UserError(f"{', '.join(map(str, taken))}: already there; remove it or give another --out")
    with tempfile.TemporaryDirectory(prefix="craits-kit-") as tmp:
        shared = chosen.prepare(Path(tmp))
        made = []
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, token in bots:
            student = Student(name, server, config.name, web)
            # Written beside, then renamed: a handout is there whole or not at all.
            part = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
            try:
                chosen.write(part, student, shared)
                readme = _README.format(name=name, server=server, tournament=config.name, token_file=TOKEN_FILE)
                readme += chosen.readme(student, shared)
                if web is not None:
                    readme += _README_ROSTER.format(name=name, web=web, token_file=TOKEN_FILE)
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


# ---------------------------------------------------------------------------- the kits


def _python_prepare(into: Path) -> list[Path]:
    return build_wheels(into / "wheels")


def _python_write(folder: Path, student: Student, wheels: list[Path]) -> None:
    (folder / "wheels").mkdir()
    for wheel in wheels:
        shutil.copy2(wheel, folder / "wheels" / wheel.name)
    (folder / "my_bot.py").write_text(
        _BOT.format(server=student.server, name=student.name, token_file=TOKEN_FILE, cert_file=CERT_FILE),
        encoding="utf-8")


def _python_readme(student: Student, wheels: list[Path]) -> str:
    return _README_PYTHON.format(name=student.name, server=student.server, token_file=TOKEN_FILE,
                                 wheels="\n".join(f"    wheels/{w.name}" for w in wheels))


JS_PARTS = ("bot.js", "offline.js", "package.json", "package-lock.json", "strategies", "node_modules")
"""What of ``clients/js`` a JavaScript handout carries (the packages too: they are plain JavaScript)."""
PROTO = Path("proto") / "craits" / "v1" / "referee.proto"


def _js_prepare(into: Path) -> list[Path]:
    kit = ROOT / "clients" / "js"
    if not (kit / "node_modules").is_dir():
        raise UserError(f"{kit}/node_modules: not there; craits handout --kit javascript hands out the kit with its "
                        "packages (run `make setup`, or npm ci in clients/js)")
    return [kit / part for part in JS_PARTS if (kit / part).exists()]


def _js_write(folder: Path, student: Student, parts: list[Path]) -> None:
    kit = folder / "clients" / "js"  # (bot.js finds the protocol at ../../proto/craits/v1/referee.proto)
    kit.mkdir(parents=True)
    for part in parts:
        if part.is_dir():
            shutil.copytree(part, kit / part.name, ignore=shutil.ignore_patterns("test", ".cache"))
        else:
            shutil.copy2(part, kit / part.name)
    (folder / PROTO).parent.mkdir(parents=True)
    shutil.copy2(ROOT / PROTO, folder / PROTO)
    (folder / "my_strategy.js").write_text(_STRATEGY.format(name=student.name), encoding="utf-8")


def _js_readme(student: Student, parts: list[Path]) -> str:
    tls = f" --tls-ca {CERT_FILE}" if student.server.startswith("grpcs://") else ""
    return _README_JS.format(name=student.name, server=student.server, token_file=TOKEN_FILE, tls=tls)


KITS: dict[str, Kit] = {
    "python": Kit("python", _python_prepare, _python_write, _python_readme),
    "javascript": Kit("javascript", _js_prepare, _js_write, _js_readme),
}
"""The kits a handout can carry, by ``--kit`` name; a new language adds one entry."""
KITS.update(handout_kits.KITS)
# (the compiled languages, Java and C++: tournaments.handout_kits)


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
        if any(a.announce for a in plays):  # leaving one card: say so ("3H+one-card"), or draw two
            plays = [a for a in plays if a.announce]
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

## Your token

Your teacher gives you a **token**: a secret that lets your bot, and only your bot, take its
seat. Put it in a file named `{token_file}` in this folder (one line, nothing else), or in the
environment variable `CRAITS_TOKEN`. Do not share it, do not put it in your code, and never
upload it.
"""

_README_PYTHON = """
## Install (once)

You need Python 3.10 or later. In this folder:

    python3 -m venv .venv
    .venv/bin/pip install wheels/*.whl

(On Windows: `py -m venv .venv`, then `.venv\\Scripts\\pip install` with each wheel's name.)
This installs the bot kit and the protocol it speaks, built for this referee:

{wheels}

and, from the package registry, grpcio and protobuf.

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

_README_JS = """
## Install

You need Node.js 18.3 or later; nothing else (the kit and its packages are in `clients/js/`).

## Play

    CRAITS_TOKEN=$(cat {token_file}) node clients/js/bot.js --strategy ./my_strategy.js --server {server} --name {name}{tls}

The bot connects to {server}, says it is {name}, and plays every game it is given; leave it
running. Ctrl-C stops it. To improve it, edit `choose()` in `my_strategy.js` and start it again.
If your code throws, the kit plays the first legal action instead, prints the error in this
terminal, and the board counts it as a **bot error** of yours: read it and fix it.
"""

_README_ROSTER = """
## Submit your bot (it then plays on the ladder without your computer)

1. Open **{web}/login** and paste your token (it never goes in a link).
2. Upload your bot file (`my_bot.py` or `my_strategy.js`, alone: never `{token_file}`), or a
   `.zip` of a folder with a `bot.toml`. From a terminal instead:

       curl -H "Authorization: Bearer $(cat {token_file})" -H "X-Filename: my_bot.py" \\
            --data-binary @my_bot.py {web}/api/submit

3. Your page ({web}/me) shows the version `building`, then `admitted` (it plays from the next
   round) or `refused` with the reason, the checker's report and your bot's output. An
   admitted version with a warning played its validation game badly (errors, timeouts):
   read them there.

Your page also lists your games with their replays and your bot's faults, lets you compare two
of your versions and play scrimmages, and says which version enters the final. The board
({web}/) ranks everyone.

## Or connect live

Running your bot as in *Play* above connects it to the ladder as **{name}** while it runs,
beside your submitted versions: handy to watch it think. Only submitted versions enter the
final.
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

_STRATEGY = """// {name}'s bot for Craits Arena. Change choose() and play again (README.md says how).
//
// The kit calls choose(request) for every decision with the legal actions, sorted; return one of
// them. If your code throws, the kit answers the first legal action instead, prints the error,
// and the referee counts it as a bot error on the board.
module.exports = {{
  name: '{name}',
  choose(request) {{
    // request.legal_actions: what you may do (each has .text, e.g. "5S", "8H:clubs", "draw")
    // request.hand: your cards; request.observation: the table as you may see it
    let plays = request.legal_actions.filter((a) => a.text !== 'draw');
    // leaving one card: say so ("3H+one-card"), or draw two
    if (plays.some((a) => a.announce)) plays = plays.filter((a) => a.announce);
    return plays.length ? plays[0] : request.legal_actions[0];
  }},
}};
"""
