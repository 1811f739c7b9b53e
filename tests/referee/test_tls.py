"""TLS on the referee's bot port: kit bots that trust its certificate play; a bot that does not
(no CA file, another certificate) and a plain-text client are refused before their Hello, and
so their token, ever reaches the referee; the self-signed certificate is kept, reused and its
key private; a referee listening beyond this machine in plain text says so at start.

One referee serves every test that needs one: a real gRPC server on 127.0.0.1 over TLS with a
self-signed certificate, on an event loop of its own, with a spy that counts the streams it
reads (a stream exists only once the TLS handshake is over: no stream, no token)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import queue
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from craits.v1 import referee_pb2 as pb
from craits.v1 import referee_pb2_grpc

from server.spec import BotSpec, Clocks, SeatStatus
from server.transport.service import Arena, ArenaOptions, security_notes
from server.transport.tls import ServerTLS, TLSRequest, _make, load_pair, self_signed, server_tls
from tests.bots.commands import JS_RANDOM, PY_RANDOM, ROOT, finish, need_node, start_bot
from tests.cli import run_cli, wait_for_line
from tests.referee.conftest import spec, token
from tournaments.config import load_config, parse_config

T = TypeVar("T")
CLOCKS = Clocks(decision_s=2.0, bank_s=10.0, max_strikes=3, reconnect_grace_s=2.0, connect_timeout_s=60.0)
KITS = {"python": PY_RANDOM, "js": JS_RANDOM}


class TLSReferee:
    """An Arena over TLS on a thread's event loop, shared by the tests of this file."""

    def __init__(self, tls: ServerTLS) -> None:
        self.tls = tls
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="tls-referee", daemon=True)
        self.thread.start()
        # Launched bots unsandboxed: under TLS they too come through the referee's Unix socket.
        self.arena: Arena = self.call(Arena.start("127.0.0.1:0", ArenaOptions(hello_timeout_s=5.0, sandbox="none"), tls))
        self.streams: list[str] = []
        """The peer of every stream the referee read (each would begin with a Hello and its token)."""
        read_stream = self.arena.read_stream

        async def spy(session: Any, messages: Any) -> None:
            self.streams.append(session.peer)
            await read_stream(session, messages)

        self.arena.read_stream = spy  # type: ignore[method-assign]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.arena.port}"

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def register(self, name: str) -> str:
        secret = token()

        async def add() -> None:
            self.arena.register_token(secret, name)

        self.call(add())
        return secret

    def close(self) -> None:
        self.call(self.arena.shutdown(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[ServerTLS, ServerTLS]:
    """The referee's self-signed certificate, and another one, made the same way elsewhere."""
    ours = self_signed(tmp_path_factory.mktemp("out") / "tls", "127.0.0.1")
    other = self_signed(tmp_path_factory.mktemp("elsewhere") / "tls", "127.0.0.1")
    return ours, other


@pytest.fixture(scope="module")
def referee(certs: tuple[ServerTLS, ServerTLS]) -> Iterator[TLSReferee]:
    served = TLSReferee(certs[0])
    try:
        yield served
    finally:
        served.close()


def kit_env(referee: TLSReferee, secret: str, name: str, ca: Path | None, scheme: str = "grpcs://") -> dict[str, str]:
    env = {"CRAITS_SERVER": f"{scheme}{referee.address}", "CRAITS_TOKEN": secret, "CRAITS_BOT_NAME": name}
    if ca is not None:
        env["CRAITS_TLS_CA"] = str(ca)
    return env


def test_python_and_javascript_kit_bots_play_a_game_over_tls_with_the_certificate_file(referee: TLSReferee) -> None:
    need_node()
    ca = referee.tls.cert_path
    seats = (BotSpec("py", token()), BotSpec("js", token()), BotSpec("launched", token(), command=PY_RANDOM))
    game = spec(*seats, clocks=CLOCKS)
    seen = len(referee.streams)
    bots = [start_bot(command, "-q", env=kit_env(referee, seat.token, seat.name, ca))
            for command, seat in ((PY_RANDOM, seats[0]), (JS_RANDOM, seats[1]))]
    try:
        record = referee.call(referee.arena.run_game(game))
    finally:
        for bot in bots:
            bot.send_signal(signal.SIGTERM)  # (a bot that connects on its own waits for more games)
    outcomes = [finish(bot) for bot in bots]
    assert not record.aborted
    assert [seat.status for seat in record.seats] == [SeatStatus.OK] * 3, (record.seats, outcomes)
    assert not [err for _, err in outcomes if "ERROR" in err], outcomes  # (-q: only problems are logged)
    peers = sorted(peer.partition(":")[0] for peer in referee.streams[seen:])
    assert peers == ["ipv4", "ipv4", "unix"]  # the launched bot came through the Unix socket, in plain text


@pytest.mark.parametrize("kit", sorted(KITS))
@pytest.mark.parametrize("trust", ["no CA file", "another certificate"])
def test_a_kit_that_does_not_trust_the_certificate_is_refused_before_its_token_is_sent(
    referee: TLSReferee, certs: tuple[ServerTLS, ServerTLS], kit: str, trust: str
) -> None:
    if kit == "js":
        need_node()
    secret = referee.register(f"{kit}-untrusting")
    seen = len(referee.streams)
    ca = certs[1].cert_path if trust == "another certificate" else None
    code, err = finish(start_bot(KITS[kit], env=kit_env(referee, secret, "untrusting", ca)))
    assert code == 3, err  # refused at once, not retried for the reconnect window
    assert "certificate is not one this bot trusts" in err and "CRAITS_TLS_CA" in err, err
    assert "never falls back to plain text" in err
    assert referee.streams[seen:] == []  # the referee read no stream, so no Hello and no token


def test_a_token_is_never_accepted_on_a_plain_connection_to_the_tls_port(referee: TLSReferee) -> None:
    secret = referee.register("plain")
    seen = len(referee.streams)

    async def plain_hello() -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(referee.address) as channel:
            call = referee_pb2_grpc.RefereeStub(channel).Play()
            try:
                await call.write(pb.BotMessage(hello=pb.Hello(token=secret, protocol_version=1, name="plain")))
                await call.read()
            except grpc.aio.AioRpcError as err:
                return err.code()
            return await call.code()

    assert asyncio.run(plain_hello()) == grpc.StatusCode.UNAVAILABLE
    code, err = finish(start_bot(PY_RANDOM, "--reconnect-s", "0", env=kit_env(referee, secret, "plain", None, "")))
    assert code == 4, err  # no referee answered in plain text
    assert "is it grpcs://?" in err
    assert referee.streams[seen:] == []


def test_a_tls_kit_never_falls_back_to_a_plain_text_referee(tmp_path: Path, referee: TLSReferee) -> None:
    async def plain_referee() -> tuple[int, str]:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(sandbox="none"))
        try:
            secret = token()
            arena.register_token(secret, "careful")
            env = kit_env(referee, secret, "careful", referee.tls.cert_path)
            env["CRAITS_SERVER"] = f"grpcs://127.0.0.1:{arena.port}"
            bot = start_bot(PY_RANDOM, env=env)
            return await asyncio.to_thread(finish, bot)
        finally:
            await arena.shutdown(0)

    code, err = asyncio.run(plain_referee())
    assert code == 3, err
    assert "does not speak TLS on that port" in err


@pytest.mark.parametrize("kit", sorted(KITS))
def test_a_certificate_that_does_not_name_the_host_dialled_is_refused(tmp_path: Path, kit: str) -> None:
    if kit == "js":
        need_node()
    cert_pem, key_pem = _make(["referee.example"], [])  # (not 127.0.0.1, where the bot dials)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    elsewhere = load_pair(tmp_path / "cert.pem", tmp_path / "key.pem")

    async def dial() -> tuple[int, str, int]:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(sandbox="none"), elsewhere)
        streams = 0
        read_stream = arena.read_stream

        async def spy(session: Any, messages: Any) -> None:
            nonlocal streams
            streams += 1
            await read_stream(session, messages)

        arena.read_stream = spy  # type: ignore[method-assign]
        try:
            secret = token()
            arena.register_token(secret, "named")
            env = {"CRAITS_SERVER": f"grpcs://127.0.0.1:{arena.port}", "CRAITS_TLS_CA": str(elsewhere.cert_path),
                   "CRAITS_TOKEN": secret}
            code, err = await asyncio.to_thread(finish, start_bot(KITS[kit], env=env))
            return code, err, streams
        finally:
            await arena.shutdown(0)

    code, err, streams = asyncio.run(dial())
    assert code == 3, err
    assert "certificate does not name the host dialled" in err
    assert streams == 0


def test_the_self_signed_certificate_is_kept_reused_and_its_key_private() -> None:
    folder = Path(tempfile.mkdtemp(prefix="craits-tls-test-"))
    try:
        folder.chmod(0o755)  # (every user may look in: only the key's own mode keeps them out)
        first = server_tls(TLSRequest(self_signed=True), folder, "0.0.0.0:50051")
        assert first is not None and first.news == "made now"
        assert first.cert_path == folder / "tls" / "referee-cert.pem"
        assert stat.S_IMODE(first.key_path.stat().st_mode) == 0o600
        _not_readable_by_another_user(first.key_path)

        again = server_tls(TLSRequest(self_signed=True), folder, "0.0.0.0:50051")
        assert again is not None and again.news == "reused from an earlier run"
        assert again.fingerprint == first.fingerprint and again.cert_pem == first.cert_pem

        first.key_path.chmod(0o644)  # (unpacked from an archive with another umask, say)
        assert server_tls(TLSRequest(self_signed=True), folder, "0.0.0.0:50051").fingerprint == first.fingerprint
        assert stat.S_IMODE(first.key_path.stat().st_mode) == 0o600

        moved = server_tls(TLSRequest(self_signed=True), folder, "192.0.2.77:50051")  # an address it does not name
        assert moved is not None and moved.fingerprint != first.fingerprint
        assert "did not name 192.0.2.77" in moved.news and "hand out the new file" in moved.news

        mine = load_pair(moved.cert_path, moved.key_path)  # the same files, given as an organizer's own
        assert mine.fingerprint == moved.fingerprint
    finally:
        shutil.rmtree(folder)


def _not_readable_by_another_user(path: Path) -> None:
    """As root, try: `nobody` cannot read the key (elsewhere the mode above says it)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", str(path)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "Permission denied" in done.stderr
    assert "PRIVATE KEY" not in done.stdout


def test_a_key_that_is_not_the_certificates_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], certs: tuple[ServerTLS, ServerTLS]
) -> None:
    ours, other = certs
    code, _, err = run_cli(capsys, "serve", "--address", "127.0.0.1:0", "--tls-cert", str(ours.cert_path),
                           "--tls-key", str(other.key_path))
    assert code == 2
    assert err.strip() == f"craits: error: TLS key {other.key_path} is not the private key of the certificate {ours.cert_path}"
    code, _, err = run_cli(capsys, "serve", "--tls-cert", str(ours.cert_path))
    assert code == 2 and "--tls-cert needs --tls-key too" in err


def test_a_public_address_is_said_at_start_in_plain_text_and_over_tls(tmp_path: Path) -> None:
    """Bound to every interface (0.0.0.0), reached in the test on 127.0.0.1 only."""
    plain = _serve_first_lines(tmp_path / "plain", [], r"warning:")
    warning = next(line for line in plain if "warning:" in line)
    assert re.search(r"warning: listening on 0\.0\.0\.0:\d+ without TLS: anyone on that network can read the bots' "
                     r"tokens and hands, and play as them; add --tls self-signed", warning), warning

    async def over_tls() -> list[str]:
        tls = server_tls(TLSRequest(self_signed=True), tmp_path / "tls", "0.0.0.0:0")
        arena = await Arena.start("0.0.0.0:0", ArenaOptions(sandbox="none"), tls)
        try:
            return security_notes(arena)
        finally:
            await arena.shutdown(0)

    notes = asyncio.run(over_tls())
    made = load_pair(tmp_path / "tls" / "tls" / "referee-cert.pem", tmp_path / "tls" / "tls" / "referee-key.pem")
    assert len(notes) == 1 and "warning" not in notes[0]
    assert f"SHA-256 {made.fingerprint}" in notes[0] and str(made.cert_path) in notes[0]
    assert f"grpcs://{socket.gethostname()}:" in notes[0]  # (the machine's name, for the other machines)


def _serve_first_lines(log_dir: Path, extra: list[str], until: str) -> list[str]:
    """`craits serve` on 0.0.0.0: its standard error up to the line matching ``until``, once a
    connection through 127.0.0.1 has shown that it listens; then SIGTERM."""
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve", "--address", "0.0.0.0:0",
                             "--token", "a=secret-a", "--log-dir", str(log_dir), *extra],
                            cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        for line in proc.stderr or ():
            seen.append(line.strip())
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        assert proc.stdout is not None
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", proc.stdout.readline())
        assert found, seen
        socket.create_connection(("127.0.0.1", int(found[1])), timeout=10).close()
        wait_for_line(lines, until)
        return seen
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_the_tournament_file_asks_for_tls_and_the_classroom_example_does(tmp_path: Path) -> None:
    classroom = load_config(ROOT / "tournaments" / "examples" / "classroom.toml")
    assert classroom.tls == TLSRequest(self_signed=True)
    (tmp_path / "c.pem").write_text("x")
    (tmp_path / "k.pem").write_text("x")
    base = 'name = "t"\ntable_size = 2\n[[bots]]\nname = "a"\nbuiltin = "random"\n[[bots]]\nname = "b"\nbuiltin = "random"\n'
    own = parse_config('tls_cert = "c.pem"\ntls_key = "k.pem"\n' + base, "t.toml", tmp_path)
    assert own.tls == TLSRequest(cert=str(tmp_path / "c.pem"), key=str(tmp_path / "k.pem"))
    with pytest.raises(Exception, match=r"t\.toml:1: tls_cert: tls_cert needs tls_key too"):
        parse_config('tls_cert = "c.pem"\n' + base, "t.toml", tmp_path)
    with pytest.raises(Exception, match=r"t\.toml:1: tls: tls = 'yes': expected self-signed or off"):
        parse_config('tls = "yes"\n' + base, "t.toml", tmp_path)


def test_the_command_line_tls_options_override_the_files() -> None:
    """(A worker's --tls is refused since nothing reaches a worker's referee: test_workers.)"""
    from server.cli.tournament import _with_address

    classroom = load_config(ROOT / "tournaments" / "examples" / "classroom.toml")
    given = argparse.Namespace(address=None, tls="off", tls_cert=None, tls_key=None)
    assert _with_address(classroom, given).tls == TLSRequest()
    given.tls = None
    assert _with_address(classroom, given).tls == TLSRequest(self_signed=True)  # (the file's, when nothing is said)


def test_a_tournament_over_tls_is_played_by_kit_bots_given_its_certificate(tmp_path: Path) -> None:
    """The classroom's way: the file says tls = "self-signed", the referee says where the
    certificate is and its fingerprint, the students' bots connect with it."""
    need_node()
    from server.storage.store import Store
    from tests.tournaments.test_remote_bots import TOKENS, craits, remote_file

    file = remote_file(tmp_path)
    file.write_text(file.read_text().replace('address = "127.0.0.1:0"\n', 'address = "127.0.0.1:0"\ntls = "self-signed"\n'))
    out = tmp_path / "out"
    with craits("tournament", "run", str(file), "--out", str(out), "--no-progress") as (proc, lines):
        made = wait_for_line(lines, r"TLS: self-signed certificate (\S+) \(made now\), SHA-256 ([0-9A-F:]{95});")
        listening = wait_for_line(lines, r"referee listening on (127\.0\.0\.1:\d+) \(this machine only\), over TLS; "
                                         r"alice, bob connect")
        bots = [start_bot(command, "-q", env={"CRAITS_SERVER": f"grpcs://{listening[1]}", "CRAITS_TLS_CA": made[1],
                                               "CRAITS_TOKEN": TOKENS[name], "CRAITS_BOT_NAME": name})
                for name, command in (("alice", PY_RANDOM), ("bob", JS_RANDOM))]
        proc.wait(timeout=120)
        outcomes = [finish(bot) for bot in bots]  # (their streams end with the tournament)
    assert proc.returncode == 0, "".join(lines.queue)
    assert [code for code, _ in outcomes] == [0, 0], outcomes
    assert Path(made[1]) == out / "tls" / "referee-cert.pem"
    assert load_pair(Path(made[1]), out / "tls" / "referee-key.pem").fingerprint == made[2]
    with Store(out / Store.FILENAME) as store:
        results = store.results()
    assert len(results) == 3 and {seat.status for result in results for seat in result.seats} == {"ok"}


def test_a_launched_bot_that_could_read_the_referees_key_is_refused(tmp_path: Path) -> None:
    from server.cli.tournament_shared import _check_key_unseen
    from server.errors import UserError

    (tmp_path / "bot").mkdir()
    (tmp_path / "cert.pem").write_text("x")
    (tmp_path / "key.pem").write_text("x")
    text = ('name = "t"\ntable_size = 2\ntls_cert = "cert.pem"\ntls_key = "key.pem"\n'
            '[[bots]]\nname = "a"\nbuiltin = "random"\n[[bots]]\nname = "mine"\ncommand = ["python3", "-c", "0"]\n')
    beside = parse_config(text, "t.toml", tmp_path)  # (its cwd: the file's folder, where the key is)
    with pytest.raises(UserError, match=r"bot 'mine' could read the referee's TLS key .*key\.pem"):
        _check_key_unseen(beside)
    _check_key_unseen(parse_config(text.replace('command = ', 'cwd = "bot"\ncommand = '), "t.toml", tmp_path))
    _check_key_unseen(dataclasses.replace(beside, sandbox="none"))  # (trusted bots read all of yours anyway)
