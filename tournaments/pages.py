"""Link a tournament's games to their replays: one viewer page per game and an index.

Written after every run (and resume), so the standings export and the browser
both list every recorded game and one click opens any of them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from server.replay import IndexEntry, ReplayError, index_entry, write_html, write_index_html
from server.store import Store

VIEWER_DIR = "viewer"


def game_links(store: Store, out_dir: Path) -> list[dict[str, Any]]:
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


def _find_replay(stored: str | None, out_dir: Path) -> Path | None:
    """The stored path may be relative to where craits ran; the folder may have moved since."""
    if not stored:
        return None
    for candidate in (Path(stored), out_dir / stored, out_dir / "replays" / Path(stored).name):
        if candidate.exists():
            return candidate
    return None


def write_viewer_pages(store: Store, out_dir: Path, title: str) -> Path:
    """Write ``viewer/<game>.html`` for each game with a replay (skipping up-to-date pages) and ``viewer/index.html``."""
    pages = out_dir / VIEWER_DIR
    entries = []
    for game in game_links(store, out_dir):
        if game["replay"] is None:
            continue
        replay = out_dir / game["replay"]
        page = out_dir / game["viewer"]
        try:
            if not page.exists() or page.stat().st_mtime < replay.stat().st_mtime:
                write_html(replay, page, index_href="index.html")
            entries.append(index_entry(replay, page.name))
        except (ReplayError, OSError) as err:  # a damaged replay is reported by `craits replay verify`
            entries.append(IndexEntry(href="", game_id=game["game_id"], seats=tuple(game["bots"]), note=f"no viewer: {err}"))
    return write_index_html(entries, pages / "index.html", title=title)
