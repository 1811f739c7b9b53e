"""Viewer pages of a tournament folder: rebuilt when cut off, and always from the folder's own replays."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from server.cli import main
from server.engine import make_config
from server.storage.replay import read_replay, record_game, replay_name
from server.storage.store import Store
from tests.tournaments.configs import builtin_tournament
from tournaments import pages
from tournaments.pages import game_links, write_viewer_pages

CONFIG = builtin_tournament("pages", seed=5, deals=1, bots={"r1": "random", "r2": "random", "first": "first"})


def _run(base: Path, name: str) -> Path:
    config = base / "pages.toml"
    config.write_text(CONFIG, encoding="utf-8")
    out = base / name
    assert main(["tournament", "run", str(config), "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished tournament folder (copied by each test that changes it)."""
    return _run(tmp_path_factory.mktemp("pages"), "played")


def _copy(played: Path, to: Path) -> Path:
    shutil.copytree(played, to)
    return to


def _embedded_seed(page: Path) -> int:
    """The seed of the game a folder's page shows (its data script: gzip, base64)."""
    text = page.with_suffix(".js").read_text(encoding="utf-8")
    packed = text[text.index('"') + 1 : text.rindex('"')]
    return int(json.loads(gzip.decompress(base64.b64decode(packed)))["header"]["seed"])


def test_a_cut_off_page_is_written_again_even_when_newer_than_its_replay(played: Path, tmp_path: Path) -> None:
    out = _copy(played, tmp_path / "out")
    pages = sorted((out / "viewer").glob("d*.html"))
    assert pages
    page = pages[0]
    whole = page.read_bytes()
    page.write_bytes(whole[: len(whole) // 2])  # as a full disk or a kill left it
    later = page.stat().st_mtime + 3600
    os.utime(page, (later, later))
    with Store.in_dir(out) as store:
        write_viewer_pages(store, out, title="t")
    assert page.read_bytes() == whole


def test_an_up_to_date_page_is_not_written_again(played: Path, tmp_path: Path) -> None:
    out = _copy(played, tmp_path / "out")
    page = sorted((out / "viewer").glob("d*.html"))[0]
    os.utime(page, ns=(1, 1))
    with Store.in_dir(out) as store:
        write_viewer_pages(store, out, title="t")
    assert page.stat().st_mtime_ns == 1


def test_a_copied_folder_links_and_views_its_own_replays(tmp_path: Path) -> None:
    """The original folder's replay of a game is replaced by another game; the copy must
    not notice: its links stay inside the copy and its page shows the copy's game."""
    original = _run(tmp_path, "original")  # its results store absolute paths into `original`
    copy = _copy(original, tmp_path / "copy")
    game = sorted((copy / "replays").glob("*.jsonl.gz"))[0]
    seed = read_replay(game).seed
    record_game(original / "replays" / game.name, make_config("crazy-eights", 3), seed=seed + 1)
    shutil.rmtree(copy / "viewer")
    with Store.in_dir(copy) as store:
        links = {g["game_id"]: g for g in game_links(store, copy)}
        write_viewer_pages(store, copy, title="t")
    assert links[replay_name(game)]["replay"] == f"replays/{game.name}"
    assert all(g["replay"] is None or g["replay"].startswith("replays/") for g in links.values())
    assert _embedded_seed(copy / "viewer" / f"{replay_name(game)}.html") == seed


def test_a_replay_missing_from_the_folder_is_not_taken_from_another_folder(played: Path, tmp_path: Path) -> None:
    copy = _copy(played, tmp_path / "copy")
    with Store.in_dir(played) as store:
        stored = {r.game_id: r.replay_path for r in store.results()}
    game = sorted((copy / "replays").glob("*.jsonl.gz"))[0]
    game.unlink()
    with Store.in_dir(copy) as store:
        links = {g["game_id"]: g for g in game_links(store, copy)}
    assert stored[replay_name(game)] is not None and Path(stored[replay_name(game)]).exists()
    assert links[replay_name(game)]["replay"] is None and links[replay_name(game)]["viewer"] is None


def test_an_up_to_date_pages_replay_is_not_read_through_again(
    played: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long ladder's folder holds thousands of games: listing them must not mean checking
    every replay again (``craits replay verify`` does that)."""
    out = _copy(played, tmp_path / "out")
    index = (out / "viewer" / "index.html").read_bytes()

    def read_through(path: Path) -> None:
        raise AssertionError(f"{path} was read through again")

    monkeypatch.setattr(pages, "read_replay", read_through)
    with Store.in_dir(out) as store:
        write_viewer_pages(store, out, title="Craits tournament pages")
    assert (out / "viewer" / "index.html").read_bytes() == index  # the same entries, from two lines each


def test_a_page_whose_replay_changed_is_written_again(played: Path, tmp_path: Path) -> None:
    out = _copy(played, tmp_path / "out")
    game = sorted((out / "replays").glob("*.jsonl.gz"))[0]
    seed = read_replay(game).seed
    record_game(game, make_config("crazy-eights", 3), seed=seed + 1)  # another game under the same name
    with Store.in_dir(out) as store:
        write_viewer_pages(store, out, title="t")
    assert _embedded_seed(out / "viewer" / f"{replay_name(game)}.html") == seed + 1
