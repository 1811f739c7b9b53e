"""The live pages in Debian's chromium, against a tournament the real referee is playing.

The tournament (three slow bot processes, ``--web``) runs while the tests look at it: the
leaderboard must change without a reload, a live game must advance move by move, and a
spectator must never see a hidden card, neither on the page nor in the raw event stream.
A screenshot of each page is kept under logs/test-artifacts/web/.

Needs Debian's chromium and the Python package playwright, as the replay viewer's test does.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server.storage.replay import load_records
from tests.web.conftest import ARTIFACTS, Running, start_craits, tournament_file

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("the browser tests need Debian's chromium: `apt-get install -y chromium` (`make test-deps`)",
                pytrace=False)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need the Python package playwright: `pip install playwright`", pytrace=False)
    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """Six games of three slow bots through the referee, two at a time, served with --web."""
    folder = tmp_path_factory.mktemp("webcup")
    config = tournament_file(folder, deals=2, delay=0.012)
    running = start_craits(
        ["tournament", "run", str(config), "--out", str(folder / "out"), "--web", "127.0.0.1:0", "--no-progress"],
        folder,
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that fails the test on any script error."""
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    errors: list[str] = []
    tab = context.new_page()
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" and "404" not in m.text else None)
    yield tab
    context.close()
    assert errors == [], f"script errors: {errors}"


def _until(page: Any, condition: str, timeout_s: float = 60.0) -> Any:
    """Poll a JS expression (the pages' CSP forbids the eval wait_for_function uses)."""
    for _ in range(int(timeout_s / 0.05)):
        value = page.evaluate(f"() => {condition}")
        if value:
            return value
        page.wait_for_timeout(50)
    raise AssertionError(f"never became true: {condition}")


def _shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    assert path.stat().st_size > 10_000
    return path


def _sse_records(url: str, seconds: float) -> tuple[list[dict[str, Any]], str]:
    """The records a spectator's stream carries in ``seconds`` (or to its end), and the raw text."""
    raw: list[str] = []
    with urllib.request.urlopen(url, timeout=seconds + 5) as response:
        import time

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            line = response.readline().decode()
            if not line:
                break
            raw.append(line)
            if line.startswith("event: end"):
                break
    records = [json.loads(line[6:]) for line in raw if line.startswith("data: ") and line[6:].strip() != "{}"]
    return records, "".join(raw)


# --------------------------------------------------------------------------- a live game


def _watchable(live: Running) -> dict[str, Any] | None:
    """A live game far from its end, with games still to start after it: the run (and its
    web server) goes on after it ends, and the test can still ask for its stream then."""
    games = live.get("/api/games")["live"]
    progress = live.get("/api/progress")
    if not progress or progress["total"] - progress["done"] - len(games) < 3:  # (done is read every 0.5 s)
        return None
    return next((g for g in games if 5 < g["decisions"] < 100), None)


def test_a_live_game_advances_and_shows_no_hidden_card(live: Running, page: Any) -> None:
    game = live.wait_for("a live game under way, far from its end and from the tournament's", lambda: _watchable(live))
    game_id = game["game_id"]
    page.goto(f"{live.url}games/{game_id}")
    _until(page, "window.craitsViewer !== undefined")
    assert page.inner_text("#live-badge") == "live"
    first = page.evaluate("() => craitsViewer.decisions")
    _until(page, f"craitsViewer.decisions > {first} + 3", 60)
    # On the page: every seat's cards are backs (a spectator owns no seat).
    hands = page.evaluate(
        "() => [...document.querySelectorAll('.seat .hand')].map(h => [...h.querySelectorAll('.card')]"
        ".map(c => c.dataset.card || 'back'))"
    )
    assert any(hands), "some cards are in hands"
    assert all(card == "back" for hand in hands for card in hand), hands
    log = page.inner_text("#events")
    assert "is dealt" in log and " is dealt 7" not in log.replace("7 cards", "")  # counts, never cards
    _shot(page, "live-game")

    # In the raw stream: no card of a deal or a draw, no seed.
    records, raw = _sse_records(f"{live.url}api/games/{game_id}/events", 2.0)
    assert records[0]["type"] == "header" and "seed" not in records[0]
    assert '"seed"' not in raw and '"legal"' not in raw
    hidden = [e for r in records for e in r.get("events", ()) if e[0] in ("deal", "draw") and e[2]]
    assert hidden and all(code == -1 for e in hidden for code in e[2])
    assert all(r.get("status") != "auto" for r in records if r["type"] == "decision")

    # The game ends: the page says so; the replay holds the cards that were hidden.
    _until(page, "document.body.dataset.live === 'over'", 120)
    sizes = page.evaluate(
        "() => performance.getEntriesByType('resource').filter(e => e.name.includes('/events'))"
        ".map(e => [e.encodedBodySize, e.decodedBodySize])"
    )
    # (a response the page closed on its end event before the last bytes had arrived counts as
    # aborted: 0 and 0; the whole stream asked for again, the game over, arrives in one go)
    assert all(decoded > 3 * encoded > 0 for encoded, decoded in sizes if decoded), f"the stream came deflated: {sizes}"
    again = page.evaluate(
        "async url => { const r = await fetch(url); const text = await r.text(); await new Promise(f => setTimeout(f, 200));"
        " const e = performance.getEntriesByName(r.url).pop();"
        " return [r.headers.get('content-encoding'), text.length, e ? e.encodedBodySize : -1]; }",
        f"{live.url}api/games/{game_id}/events?form=compact",
    )
    assert again[0] == "deflate" and again[1] > 3 * again[2] > 0, f"chromium gets the stream deflated: {again}"
    recorded = live.wait_for("the game recorded", lambda: game_id in {g["game_id"] for g in live.get("/api/games")["recorded"]})
    assert recorded
    replay = next(live.out_dir.glob(f"replays/{game_id}.jsonl.gz"))
    dealt = [e for r in load_records(replay) for e in r.get("events", ()) if e[0] == "deal"]
    assert dealt and all(code >= 0 for e in dealt for code in e[2])


# --------------------------------------------------------------------------- the board


def test_the_leaderboard_changes_while_the_tournament_plays(page: Any, live: Running) -> None:
    page.goto(live.url)
    _until(page, "document.querySelector('#standings tbody tr') !== null")
    before = int(page.get_attribute("#standings", "data-recorded") or 0)
    games_before = page.eval_on_selector_all("#standings tbody tr", "rows => rows.map(r => r.dataset.games)")
    assert before < 6, "the tournament is still playing"
    _until(page, "document.querySelector('#conn').className === 'conn on'")
    page.evaluate("() => { window.notReloaded = true; }")
    _until(page, f"Number(document.querySelector('#standings').dataset.recorded) > {before}", 90)
    assert page.evaluate("() => window.notReloaded === true"), "the page changed without a reload"
    games_after = page.eval_on_selector_all("#standings tbody tr", "rows => rows.map(r => r.dataset.games)")
    assert games_after != games_before
    progress = page.inner_text("#progress-text")
    assert "/ 6 games" in progress
    # (still on after the update, unless that update was the last game's: the run over, it says
    # done, and its server is gone: what the page shows is all there is to ask)
    conn = page.get_attribute("#conn", "class")
    assert conn == "conn on" or (conn == "conn done" and page.get_attribute("#standings", "data-recorded") == "6"), conn
    _shot(page, "board")

    # The run ends, and its web server with it: the page shows the finished tournament and says
    # the server has stopped (no endless reconnecting, no error in the console).
    assert live.process.wait(timeout=240) == 0, "".join(live.lines[-20:])
    _until(page, "document.body.dataset.server === 'stopped'", 10)
    assert page.get_attribute("#conn", "class") == "conn done"
    assert page.inner_text("#progress-text").startswith("6 / 6 games") and "finished" in page.inner_text("#progress-text")
    assert page.get_attribute("#standings", "data-recorded") == "6"
    standings = json.loads((live.out_dir / "standings.json").read_text(encoding="utf-8"))  # (what the board served)
    assert standings["tournament"] == "webcup" and len(standings["standings"]) == 3
    assert all(row["issues"]["default_actions"] == 0 for row in standings["standings"]), "the bots played"


@pytest.fixture(scope="module")
def finished(live: Running) -> Iterator[Running]:
    """``craits web`` on the tournament's folder once it is over (its run stops serving then)."""
    assert live.process.wait(timeout=240) == 0, "".join(live.lines[-20:])
    assert "web: the board" in "".join(live.lines)
    served = start_craits(["web", str(live.out_dir), "--address", "127.0.0.1:0"], live.out_dir)
    try:
        yield served
    finally:
        assert served.stop() == 0


def test_a_finished_game_is_its_replay(finished: Running, page: Any) -> None:
    assert finished.get("/api/progress")["finished"] is True
    game_id = finished.get("/api/games")["recorded"][0]["game_id"]
    info = finished.get(f"/api/games/{game_id}")
    assert info["state"] == "recorded" and info["full_replay"] is True
    page.goto(f"{finished.url}games/{game_id}")
    _until(page, "window.craitsViewer !== undefined")
    page.keyboard.press("End")
    assert page.evaluate("() => craitsViewer.decisions") > 10
    assert "Game over" in page.inner_text("#banner")
    page.evaluate("() => craitsViewer.gotoDecision(1)")
    cards = page.eval_on_selector_all(".seat .hand .card", "cs => cs.map(c => c.dataset.card || 'back')")
    assert cards and "back" not in cards, "the whole replay shows every hand"
    _shot(page, "replay")


# --------------------------------------------------------------------------- the other pages


def test_the_bot_page_games_page_and_a_404(finished: Running, page: Any) -> None:
    live = finished
    page.goto(f"{live.url}bots/ann")
    assert page.inner_text("#bot-name") == "ann"
    points = int(page.get_attribute("#rating-plot", "data-points") or 0)
    assert points >= 1
    assert page.eval_on_selector_all("#bot-games tbody a", "links => links.length") == points
    _shot(page, "bot")
    page.click("#bot-games tbody a")
    _until(page, "window.craitsViewer !== undefined")
    page.goto(f"{live.url}games")
    _until(page, "document.querySelector('#recent tbody a') !== null")
    _shot(page, "games")
    response = page.goto(f"{live.url}games/no-such-game")
    assert response is not None and response.status == 404
    assert "no-such-game" in page.inner_text("main")
    _shot(page, "not-found")
    assert live.status("/bots/nobody") == 404
    assert live.status("/api/games/no-such-game/events") == 404


# --------------------------------------------------------------------------- on PostgreSQL


@pytest.fixture(scope="module")
def live_pg(tmp_path_factory: pytest.TempPathFactory, pg_server: Any) -> Iterator[Running]:
    """Six games of three slow bots queued in PostgreSQL and played by the coordinator's own
    worker (one game at a time), served with --web."""
    folder = tmp_path_factory.mktemp("pgwebcup")
    config = tournament_file(folder, deals=2, delay=0.012, name="pgwebcup")
    running = start_craits(
        ["tournament", "run", str(config), "--store", pg_server.new_database(), "--local-workers", "1",
         "--out", str(folder / "out"), "--web", "127.0.0.1:0", "--no-progress"],
        folder,
    )
    try:
        yield running
    finally:
        running.stop()


def test_the_leaderboard_on_postgresql_changes_while_its_workers_play(page: Any, live_pg: Running) -> None:
    page.goto(live_pg.url)
    _until(page, "document.querySelector('#standings tbody tr') !== null")
    before = int(page.get_attribute("#standings", "data-recorded") or 0)
    assert before < 6, "the tournament is still playing"
    assert "shown live only by the process that plays them" in page.inner_text("#live-note")
    _until(page, "document.querySelector('#conn').className === 'conn on'")
    page.evaluate("() => { window.notReloaded = true; }")
    _until(page, "document.querySelector('#live tbody a') !== null", 90)  # this process's own game, live
    _until(page, f"Number(document.querySelector('#standings').dataset.recorded) > {before}", 90)
    assert page.evaluate("() => window.notReloaded === true"), "the page changed without a reload"
    assert "/ 6 games" in page.inner_text("#progress-text")
    conn = page.get_attribute("#conn", "class")  # (done only when that update was the last game's)
    assert conn == "conn on" or (conn == "conn done" and len(live_pg.get("/api/games")["recorded"]) == 6), conn
    standings = live_pg.get("/api/standings")
    assert standings["tournament"] == "pgwebcup" and len(standings["standings"]) == 3
    _shot(page, "board-postgresql")


@pytest.fixture(scope="module")
def adaptive_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """``craits web`` on an adaptive tournament of builtin bots, played in-process until its stop
    (greedy against random: a few dozen games) with every neighbour settled or tied."""
    import asyncio
    import concurrent.futures

    from tests.tournaments.configs import builtin_tournament
    from tournaments.adaptive import play_adaptive
    from tournaments.config import parse_config
    from tournaments.runner import local_runner, start_tournament

    folder = tmp_path_factory.mktemp("adaptive")
    text = builtin_tournament("steady", seed=2, deals=1, bots={"greedy": "greedy", "random": "random"},
                              table_size=2).replace("deals = 1\n", 'schedule = "adaptive"\nstop = "settled"\n')
    (folder / "steady.toml").write_text(text)
    config = parse_config(text, source=str(folder / "steady.toml"), base_dir=folder)
    out = folder / "out"

    def play() -> None:
        with start_tournament(config, text, str(folder / "steady.toml"), out) as store:
            asyncio.run(play_adaptive(config, store, out, local_runner, progress=False, pages=False))

    # (on a thread of its own: the browser's sync API may already run an event loop on this one)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(play).result()
    served = start_craits(["web", str(out), "--address", "127.0.0.1:0"], out)
    try:
        yield served
    finally:
        assert served.stop() == 0


def test_the_board_shows_which_neighbours_are_settled(adaptive_board: Running, page: Any) -> None:
    """The order valid at any time: each bot's interval, the verdict against the next, the stop."""
    standings = adaptive_board.get("/api/standings")
    assert standings["anytime"]["stop_met"] and standings["anytime"]["label"] == "valid at any time"
    page.goto(adaptive_board.url)
    _until(page, "document.querySelector('#order tbody tr') !== null")
    assert page.is_visible("#order-panel")
    assert page.get_attribute("#order tbody tr:first-child", "data-bot") == "greedy"
    assert page.get_attribute("#order tbody tr:first-child", "data-settled") == "yes"
    assert page.text_content("#order tbody tr:first-child td.verdict") == "ahead of random (sure)"
    assert "[" in page.text_content("#order tbody tr:first-child td:nth-child(3)")
    assert page.inner_text("#order-stop").startswith("stop = settled: met")
    assert "valid at any time" in page.inner_text("#order-legend")
    assert "all intervals here hold together, at every moment, with 95% confidence (one 5% budget for bots and pairs)" in page.inner_text("#order-legend")
    # one ranking: the rating's, with how sure each place is in words; no internal word unexplained
    assert page.inner_text("#standings tr[data-bot=greedy] td.sure-cell") == "ahead of random (sure)"
    assert not page.is_visible("#order")  # (the figures behind it, folded)
    shown = page.inner_text("main")
    assert "drifted" not in shown and "per deal" not in shown and "settled: better" not in shown
    _shot(page, "board-order")
