"""A fault says where it is and how to play it again: ``craits tournament standings --faults``
and the web bot page link each fault to its decision in the replay, offer the replay, and show
the ``craits replay rerun`` command (docs/rerun.md), with the decision number the bot's own log
names. The tournament: a kit bot whose choose() raises at its 2nd request and whose process
dies at its 3rd, in every game, against the built-in random player."""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

import pytest

from server.storage.replay import read_replay
from server.storage.replay.faults import first_fault
from server.web.participants import game_output
from tests.cli import run_cli
from tests.web.conftest import start_craits

BOTS = Path(__file__).resolve().parent / "bots"


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("faulty")
    folder.chmod(0o755)
    file = folder / "faulty.toml"
    file.write_text(
        'name = "faulty"\ntable_size = 2\ndeals = 1\nseed = 5\nconcurrency = 1\n[flags]\nshort_game = true\n'
        f'[[bots]]\nname = "crashy"\ncommand = ["python", "seeded_bot.py", "--raise-at", "2", "--crash-at", "3"]\ncwd = "{BOTS}"\n'
        '[[bots]]\nname = "house"\nbuiltin = "random"\n', encoding="utf-8")
    out = folder / "out"
    from server.cli import main

    assert main(["tournament", "run", str(file), "--out", str(out), "--no-progress"]) == 0
    return out


def test_standings_list_each_fault_with_its_decision_and_the_rerun_command(
        faulty: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(faulty)  # (paths are said from where the command runs)
    code, out, _ = run_cli(capsys, "tournament", "standings", str(faulty), "--faults")
    assert code == 0
    replays = sorted((faulty / "replays").iterdir())
    assert replays and out.count("  crashy: game ") == len(replays)
    for path in replays:
        replay = read_replay(path)
        seat = replay.bots.index("crashy")
        n = first_fault(replay, seat)
        assert f"  crashy: game {replay.game_id}, seat {seat}, decision {n}: bot error: ValueError" in out
        assert f"viewer: viewer/{replay.game_id}.html#decision={n}&seat={seat}" in out
        assert (f"rerun:  craits replay rerun replays/{path.name} --seat {seat} --from {n} -- "
                f"{sys.executable} {BOTS / 'seeded_bot.py'} --raise-at 2 --crash-at 3") in out  # (runs from anywhere)
        # the bot's own log names the same decision: what its author passes to --from
        log = game_output(faulty / "bots", "crashy", replay.game_id, seat)
        assert log is not None and f"YOUR BOT FAILED (game {replay.game_id}, decision {n} (id " in log, log


def test_the_bot_page_links_each_fault_to_its_decision_and_offers_the_replay(faulty: Path, tmp_path: Path) -> None:
    running = start_craits(["web", str(faulty), "--address", "127.0.0.1:0"], tmp_path)
    try:
        with urllib.request.urlopen(running.url + "bots/crashy", timeout=10) as response:
            page = response.read().decode()
        info = running.get("/api/bots/crashy")
        assert info["faults"]
        for fault in info["faults"]:
            first = fault["first"]
            game = fault["game_id"]
            assert f'href="/games/{game}#decision={first["decision"]}&amp;seat={fault["seat"]}"' in page
            assert f'href="/api/games/{game}/replay" download="{game}.jsonl.gz"' in page
            assert (f"craits replay rerun {game}.jsonl.gz --seat {fault['seat']} --from {first['decision']} -- "
                    "python my_bot.py") in page
            with urllib.request.urlopen(f"{running.url}api/games/{game}/replay", timeout=10) as response:
                assert response.headers["Content-Disposition"] == f'attachment; filename="{game}.jsonl.gz"'
                body = response.read()
            (stored,) = (faulty / "replays").glob(f"{game}.*")
            assert body == stored.read_bytes()
            assert first["decision"] == first_fault(read_replay(stored), fault["seat"])  # the bot's log's number
        # (a bot's command is its author's: not on a public page; the kit's bot error names its file and line)
        assert "seeded_bot.py --raise-at" not in page
    finally:
        running.stop()


@pytest.mark.browser
def test_a_faults_viewer_link_opens_at_its_decision_in_its_seats_view(faulty: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.replay.test_viewer_browser import CHROMIUM_ARGS, _chromium, _wait_until

    path = sorted((faulty / "replays").iterdir())[0]
    replay = read_replay(path)
    seat = replay.bots.index("crashy")
    n = first_fault(replay, seat)
    page_url = (faulty / "viewer" / f"{replay.game_id}.html").as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(page_url)
            _wait_until(page, "window.craitsViewer !== undefined")  # (a page's replay comes in a script of its own)
            page.evaluate(f"window.craitsViewer.gotoDecision({n})")
            expected = page.evaluate("window.craitsViewer.frame()")
            page.goto(f"{page_url}#decision={n}&seat={seat}")
            page.reload()
            _wait_until(page, "window.craitsViewer !== undefined")
            assert page.evaluate("window.craitsViewer.frame()") == expected > 0
            assert page.eval_on_selector("#view", "e => e.value") == str(seat)
        finally:
            browser.close()
