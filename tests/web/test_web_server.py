"""The web server without a browser: a reader that never reads, the delayed full view, the
public view of a game, bad addresses and a folder that is no tournament."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from server.engine import make_config
from server.storage.replay import load_records, record_game
from server.storage.store import Store
from server.web import app
from server.web import live as live_module
from server.web.app import WebOptions, WebServer
from server.web.board import Board, folder_source
from server.web.live import LiveHub, public_records
from tests.cli import run_cli
from tests.recorded import play_recorded
from tests.tournaments.configs import builtin_tournament
from tests.web.conftest import start_craits, tournament_file


def _play(path: Path, game_id: str, pause_every: int = 0, pause_s: float = 0.0, seed: int = 3) -> int:
    """A whole game, recorded (so tapped when a hub is installed); its decisions."""
    return play_recorded(path, game_id, seed=seed, pause_every=pause_every, pause_s=pause_s).decisions


@contextlib.asynccontextmanager
async def served(**options: Any) -> AsyncIterator[tuple[LiveHub, WebServer, int]]:
    """A web server on a free port of 127.0.0.1 with its hub (no store)."""
    hub = LiveHub(linger_s=5.0)
    web = WebServer(hub, None, WebOptions(port=0, **options), title="test")
    url = await web.start()
    try:
        yield hub, web, int(url.rstrip("/").rsplit(":", 1)[1])
    finally:
        await web.stop()


async def _open(port: int, path: str, *, rcvbuf: int | None = None, headers: str = ""
                ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    await writer.drain()
    return reader, writer


async def _read_all(reader: asyncio.StreamReader, timeout: float = 60.0) -> str:
    out = b""
    while b"event: end" not in out:
        chunk = await asyncio.wait_for(reader.read(1 << 16), timeout)
        if not chunk:
            break
        out += chunk
    return out.decode()


def _expand(a: list[Any]) -> dict[str, Any]:
    """A decision in the compact form as a record (what the spectator page does, docs/web.md)."""
    keys = ("n", "hand", "seat", "kind", "action", "text", "status", "think_us", "transport_us", "events")
    record = {"type": "decision", **dict(zip(keys, a, strict=False))}
    if len(a) > len(keys):
        record["hand_results"] = a[len(keys)]
    return record


async def _inflated(reader: asyncio.StreamReader, timeout: float = 60.0) -> str:
    """A whole deflated response: its chunks put together, inflated as a zlib stream (whose
    checksum is checked at its end)."""
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)).decode().lower()
    assert "content-encoding: deflate" in head and "transfer-encoding: chunked" in head, head
    body = b""
    while True:
        size = int((await asyncio.wait_for(reader.readline(), timeout)).strip(), 16)
        chunk = await asyncio.wait_for(reader.readexactly(size + 2), timeout)
        if size == 0:
            break
        body += chunk[:-2]
    inflater = zlib.decompressobj()
    text = inflater.decompress(body) + inflater.flush()
    assert inflater.eof and not inflater.unused_data, "one complete zlib stream, its checksum right"
    return text.decode()


def _records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {\"")]


async def _wait_live(hub: LiveHub, game_id: str) -> None:
    for _ in range(400):
        if game_id in hub.games:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{game_id} never went live")


def test_a_spectator_that_never_reads_is_dropped_and_the_game_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loopback's kernel buffers would hold a whole game: the server's socket buffer of the
    first stream (the one that never reads) is made small, as on a slow network, so what it
    leaves unread piles up in its transport."""
    opened = app.open_stream
    streams: list[Any] = []

    async def small_buffers(request: Any, headers: Any) -> Any:
        response, reader = await opened(request, headers)
        streams.append(reader)
        if reader is not None and len(streams) == 1:
            reader.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        return response, reader

    monkeypatch.setattr(app, "open_stream", small_buffers)
    asyncio.run(_never_reads(tmp_path))


async def _never_reads(tmp_path: Path) -> None:
    async with served(max_buffer=32 * 1024) as (hub, web, port):
        with hub.installed():
            game = asyncio.create_task(asyncio.to_thread(_play, tmp_path / "g1.jsonl", "g1", 50, 0.01))
        await _wait_live(hub, "g1")
        stalled = await _open(port, "/api/games/g1/events", rcvbuf=4096)  # never read
        for _ in range(500):
            if web.spectators:
                break
            await asyncio.sleep(0.01)
        reader, writer = await _open(port, "/api/games/g1/events")
        started = time.monotonic()
        text, decisions = await asyncio.gather(_read_all(reader), game)
        assert time.monotonic() - started < 30
        received = _records(text)
        assert [r["type"] for r in received[:2]] == ["header", "start"] and received[-1]["type"] == "result"
        assert len(received) == decisions + 3, "the reader got every record once"
        for _ in range(200):
            if web.dropped:
                break
            await asyncio.sleep(0.02)
        assert web.dropped == 1, "the reader that never read was dropped"
        assert (tmp_path / "g1.jsonl").is_file(), "the game finished and its replay was written"
        for _, w in (stalled, (reader, writer)):
            w.close()


def test_the_public_view_hides_every_card_it_must_and_the_full_view_waits(tmp_path: Path) -> None:
    asyncio.run(_views(tmp_path))


async def _views(tmp_path: Path) -> None:
    async with served(reveal_after=0.6) as (hub, _web, port):
        with hub.installed():
            game = asyncio.create_task(asyncio.to_thread(_play, tmp_path / "g2.jsonl", "g2", 20, 0.01))
        await _wait_live(hub, "g2")
        opened = time.monotonic()
        public_reader, public_writer = await _open(port, "/api/games/g2/events")
        full_reader, full_writer = await _open(port, "/api/games/g2/events?view=full")
        compact_reader, compact_writer = await _open(port, "/api/games/g2/events?form=compact")
        packed_reader, packed_writer = await _open(port, "/api/games/g2/events?form=compact",
                                                   headers="Accept-Encoding: gzip, deflate, br\r\n")
        packed_text = asyncio.create_task(_inflated(packed_reader))
        await asyncio.sleep(0.3)  # a reader who joins mid-game, from its record 5
        late_reader, late_writer = await _open(port, "/api/games/g2/events?from=5",
                                               headers="Accept-Encoding: deflate\r\n")
        late_text = asyncio.create_task(_inflated(late_reader))
        first_full = asyncio.create_task(full_reader.readuntil(b"event: record"))
        public_text = await _read_all(public_reader)
        compact_text = await _read_all(compact_reader)
        await first_full
        assert time.monotonic() - opened >= 0.5, "the full view shows a record reveal_after seconds after it happened"
        full_text = (await _read_all(full_reader)).replace("\r\n", "\n")
        await game
        replay = load_records(tmp_path / "g2.jsonl")
        public = _records(public_text)
        assert public == [r for r in public_records(replay) if r["type"] != "result"] + [public[-1]]
        assert "seed" not in public[0] and all("legal" not in r for r in public)
        dealt = [e for r in public for e in r.get("events", ()) if e[0] in ("deal", "draw") and e[2]]
        assert dealt and all(code == -1 for e in dealt for code in e[2])
        full = _records(full_text)
        assert any(code >= 0 for r in full for e in r.get("events", ()) if e[0] == "deal" for code in e[2])
        compact = [_expand(json.loads(line[6:])) if line.startswith("data: [") else json.loads(line[6:])
                   for line in compact_text.splitlines() if line.startswith(("data: [", 'data: {"'))]
        assert compact == public, "the compact form holds the same records"
        assert len(compact_text) < 0.6 * len(public_text)
        packed = [_expand(json.loads(line[6:])) if line.startswith("data: [") else json.loads(line[6:])
                  for line in (await packed_text).splitlines() if line.startswith(("data: [", 'data: {"'))]
        assert packed == public, "deflated, the same records"
        assert _records(await late_text) == public[5:], "a late reader's own zlib stream, from its record"
        for w in (compact_writer, public_writer, packed_writer, late_writer):
            w.close()
        full_writer.close()


def test_a_game_that_ends_as_the_server_stops_still_ends_on_its_spectators_pages(tmp_path: Path) -> None:
    """The last game of a run ends, and ``--web`` stops with the run before its next tick: the
    spectators get the game's last moves and its end (a delayed full view too), not a
    connection that drops mid-game and a page that keeps saying "live"."""
    asyncio.run(_ends_with_the_server(tmp_path))


async def _ends_with_the_server(tmp_path: Path) -> None:
    hub = LiveHub(linger_s=5.0)
    web = WebServer(hub, None, WebOptions(port=0, tick_s=3600.0, reveal_after=600.0), title="test")  # (no tick)
    port = int((await web.start()).rstrip("/").rsplit(":", 1)[1])
    try:
        with hub.installed():
            game = asyncio.create_task(asyncio.to_thread(_play, tmp_path / "g5.jsonl", "g5", 20, 0.01))
        await _wait_live(hub, "g5")
        public_reader, public_writer = await _open(port, "/api/games/g5/events")
        full_reader, full_writer = await _open(port, "/api/games/g5/events?view=full")
        for _ in range(500):
            if web.spectators == 2:
                break
            await asyncio.sleep(0.01)
        decisions = await game
    finally:
        await web.stop()
    public = _records(await _read_all(public_reader, 10.0))
    full = _records(await _read_all(full_reader, 10.0))
    for records in (public, full):
        assert records[0]["type"] == "header" and records[-1]["type"] == "result"
        assert sum(r["type"] == "decision" for r in records) == decisions
    for w in (public_writer, full_writer):
        w.close()


def test_only_the_latest_ended_games_keep_their_records_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fast bots end several games a second, each game's records megabytes: past LINGER_KEPT
    ended games the oldest leave the hub at once, not after linger_s (their replays serve
    them), and the list of finished games still names every one."""
    monkeypatch.setattr(live_module, "LINGER_KEPT", 2)
    asyncio.run(_many_ended(tmp_path))


async def _many_ended(tmp_path: Path) -> None:
    hub = LiveHub(linger_s=600.0)
    with hub.installed():
        for i in range(4):
            await asyncio.to_thread(_play, tmp_path / f"g{i}.jsonl", f"g{i}")
    for _ in range(400):  # (each end reaches the hub on its loop)
        if len(hub.finished) == 4:
            break
        await asyncio.sleep(0.01)
    assert [g["game_id"] for g in hub.finished] == ["g0", "g1", "g2", "g3"]
    assert list(hub.games) == ["g2", "g3"] and all(g.over for g in hub.games.values())


def test_a_game_nobody_knows_is_a_404_and_the_full_view_needs_reveal_after(tmp_path: Path) -> None:
    asyncio.run(_statuses(tmp_path))


async def _statuses(tmp_path: Path) -> None:
    async with served() as (hub, _web, port):
            with hub.installed():
                await asyncio.to_thread(record_game, tmp_path / "g3.jsonl", make_config("crazy-eights", 2), 1,
                                        game_id="g3")
            for path, status in (("/api/games/nope/events", b"404"), ("/games/nope", b"404"), ("/bots/nobody", b"404"),
                                 ("/api/games/g3/events?view=full", b"403"), ("/api/games/g3", b"200")):
                reader, writer = await _open(port, path)
                line = await reader.readline()
                assert status in line, (path, line)
                writer.close()


# --------------------------------------------------------------------------- the command line


def _craits(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_a_busy_port_is_one_line_and_nothing_is_started(tmp_path: Path) -> None:
    config = tournament_file(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _craits("tournament", "run", str(config), "--out", str(tmp_path / "out"), "--web", f"127.0.0.1:{port}",
                       cwd=tmp_path)
    assert done.returncode == 2
    assert f"127.0.0.1:{port}: the port is in use" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists(), "nothing was created"
    bad = _craits("tournament", "run", str(config), "--web", "here:port", cwd=tmp_path)
    assert bad.returncode == 2 and "expected HOST:PORT" in bad.stderr
    alone = _craits("tournament", "run", str(config), "--reveal-after", "5", cwd=tmp_path)
    assert alone.returncode == 2 and "--reveal-after goes with --web" in alone.stderr


def test_craits_web_on_a_folder_without_a_tournament_is_one_line(tmp_path: Path) -> None:
    done = _craits("web", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert "no tournament.db here" in done.stderr and "Traceback" not in done.stderr
    missing = _craits("web", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    (tmp_path / "tournament.db").write_text("not a database\n")
    damaged = _craits("web", str(tmp_path), cwd=tmp_path)
    assert damaged.returncode == 2
    assert damaged.stderr == f"craits: error: {tmp_path / 'tournament.db'}: not a usable tournament database " \
        "(file is not a database)\n"


def test_a_damaged_or_missing_replay_is_a_page_that_says_so_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay cut short, or deleted while ``craits web`` serves its folder: its game's page and
    stream say what is wrong (one log line, no traceback), and the other games are served."""
    file = tmp_path / "cut.toml"
    file.write_text(builtin_tournament("cut", 4, 1, {"a": "random", "b": "first", "c": "random"}), encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(out), "--no-progress")[0] == 0
    replays = sorted((out / "replays").glob("*.jsonl.gz"))
    cut, gone, whole = (r.name.removesuffix(".jsonl.gz") for r in replays[:3])
    replays[0].write_bytes(replays[0].read_bytes()[:300])

    def refused(path: str) -> tuple[int, str]:
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(running.url + path.lstrip("/"), timeout=10)
        return failed.value.code, failed.value.read().decode()

    running = start_craits(["web", str(out), "--address", "127.0.0.1:0"], tmp_path)
    try:
        for path in (f"/games/{cut}", f"/api/games/{cut}/events"):
            code, body = refused(path)
            assert code == 500 and "replay cannot be read: record" in body and "truncated" in body, (path, body)
        replays[1].unlink()
        code, body = refused(f"/games/{gone}")  # (before or after the board has seen it go)
        assert (code, "no such file" in body or "has no replay" in body) in ((500, True), (404, True)), body
        assert running.status(f"/games/{whole}") == 200
    finally:
        assert running.stop() == 0
    output = "".join(running.lines)
    assert "Traceback" not in output and "Error handling request" not in output, output
    warned = [json.loads(line) for line in running.lines if "web_replay_unreadable" in line]
    assert warned and warned[0]["level"] == "warning" and cut in warned[0]["error"], output
    assert "debug" not in output, "craits web's events are those of every command: warnings off a terminal"


def test_craits_serve_with_web_lists_the_games_it_played(tmp_path: Path) -> None:
    running = start_craits(
        ["serve", "--address", "127.0.0.1:0", "--bot", "random", "--bot", "first", "--preset", "crazy-eights",
         "--replays", str(tmp_path / "replays"), "--log-dir", str(tmp_path / "logs"), "--web", "127.0.0.1:0"],
        tmp_path,
    )
    try:
        recorded = running.wait_for("three games played", lambda: running.get("/api/games")["recorded"][2:])
        progress = running.get("/api/progress")
        assert progress["kind"] == "server" and progress["done"] >= 3
        game = recorded[0]
        assert game["replay"] is True and game["bots"] == ["random", "first"]
        assert running.status(f"/games/{game['game_id']}") == 200
        assert running.status(f"/api/games/{game['game_id']}/replay") == 200
    finally:
        assert running.stop() == 0


def test_a_ladder_with_web_shows_its_ratings(tmp_path: Path) -> None:
    config = tmp_path / "ladder.toml"
    config.write_text(
        'name = "webladder"\ntable_size = 2\npreset = "crazy-eights"\nseed = 3\nconcurrency = 1\n'
        + "".join(f'[[bots]]\nname = "{b}"\nbuiltin = "{p}"\n' for b, p in (("r1", "random"), ("f1", "first"),
                                                                           ("g1", "greedy"))),
        encoding="utf-8",
    )
    running = start_craits(
        ["ladder", "run", str(config), "--out", str(tmp_path / "out"), "--web", "127.0.0.1:0"], tmp_path
    )
    try:
        running.wait_for("a few rounds", lambda: running.get("/api/progress")["done"] >= 6)
        progress = running.get("/api/progress")
        assert progress["kind"] == "ladder" and progress["name"] == "webladder"
        standings = running.get("/api/standings")
        assert {row["bot"] for row in standings["standings"]} == {"r1", "f1", "g1"}
        bot = running.get("/api/bots/g1")
        assert bot["ratings"] and len(bot["ratings"]) == bot["standing"]["games"]
    finally:
        assert running.stop() == 0


def test_the_games_a_referee_worker_plays_are_live_too(tmp_path: Path) -> None:
    """Two games at a time: one in the tournament's process, one in a referee worker process.
    Both are listed live at once, and each one's stream, followed to its end, holds every
    decision its replay holds (the worker relays what its replay writer tells its tap)."""
    import urllib.request

    config = tournament_file(tmp_path, deals=1, name="relaycup")
    running = start_craits(["tournament", "run", str(config), "--out", str(tmp_path / "out"), "--web", "127.0.0.1:0",
                            "--no-progress"], tmp_path)
    try:
        both = running.wait_for("two games live at once", lambda: (
            live := running.get("/api/games")["live"]) and len(live) == 2 and live)
        def follow(game_id: str) -> str:
            with urllib.request.urlopen(f"{running.url}api/games/{game_id}/events", timeout=120) as response:
                return response.read().decode()

        # Both streams followed at once, while their games play: one after the other, the second
        # could still be read when the tournament's last games end and the web server with them.
        ids = [game["game_id"] for game in both]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            texts = dict(zip(ids, pool.map(follow, ids), strict=True))
        for game_id, text in texts.items():
            assert "event: end" in text, text[-300:]
            records = _records(text)
            assert records[0]["type"] == "header" and records[0]["game_id"] == game_id
            assert records[-1]["type"] == "result", records[-1]
            replay = running.wait_for(f"{game_id}'s replay", lambda game_id=game_id: (
                path := tmp_path / "out" / "replays" / f"{game_id}.jsonl.gz").is_file() and path)
            decisions = [r for r in load_records(replay) if r["type"] == "decision"]
            streamed = [r for r in records if r["type"] == "decision"]
            assert [(r["n"], r["seat"], r["action"]) for r in streamed] == [
                (r["n"], r["seat"], r["action"]) for r in decisions]
        assert running.process.wait(timeout=120) == 0, "".join(running.lines[-20:])
    finally:
        running.stop()
    log = (tmp_path / "out" / "referee.jsonl").read_text()
    assert '"event": "referee_worker_ready"' in log  # (one of the two was a worker's)


def test_craits_web_writes_its_log_under_the_log_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Like every long-running command, ``craits web`` keeps its events in ``<log-dir>/web.jsonl``
    (default ``logs/``): here a replay it could not read, which a terminal shows only in passing."""
    file = tmp_path / "logged.toml"
    file.write_text(builtin_tournament("logged", 4, 1, {"a": "random", "b": "first", "c": "random"}), encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(out), "--no-progress")[0] == 0
    replay = sorted((out / "replays").glob("*.jsonl.gz"))[0]
    replay.write_bytes(replay.read_bytes()[:300])
    running = start_craits(["web", str(out), "--address", "127.0.0.1:0", "--log-dir", str(tmp_path / "weblogs")],
                           tmp_path)
    try:
        assert running.status(f"/games/{replay.name.removesuffix('.jsonl.gz')}") == 500
    finally:
        assert running.stop() == 0
    events = [json.loads(line) for line in (tmp_path / "weblogs" / "web.jsonl").read_text().splitlines()]
    assert [e for e in events if e["event"] == "web_replay_unreadable"], events
    (tmp_path / "afile").write_text("")
    refused = _craits("web", str(out), "--log-dir", str(tmp_path / "afile"), cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr == (
        f"craits: error: --log-dir {tmp_path / 'afile'}: cannot write the log there: File exists: {tmp_path / 'afile'}\n")


def _first_event(url: str, kind: str) -> Any:
    """The data of the board stream's first ``kind`` event."""
    with urllib.request.urlopen(url + "api/stream", timeout=60) as response:
        current = ""
        while line := response.readline().decode():
            if line.startswith("event: "):
                current = line[7:].strip()
            elif line.startswith("data: ") and current == kind:
                return json.loads(line[6:])
    raise AssertionError(f"the stream ended without a {kind!r} event")


def test_the_board_leaves_the_head_to_head_to_the_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The board's page and stream carry every bot's row but not the head to head: no page
    shows it, and it has bots x bots entries (half a megabyte at 100 bots, sent again to every
    browser at every game). ``/api/standings`` keeps it, as ``standings.json`` has it."""
    file = tmp_path / "h2h.toml"
    file.write_text(builtin_tournament("h2h", 4, 1, {"a": "random", "b": "first", "c": "random"}), encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(out), "--no-progress")[0] == 0
    running = start_craits(["web", str(out), "--address", "127.0.0.1:0"], tmp_path)
    try:
        document = running.get("/api/standings")
        with urllib.request.urlopen(running.url, timeout=10) as response:
            page = response.read().decode()
        streamed = _first_event(running.url, "standings")
    finally:
        assert running.stop() == 0
    written = json.loads((out / "standings.json").read_text())
    assert document["head_to_head"] == written["head_to_head"] and set(document["head_to_head"]) == {"a", "b", "c"}
    assert "head_to_head" not in streamed and '"head_to_head"' not in page
    assert streamed["standings"] == document["standings"] and {row["bot"] for row in streamed["standings"]} == {
        "a", "b", "c"}


def test_the_games_page_shows_the_newest_games_a_page_at_a_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ladder that has run for weeks has a hundred thousand games: /games shows them newest
    first, a page at a time (here 4 of the 9), with links to the newer and older pages."""
    file = tmp_path / "pages.toml"
    file.write_text(builtin_tournament("pages", 4, 3, {"a": "random", "b": "first", "c": "random"}), encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli(capsys, "tournament", "run", str(file), "--out", str(out), "--no-progress")[0] == 0
    monkeypatch.setattr(app, "GAMES_PER_PAGE", 4)
    asyncio.run(_pages(out))


async def _pages(out: Path) -> None:
    with Store(out / Store.FILENAME) as store:
        recorded = [r.game_id for r in store.results()][::-1]  # (newest first)
    web = WebServer(LiveHub(), Board(folder_source(out)), WebOptions(port=0), title="test")
    url = await web.start()

    def shown(query: str) -> tuple[list[str], str]:
        with urllib.request.urlopen(f"{url}games{query}", timeout=10) as response:
            page = response.read().decode()
        data = json.loads(page.split('<script type="application/json" id="board-data">')[1].split("</script>")[0])
        return [g["game_id"] for g in data["games"]], page

    try:
        pages = {query: await asyncio.to_thread(shown, query) for query in ("", "?page=2", "?page=3", "?page=99",
                                                                            "?page=x")}
    finally:
        await web.stop()
    assert len(recorded) == 9
    first, page = pages[""]
    assert first == recorded[:4] and "games 1 to 4 of 9" in page and 'id="older" href="/games?page=2"' in page
    assert 'id="newer"' not in page
    assert pages["?page=2"][0] == recorded[4:8] and 'href="/games?page=1">newer' in pages["?page=2"][1]
    assert pages["?page=3"][0] == recorded[8:] and 'id="older"' not in pages["?page=3"][1]
    assert "games 9 to 9 of 9" in pages["?page=3"][1]
    assert pages["?page=99"][0] == recorded[8:] and pages["?page=x"][0] == first
