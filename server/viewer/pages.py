"""A replay as a self-contained HTML page (no server, no network), a folder of game pages that
share one copy of the viewer, and index pages that list games; pages are written atomically
and carry a mark of the replay they show, so a current page is not written again."""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.storage.replay.format import ReplayError, write_text_atomic
from server.storage.replay.reader import Replay, read_ends, read_replay

JsonDict = dict[str, Any]

# --------------------------------------------------------------------------- HTML


_ASSETS = Path(__file__).with_name("assets")
"""The page templates, style and script that every page embeds."""


def _viewer_asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _embed_json(value: Any) -> str:
    """JSON safe inside <script type="application/json">: no "</", "<!--" or "]]>" can close it."""
    return (
        json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Replace each {{KEY}} in one pass, so a value never has markers of its own filled."""
    missing = [k for k in values if "{{" + k + "}}" not in template]
    if missing:
        raise RuntimeError(f"viewer template lacks {', '.join(missing)}")
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)


def render_html(replay: Replay, *, index_href: str | None = None) -> str:
    """One self-contained page (inline CSS, JS and data; no network) that plays the replay."""
    title = f"Craits replay {replay.game_id or replay.path.name}"
    data = {"records": list(replay.records), "index_href": index_href, "file": replay.path.name}
    page = _fill(
        _viewer_asset("viewer.html"),
        {
            "TITLE": html.escape(title),
            "CSS": _viewer_asset("viewer.css"),
            "JS": _viewer_asset("viewer.js").replace("</", "<\\/"),
            "DATA": _embed_json(data),
        },
    )
    return page + ("" if page.endswith("\n") else "\n") + _page_mark(replay)


_PAGE_MARK = "<!-- craits-replay-page {} -->\n"
"""Written last on a viewer page with the hash of its replay's last record, so a page that is
complete and made from this very replay can be told from a stale or cut-off one."""


def _page_mark(replay: Replay) -> str:
    return _PAGE_MARK.format(replay.fingerprint)


def viewer_is_current(page: str | os.PathLike[str], replay: Replay) -> bool:
    """True if ``page`` is a complete viewer page of this replay (its end mark names the
    replay's last record), so it need not be written again."""
    return _ends_with(page, _page_mark(replay).encode())


def _ends_with(page: str | os.PathLike[str], mark: bytes) -> bool:
    try:
        with Path(page).open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size < len(mark):
                return False
            handle.seek(size - len(mark))
            return handle.read() == mark
    except OSError:
        return False



def write_html(
    replay: Replay | str | os.PathLike[str], out_path: str | os.PathLike[str], *, index_href: str | None = None
) -> Path:
    """Write a replay's viewer page (a path is read first, its chain and fields checked)."""
    rep = replay if isinstance(replay, Replay) else read_replay(replay)
    return write_text_atomic(out_path, render_html(rep, index_href=index_href))


@dataclass(frozen=True)
class IndexEntry:
    """One game on an index page: where its viewer is and how it ended."""

    href: str
    game_id: str
    seats: tuple[str, ...]
    totals: tuple[int, ...] = ()
    placings: tuple[int, ...] = ()
    description: str = ""
    """e.g. "craits 4p short_game"."""
    note: str = ""
    """e.g. "aborted: ..." or a round label."""


def index_entry(replay: Replay | str | os.PathLike[str], href: str) -> IndexEntry:
    """An index entry for a replay whose viewer page is at ``href``."""
    rep = replay if isinstance(replay, Replay) else read_replay(replay)
    return _index_entry(rep.header, rep.result, rep.path.name, href)


def current_page_entry(
    replay: str | os.PathLike[str], page: str | os.PathLike[str], href: str
) -> IndexEntry | None:
    """The index entry of a replay whose viewer ``page`` is complete and current, read from the
    replay's first and last lines only; None when the page is to be written (from the whole
    replay, checked). A folder of thousands of games (a ladder) lists them without reading
    every replay again; ``craits replay verify`` is what checks a replay through."""
    try:
        header, result, fingerprint = read_ends(replay)
        if not _ends_with(page, _PAGE_MARK.format(fingerprint).encode()):
            return None
        if b'<script src="' in _tail(page) and not Path(page).with_suffix(".js").is_file():
            return None  # (a folder's page whose data script is gone)
        return _index_entry(header, result, Path(replay).name, href)
    except (ReplayError, OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None  # (written again from the whole replay, whose reading says what is wrong)


def _tail(page: str | os.PathLike[str], size: int = 4096) -> bytes:
    with Path(page).open("rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - size))
        return handle.read()


# --------------------------------------------------------------------------- a folder of pages


def write_shared_viewer(directory: str | os.PathLike[str]) -> None:
    """Write the one copy of the viewer (``viewer.js``, ``viewer.css``) that a folder's game
    pages load, unless it is already there and current."""
    folder = Path(directory)
    body = _viewer_asset("viewer.html")
    skeleton = body[body.index("<body>") + len("<body>") : body.index('<script type="application/json"')]
    files = {
        "viewer.js": f"window.CRAITS_SKELETON = {json.dumps(skeleton.strip())};\n" + _viewer_asset("viewer.js"),
        "viewer.css": _viewer_asset("viewer.css"),
    }
    for name, text in files.items():
        target = folder / name
        try:
            if target.read_text(encoding="utf-8") == text:
                continue
        except OSError:
            pass
        write_text_atomic(target, text)


def viewer_data(replay: Replay, *, index_href: str | None = None) -> bytes:
    """What a folder's page needs of its game, gzip-compressed: format 1's records in columns
    (a decision is ``[seat, kind, action, legal, status, think_us, transport_us, events]``, the
    texts of kinds, statuses and actions listed once); the shared viewer.js unpacks it."""
    kinds: dict[str, int] = {}
    statuses: dict[str, int] = {}
    texts: dict[int, str] = {}
    rows = []
    for rec in replay.decisions:
        row: list[Any] = [
            rec["seat"], kinds.setdefault(rec["kind"], len(kinds)), rec["action"], rec.get("legal"),
            statuses.setdefault(rec["status"], len(statuses)), rec.get("think_us"), rec.get("transport_us"),
            rec["events"],
        ]
        texts[rec["action"]] = str(rec.get("text", ""))
        extra = {k: rec[k] for k in ("sent", "note") if k in rec}
        if extra:
            row.append(extra)
        rows.append(row)
    plain = {k: v for k, v in replay.result.items() if k not in ("prev", "hash")}
    data = {
        "header": {k: v for k, v in replay.header.items() if k not in ("prev", "hash")},
        "start": replay.start["events"], "decisions": rows, "result": plain,
        "kinds": list(kinds), "statuses": list(statuses), "texts": texts,
        "index_href": index_href, "file": replay.path.name,
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return gzip.compress(text.encode("utf-8"), 9, mtime=0)


def write_game_page(
    replay: Replay | str | os.PathLike[str], out_path: str | os.PathLike[str], *, index_href: str | None = None
) -> Path:
    """Write a game's page of a folder (a few KB, loading the shared viewer) and, beside it,
    ``<page>.js``, its data; the page last, so a page with its mark has its data.
    Call :func:`write_shared_viewer` for the folder too."""
    rep = replay if isinstance(replay, Replay) else read_replay(replay)
    page = Path(out_path)
    data = page.with_suffix(".js")
    packed = base64.b64encode(viewer_data(rep, index_href=index_href)).decode("ascii")
    write_text_atomic(data, f'window.CRAITS_DATA = "{packed}";\n')
    title = f"Craits replay {rep.game_id or rep.path.name}"
    text = _fill(_viewer_asset("game.html"), {"TITLE": html.escape(title), "DATA": html.escape(data.name, quote=True)})
    return write_text_atomic(page, text + _page_mark(rep))


def _index_entry(header: JsonDict, result: JsonDict, name: str, href: str) -> IndexEntry:
    cfg = header["config"]
    flags = [k for k, v in sorted(cfg.get("flags", {}).items()) if v is True]
    if cfg.get("flags", {}).get("seven_hits", "next_but_one") != "next_but_one":
        flags.append(f"seven_hits={cfg['flags']['seven_hits']}")
    if cfg.get("flags", {}).get("decks") == 2:
        flags.append("2 decks")
    aborted = str(result.get("aborted", ""))
    return IndexEntry(
        href=href,
        game_id=str(header.get("game_id", "")) or name,
        seats=tuple(str(s.get("bot", f"seat {i}")) for i, s in enumerate(header["seats"])),
        totals=tuple(result["totals"]),
        placings=tuple(result["placings"]),
        description=" ".join([cfg["preset"], f"{cfg['players']}p", *flags]),
        note=f"aborted: {aborted}" if aborted else "",
    )


def write_index_html(
    entries: Iterable[IndexEntry | Mapping[str, Any]],
    out_path: str | os.PathLike[str],
    *,
    title: str = "Craits games",
) -> Path:
    """Write a page listing games, each linking to its viewer, with seats, totals and placings.

    ``entries`` are :class:`IndexEntry` values or mappings with the same keys; ``href`` is
    relative to the index page (the pages work from the file system, no server).
    """
    rows = []
    for i, item in enumerate(entries, start=1):
        entry = (
            item
            if isinstance(item, IndexEntry)
            else IndexEntry(
                href=str(item["href"]),
                game_id=str(item.get("game_id", "")),
                seats=tuple(item.get("seats", ())),
                totals=tuple(item.get("totals", ())),
                placings=tuple(item.get("placings", ())),
                description=str(item.get("description", "")),
                note=str(item.get("note", "")),
            )
        )
        players = []
        for s, bot in enumerate(entry.seats):
            score = ""
            if s < len(entry.totals):
                place = entry.placings[s] if s < len(entry.placings) else None
                cls = ' class="win"' if place == 1 else ""
                score = (
                    f" <span{cls}>{entry.totals[s]}"
                    + (f" <small>#{place}</small>" if place else "")
                    + "</span>"
                )
            players.append(f"<li>{html.escape(bot)}{score}</li>")
        rows.append(
            f'<tr><td>{i}</td><td><a href="{html.escape(entry.href, quote=True)}">'
            f"{html.escape(entry.game_id or entry.href)}</a></td>"
            f'<td>{html.escape(entry.description)}</td><td><ol start="0">{"".join(players)}</ol></td>'
            f"<td>{html.escape(entry.note)}</td></tr>"
        )
    page = _fill(
        _viewer_asset("index.html"),
        {
            "TITLE": html.escape(title),
            "CSS": _viewer_asset("viewer.css"),
            "ROWS": "\n".join(rows) or '<tr><td colspan="5">no games</td></tr>',
            "COUNT": str(len(rows)),
        },
    )
    return write_text_atomic(out_path, page)


