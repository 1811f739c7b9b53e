"""The HTML viewer in a real headless Chromium: what it shows must be what the engine says.

Needs Debian's chromium (``apt-get install -y chromium``) and the Python package
``playwright`` (no browser download: the test launches /usr/bin/chromium). Missing
either is a failure with the install command, never a skip.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server.engine import GameState, Suit, make_config, new_game
from server.storage.replay import ReplayWriter, convert_replay, read_replay, replay_state, simulate
from server.viewer.pages import (
    index_entry,
    write_game_page,
    write_html,
    write_index_html,
    write_shared_viewer,
)

pytestmark = pytest.mark.browser

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail(
        "the browser tests need Debian's chromium: run `apt-get update && apt-get install -y chromium` "
        "(as root; `make test-deps` does it)",
        pytrace=False,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the browser tests need the Python package playwright: `pip install playwright`", pytrace=False
        )
    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    """Open a file:// page; fail the test on any script error or any non-file request."""
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    errors: list[str] = []
    requests: list[str] = []

    def opener(path: Path) -> Any:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        _wait_until(page, "window.craitsViewer !== undefined || document.getElementById('games') !== null")
        return page

    yield opener
    context.close()
    assert errors == [], f"script errors: {errors}"
    remote = [u for u in requests if not u.startswith(("file:", "data:", "about:"))]
    assert remote == [], f"the page must not touch the network: {remote}"


def _wait_until(page: Any, condition: str, tries: int = 600) -> None:
    """Poll a JS condition from Python (the pages' CSP forbids the eval that
    ``wait_for_function`` uses); give up after ``tries`` polls 50 ms apart."""
    for _ in range(tries):
        if page.evaluate(f"() => Boolean({condition})"):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"never became true: {condition}")


def _page_for(tmp_path: Path, golden: str) -> Path:
    out = tmp_path / (golden + ".html")
    write_html(GOLDEN_DIR / f"{golden}.jsonl", out)
    return out


def _dom(page: Any) -> dict[str, Any]:
    return dict(page.evaluate(_READ_DOM))


_READ_DOM = """() => {
  const q = (s) => document.querySelector(s);
  const seats = [...document.querySelectorAll('.seat')];
  return {
    decision: Number(q('#frame-label').dataset.decision),
    top: q('#top-card').dataset.card || '',
    suit: q('#current-suit').dataset.suit,
    direction: Number(q('#direction').dataset.direction),
    count: Number(q('#count').textContent),
    stock: Number(q('#stock-size').textContent),
    discard: Number(q('#discard-size').textContent),
    hand: Number(q('#hand-number').dataset.hand),
    toActSeat: q('#to-act').dataset.seat,
    toActKind: q('#to-act').dataset.kind,
    hands: seats.map((s) => [...s.querySelectorAll('.hand .card')].map((c) => c.dataset.card || 'back')),
    handSizes: seats.map((s) => Number(s.querySelector('.hand').dataset.count)),
    penalty: seats.map((s) => s.querySelector('.badge.penalty') !== null),
    pressure: seats.map((s) => { const b = s.querySelector('.badge.pressure'); return b ? Number(b.textContent.split(' ')[1]) : 0; }),
    totals: [...document.querySelectorAll('#score-sheet tfoot tr.totals td')].map((td) => Number(td.textContent)),
    handsDone: Number(q('#score-sheet').dataset.handsDone),
  };
}"""


def _engine_view(state: GameState) -> dict[str, Any]:
    decision = state.decision
    return {
        "decision": state.decisions,
        "top": str(state.top_card),
        "suit": Suit(state.suit).word,
        "direction": state.direction,
        "count": state.count,
        "stock": len(state.stock),
        "discard": len(state.discard),
        "hand": state.hand_number,
        "toActSeat": "" if decision is None else str(decision.seat),
        "toActKind": "" if decision is None else decision.kind.name,
        "hands": [sorted(str(c) for c in state.hand_of(s)) for s in range(state.n)],
        "handSizes": [len(h) for h in state.hands],
        "penalty": list(state.penalty),
        "pressure": list(state.hand_pressures),
        "totals": list(state.totals),
        "handsDone": len(state.hand_results),
    }


def _sorted_hands(view: dict[str, Any]) -> dict[str, Any]:
    return {**view, "hands": [sorted(h) for h in view["hands"]]}


# --------------------------------------------------------------------------- stepping


def test_stepping_with_the_keyboard_shows_the_engine_position(open_page: Any, tmp_path: Path) -> None:
    golden = "craits-4p-face-cards"
    page = open_page(_page_for(tmp_path, golden))
    replay = read_replay(GOLDEN_DIR / f"{golden}.jsonl")
    page.keyboard.press("Home")
    assert _sorted_hands(_dom(page)) == _engine_view(replay_state(replay, 0))
    for n in (1, 2, 3, 4, 5):
        page.keyboard.press("ArrowRight")
        assert _sorted_hands(_dom(page)) == _engine_view(replay_state(replay, n)), f"after decision {n}"
    page.keyboard.press("ArrowLeft")
    assert _dom(page)["decision"] == 4
    page.click("#btn-next")
    page.click("#btn-next")
    assert _dom(page)["decision"] == 6
    page.click("#btn-prev")
    assert _sorted_hands(_dom(page)) == _engine_view(replay_state(replay, 5))


@pytest.mark.parametrize(
    "golden",
    ["craits-4p-face-cards", "craits-5p-pressure-ends-hand", "crates-partners", "crazy-eights-4p-blocked"],
)
def test_every_position_of_a_game_matches_the_engine(open_page: Any, tmp_path: Path, golden: str) -> None:
    """Go to each decision in turn: top card, suit, direction, count, stock, every hand, the
    penalties, pressures and totals are exactly the engine's."""
    page = open_page(_page_for(tmp_path, golden))
    replay = read_replay(GOLDEN_DIR / f"{golden}.jsonl")
    page.evaluate(f"window.readDom = {_READ_DOM}")
    shown = page.evaluate(
        "() => { const out = []; for (let n = 0; n <= craitsViewer.decisions; n++) {"
        " craitsViewer.gotoDecision(n); out.push(window.readDom()); } return out; }"
    )
    assert len(shown) == len(replay.decisions) + 1
    for (_number, _rec, state), view in zip(simulate(replay), shown, strict=True):
        assert _sorted_hands(view) == _engine_view(state), f"{golden}: decision {state.decisions}"


def test_the_goto_field_the_slider_and_hand_jumps(open_page: Any, tmp_path: Path) -> None:
    golden = "craits-4p-count-cooper"
    page = open_page(_page_for(tmp_path, golden))
    replay = read_replay(GOLDEN_DIR / f"{golden}.jsonl")
    page.keyboard.press("g")
    page.keyboard.type("50")
    page.keyboard.press("Enter")
    assert _sorted_hands(_dom(page)) == _engine_view(replay_state(replay, 50))
    page.keyboard.press("PageDown")
    view = _dom(page)
    assert view["handsDone"] == view["hand"] >= 1, "PageDown stops at the end of the hand"
    page.keyboard.press("PageDown")
    assert _dom(page)["hand"] == view["hand"] + 1
    page.fill("#slider", "0")
    page.dispatch_event("#slider", "input")
    assert _dom(page)["decision"] == 0


def test_end_shows_the_final_score_sheet_and_the_winner(open_page: Any, tmp_path: Path) -> None:
    golden = "craits-4p-face-cards"
    page = open_page(_page_for(tmp_path, golden))
    replay = read_replay(GOLDEN_DIR / f"{golden}.jsonl")
    page.keyboard.press("End")
    view = _dom(page)
    assert view["decision"] == len(replay.decisions)
    assert view["totals"] == replay.result["totals"]
    rows = page.eval_on_selector_all(
        "#score-sheet tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.firstChild ? Number(td.firstChild.textContent) : null))",
    )
    assert rows == [h["scores"] for h in replay.result["hands"]]
    places = page.eval_on_selector_all(
        "#score-sheet tr.places td", "tds => tds.map(td => Number(td.textContent))"
    )
    assert places == replay.result["placings"]
    assert "Game over" in page.inner_text("#banner")
    winner = replay.bots[replay.result["placings"].index(1)]
    assert winner in page.inner_text("#banner")


def test_space_plays_and_pauses(open_page: Any, tmp_path: Path) -> None:
    page = open_page(_page_for(tmp_path, "crazy-eights-2p"))
    page.select_option("#speed", "30")
    page.keyboard.press("Home")
    page.keyboard.press(" ")
    _wait_until(page, "Number(document.querySelector('#frame-label').dataset.decision) >= 3")
    page.keyboard.press(" ")
    assert "play" in page.inner_text("#btn-play")
    stopped = _dom(page)["decision"]
    page.evaluate("() => new Promise((r) => setTimeout(r, 200))")
    assert _dom(page)["decision"] == stopped, "paused playback does not move"


# --------------------------------------------------------------------------- one seat's view


def test_one_seat_view_hides_the_other_hands_and_their_draws(open_page: Any, tmp_path: Path) -> None:
    golden = "craits-4p-count-cooper"
    page = open_page(_page_for(tmp_path, golden))
    replay = read_replay(GOLDEN_DIR / f"{golden}.jsonl")
    page.keyboard.press("g")
    page.keyboard.type("40")
    page.keyboard.press("Enter")
    state = replay_state(replay, 40)
    page.keyboard.press("2")
    view = _dom(page)
    assert sorted(view["hands"][2]) == sorted(str(c) for c in state.hand_of(2))
    for seat in (0, 1, 3):
        assert view["hands"][seat] == ["back"] * len(state.hands[seat]), f"seat {seat} is hidden"
    log = page.inner_text("#events")
    assert f"{replay.bots[2]} is dealt " in log
    dealt = state.config.hand_sizes[state.hand_number - 1]
    for seat in (0, 1, 3):
        assert f"{replay.bots[seat]} is dealt {dealt} cards" in log, "others' deals show only a count"
    assert page.eval_on_selector("#view", "v => v.value") == "2"
    page.keyboard.press("a")
    view = _dom(page)
    assert all("back" not in hand for hand in view["hands"])
    page.select_option("#view", "1")
    assert _dom(page)["hands"][2] == ["back"] * len(state.hands[2])


# --------------------------------------------------------------------------- timings, screenshot, index


def _timed_replay(tmp_path: Path) -> Path:
    game = new_game("craits", 4, seed=21, short_game=True)
    path = tmp_path / "timed.jsonl"
    statuses = ["ok", "timeout", "ok", "illegal", "bank"]
    with ReplayWriter(
        path, game, seats=["alice", "bob", "carol", "dave"], game_id="timed-1", tournament="spring cup"
    ) as rec:
        i = 0
        while (d := game.decision) is not None:
            legal = game.legal_action_ids()
            action = legal[i % len(legal)]
            game.apply(action)
            status = "auto" if len(legal) == 1 else statuses[i % len(statuses)]
            rec.decision(
                d.seat,
                d.kind,
                action,
                status,
                think_ms=12.5 + i % 7,
                transport_ms=0.75,
                note="bot sent '9Z'" if status == "illegal" else "",
            )
            i += 1
    return path


def test_the_decision_panel_shows_timing_and_status_and_a_screenshot_is_saved(
    open_page: Any, tmp_path: Path
) -> None:
    replay_path = _timed_replay(tmp_path)
    page_path = tmp_path / "timed.html"
    write_html(replay_path, page_path)
    page = open_page(page_path)
    replay = read_replay(replay_path)
    n = next(r["n"] for r in replay.decisions if r["status"] == "illegal")
    page.evaluate(f"craitsViewer.gotoDecision({n})")
    rec = replay.decisions[n - 1]
    field = lambda name: page.inner_text(f"#decision-table td[data-field={name}]")  # noqa: E731
    assert field("status") == "illegal"
    assert field("think") == f"{rec['think_us'] / 1000:.1f} ms"
    assert field("transport") == "0.75 ms"
    assert field("note") == "bot sent '9Z'"
    assert field("action").startswith(rec["text"])
    seat = rec["seat"]
    illegal = sum(1 for r in replay.decisions[:n] if r["seat"] == seat and r["status"] == "illegal")
    issues = page.inner_text(f"#bot-stats tr:nth-child({seat + 2}) td:last-child")
    assert f"I{illegal}" in issues.split()
    assert "spring cup" in page.inner_text("#game-meta")
    page.keyboard.press("1")
    shot = tmp_path / "viewer.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000


def test_the_index_page_links_every_game(open_page: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    entries = []
    for name in ("crazy-eights-2p", "craits-2p"):
        page_name = f"{name}.html"
        write_html(GOLDEN_DIR / f"{name}.jsonl", site / page_name, index_href="index.html")
        entries.append(index_entry(GOLDEN_DIR / f"{name}.jsonl", page_name))
    index = write_index_html(entries, site / "index.html", title="Golden games")
    page = open_page(index)
    assert page.eval_on_selector_all("#games tbody a", "links => links.map(a => a.textContent)") == [
        "crazy-eights-2p",
        "craits-2p",
    ]
    page.click("text=craits-2p")
    _wait_until(page, "window.craitsViewer !== undefined")
    assert "Game craits-2p" in page.inner_text("#game-title")
    page.click("#index-link")
    page.wait_for_selector("#games")
    assert page.title() == "Golden games"


def test_a_folder_of_format_2_games_shares_one_viewer_and_opens_from_file(open_page: Any, tmp_path: Path) -> None:
    """A tournament's pages: one viewer.js for all, a page of a few lines per game loading its
    data by a script tag; from file://, one click from the index shows every position as the
    engine has it, and the decision panel's timings, statuses and notes."""
    timed = tmp_path / "timed.jsonl.gz"
    convert_replay(_timed_replay(tmp_path), timed)
    golden = tmp_path / "craits-5p-pressure-ends-hand.jsonl.gz"
    convert_replay(GOLDEN_DIR / "craits-5p-pressure-ends-hand.jsonl", golden)
    site = tmp_path / "viewer"
    write_shared_viewer(site)
    entries = []
    for path in (timed, golden):
        name = path.name.split(".")[0] + ".html"
        write_game_page(path, site / name, index_href="index.html")
        entries.append(index_entry(path, name))
        assert (site / name).stat().st_size < 2000
    page = open_page(write_index_html(entries, site / "index.html", title="Cup"))
    page.click("text=craits-5p-pressure-ends-hand")
    _wait_until(page, "window.craitsViewer !== undefined")
    replay = read_replay(golden)
    page.evaluate(f"window.readDom = {_READ_DOM}")
    shown = page.evaluate(
        "() => { const out = []; for (let n = 0; n <= craitsViewer.decisions; n++) {"
        " craitsViewer.gotoDecision(n); out.push(window.readDom()); } return out; }"
    )
    for (_number, _rec, state), view in zip(simulate(replay), shown, strict=True):
        assert _sorted_hands(view) == _engine_view(state), f"decision {state.decisions}"
    page.click("#index-link")
    page.wait_for_selector("#games")
    page.click("text=timed-1")
    _wait_until(page, "window.craitsViewer !== undefined")
    replay = read_replay(timed)
    n = next(r["n"] for r in replay.decisions if r["status"] == "illegal")
    page.evaluate(f"craitsViewer.gotoDecision({n})")
    rec = replay.decisions[n - 1]
    field = lambda name: page.inner_text(f"#decision-table td[data-field={name}]")  # noqa: E731
    assert (field("status"), field("note"), field("transport")) == ("illegal", "bot sent '9Z'", "0.75 ms")
    assert field("think") == f"{rec['think_us'] / 1000:.1f} ms"
    assert field("action").startswith(rec["text"])
    assert "Game timed-1" in page.inner_text("#game-title")


def test_a_hostile_bot_name_is_shown_as_text(open_page: Any, tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    from server.storage.replay import record_game

    name = "</script><script>document.title='pwned'</script><b>x"
    record_game(path, make_config("crazy-eights", 2), seed=1, seats=[name, "ok"])
    page_path = tmp_path / "hostile.html"
    write_html(path, page_path)
    page = open_page(page_path)
    assert page.title() != "pwned"
    assert name in page.inner_text("#seat-0 .seat-name")
