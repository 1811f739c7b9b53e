"""Link a tournament's games to their replays: one viewer page per game and an index.

Written after every run (and resume), so the standings export and the browser
both list every recorded game and one click opens any of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from server.storage.replay import REPLAY_SUFFIX, ReplayError, read_replay
from server.storage.store import TournamentStore
from server.viewer.pages import (
    IndexEntry,
    current_page_entry,
    index_entry,
    viewer_is_current,
    write_html,
    write_index_html,
)

VIEWER_DIR = "viewer"
REPLAY_DIR = "replays"
"""Where a tournament folder keeps its replays (tournaments.runner writes them there)."""


def game_links(store: TournamentStore, out_dir: Path) -> list[dict[str, Any]]:
    """Every recorded game in schedule order with its replay and viewer paths (relative to ``out_dir``)."""
    games = []
    for result in store.results():
        replay = _find_replay(result.replay_path, out_dir)
        has_replay = replay is not None
        games.append(
            {
                "game_id": result.game_id,
                "bots": list(result.bots),
                "totals": list(result.totals),
                "aborted": result.aborted,
                "replay": os.path.relpath(replay, out_dir) if has_replay and replay else None,
                "viewer": f"{VIEWER_DIR}/{result.game_id}.html" if has_replay else None,
            }
        )
    return games


def fault_links(store: TournamentStore, out_dir: Path, commands: dict[str, str], base: Path | None = None
                ) -> list[dict[str, Any]]:
    """Each bot's first fault in each game where it had one: the decision in the replay, what
    happened, the viewer's link to it and the command that reruns it (``commands``: bot name ->
    its command, shown in the command; docs/rerun.md); paths are relative to ``base`` (default
    ``out_dir``). Only the replays of games whose seats report a fault are read."""
    from server.storage.replay.faults import replay_faults
    from tournaments.standings import BAD_STATUSES, ISSUE_COUNTERS

    out = []
    for result in store.results():
        faulty = {i for i, seat in enumerate(result.seats)
                  if seat.status in BAD_STATUSES or any(seat.counters.get(k, 0) for k in ISSUE_COUNTERS)}
        replay = _find_replay(result.replay_path, out_dir) if faulty else None
        if replay is None:
            continue
        try:
            faults = replay_faults(read_replay(replay))
        except ReplayError:
            continue
        file = os.path.relpath(replay, base or out_dir)
        viewer = os.path.relpath(out_dir / VIEWER_DIR / f"{result.game_id}.html", base or out_dir)
        for fault in faults:
            if fault.seat in faulty:
                out.append({
                    "game_id": result.game_id, "bot": fault.bot, "seat": fault.seat, "decision": fault.n,
                    "what": fault.what, "count": fault.count, "replay": file,
                    "viewer": viewer + fault.anchor(),
                    "command": fault.command(file, commands.get(fault.bot) or "python my_bot.py"),
                })
    return out


def _find_replay(stored: str | None, out_dir: Path) -> Path | None:
    """This folder's own copy of the replay: ``replays/<name>`` first, then the stored path
    (relative to the folder, or as stored) only if it lies inside the folder, so a copied or
    moved folder never links to, or rebuilds its pages from, another folder's replays."""
    if not stored:
        return None
    folder = out_dir.resolve()
    stored_path = Path(stored)
    candidates = [out_dir / REPLAY_DIR / stored_path.name]
    if not stored_path.is_absolute():
        candidates.append(out_dir / stored_path)
    candidates.append(stored_path)
    for candidate in candidates:
        if candidate.is_file() and candidate.resolve().is_relative_to(folder):
            return candidate
    return None


def write_viewer_pages(store: TournamentStore, out_dir: Path, title: str,
                       announce: Callable[[int], None] | None = None) -> Path:
    """Write ``viewer/<game>.html`` for each game with a replay and ``viewer/index.html``.

    A page is kept only if it ends with the mark of its replay's last record: a page cut off
    by a full disk or a kill, or made from another replay, is written again. A kept page's
    replay is not read through again (its first and last lines give the index entry).
    ``announce(n)`` is told how many pages are to be written before they are (thousands of
    games take minutes: a page holds its whole game)."""
    pages = out_dir / VIEWER_DIR
    found: list[tuple[dict[str, Any], Path, IndexEntry | None]] = []
    for game in game_links(store, out_dir):
        if game["replay"] is None:
            continue
        page = out_dir / game["viewer"]
        found.append((game, page, current_page_entry(out_dir / game["replay"], page, page.name)))
    if announce is not None:
        announce(sum(current is None for _, _, current in found))
    entries = []
    for game, page, current in found:
        if current is not None:
            entries.append(current)
            continue
        try:
            entries.append(_page(out_dir / game["replay"], page))
        except (ReplayError, OSError) as err:  # a damaged replay is reported by `craits replay verify`
            entries.append(IndexEntry(href="", game_id=game["game_id"], seats=tuple(game["bots"]), note=f"no viewer: {err}"))
    return write_index_html(entries, pages / "index.html", title=title)


def _page(replay_path: Path, page: Path) -> IndexEntry:
    """The index entry of a game's viewer page, the page written first unless it is current."""
    current = current_page_entry(replay_path, page, page.name)
    if current is not None:
        return current
    replay = read_replay(replay_path)
    if not viewer_is_current(page, replay):
        write_html(replay, page, index_href="index.html")
    return index_entry(replay, page.name)


def write_game_pages(out_dir: Path, game_ids: Iterable[str]) -> int:
    """Write the viewer pages of these games (their replays in ``replays/``) as they are
    played, so that :func:`write_viewer_pages` at the end finds them current and only lists
    them: a ladder writes each round's pages after the round, and stopping it after weeks
    costs a listing, not a page for every game of the run. Touches no store (a thread may
    run it); a game without a readable replay is skipped (the final listing says why).
    Returns the number of pages that are current."""
    written = 0
    for game_id in game_ids:
        replay = out_dir / REPLAY_DIR / f"{game_id}{REPLAY_SUFFIX}"
        if not replay.is_file():
            continue
        try:
            _page(replay, out_dir / VIEWER_DIR / f"{game_id}.html")
        except (ReplayError, OSError):
            continue
        written += 1
    return written
