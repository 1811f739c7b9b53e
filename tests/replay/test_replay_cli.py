"""`craits replay verify|show|html`, run as a user would: a real process, exit codes, messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.engine import make_config
from server.storage.replay import record_game

ROOT = Path(__file__).resolve().parents[2]


def craits(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "server.cli", "replay", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture
def two_replays(tmp_path: Path) -> list[Path]:
    games = tmp_path / "games"
    a = games / "g-1.jsonl"
    b = games / "g-2.jsonl"
    record_game(a, make_config("craits", 2, short_game=True), seed=1, seats=["ann", "<bob>"])
    record_game(b, make_config("crazy-eights", 3), seed=2)
    return [a, b]


def test_verify_prints_one_ok_line_per_good_file(two_replays: list[Path]) -> None:
    out = craits("verify", *two_replays)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"OK {two_replays[0]}: g-1 craits 2p")
    assert lines[1].startswith(f"OK {two_replays[1]}: g-2 crazy-eights 3p")
    assert lines[2] == "2 replays verified: all OK"


def test_verify_takes_a_directory(two_replays: list[Path]) -> None:
    out = craits("verify", two_replays[0].parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("OK ") == 2


def test_verify_fails_loudly_with_the_file_and_record(two_replays: list[Path]) -> None:
    bad = two_replays[1]
    lines = bad.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"seat":', b'"seat": ', 1)  # still valid JSON, but not what was hashed
    lines[4] = lines[4].replace(b'"legal":', b'"legal":1', 1)
    bad.write_bytes(b"\n".join(lines))
    out = craits("verify", *two_replays)
    assert out.returncode == 1
    assert f"OK {two_replays[0]}" in out.stdout
    assert f"FAIL {bad}: record 5: hash mismatch" in out.stdout
    assert out.stdout.splitlines()[-1] == "1 of 2 replays failed verification"


def test_a_folder_of_replays_is_verified_on_every_core_in_order_and_counted(tmp_path: Path) -> None:
    """A tournament's thousands of replays: verified in processes at once (--jobs), printed in
    the folder's order as one process prints them, and one last line with the count, which is
    all --quiet prints when every one is good."""
    games = tmp_path / "games"
    for i in range(6):
        record_game(games / f"g-{i:02d}.jsonl", make_config("crazy-eights", 3), seed=i)
    lines = (games / "g-02.jsonl").read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"legal":', b'"legal":1', 1)  # still JSON, not what was hashed
    (games / "g-02.jsonl").write_bytes(b"\n".join(lines))
    one = craits("verify", "--jobs", "1", games)
    many = craits("verify", "--jobs", "3", games)
    assert one.returncode == many.returncode == 1 and many.stdout == one.stdout, many.stderr
    printed = many.stdout.splitlines()
    assert [line.split()[1].rstrip(":") for line in printed[:-1]] == [str(games / f"g-{i:02d}.jsonl") for i in range(6)]
    assert printed[2].startswith("FAIL") and printed[-1] == "1 of 6 replays failed verification"
    (games / "g-02.jsonl").unlink()
    quiet = craits("verify", "-q", games)
    assert quiet.returncode == 0 and quiet.stdout == "5 replays verified: all OK\n"


def test_verify_reports_truncation(two_replays: list[Path]) -> None:
    data = two_replays[0].read_bytes()
    two_replays[0].write_bytes(data[:-40])
    out = craits("verify", two_replays[0])
    assert out.returncode == 1
    assert "truncated: the last line is cut off" in out.stdout


def test_a_missing_file_is_a_one_line_user_error(tmp_path: Path) -> None:
    out = craits("verify", tmp_path / "nope.jsonl")
    assert out.returncode == 2
    assert out.stderr.strip() == f"craits: error: {tmp_path / 'nope.jsonl'}: no such file or directory"
    assert "Traceback" not in out.stderr


def test_show_prints_the_walkthrough(two_replays: list[Path]) -> None:
    out = craits("show", two_replays[0])
    assert out.returncode == 0, out.stderr
    assert "Replay g-1" in out.stdout
    assert "Hand 1: seat" in out.stdout
    assert "Score sheet" in out.stdout


def test_show_of_a_damaged_file_is_a_user_error(two_replays: list[Path]) -> None:
    two_replays[0].write_text("not json\n", encoding="utf-8")
    out = craits("show", two_replays[0])
    assert out.returncode == 2
    assert "record 1: not a JSON record" in out.stderr


def test_show_of_a_folder_is_a_user_error(two_replays: list[Path]) -> None:
    out = craits("show", two_replays[0].parent)
    assert out.returncode == 2
    assert out.stderr == f"craits: error: {two_replays[0].parent} is a folder: show takes one replay file " \
        "(verify and html take folders)\n"


def test_html_writes_one_self_contained_page(two_replays: list[Path], tmp_path: Path) -> None:
    page = tmp_path / "one.html"
    out = craits("html", two_replays[0], "-o", page)
    assert out.returncode == 0, out.stderr
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "{{" not in text, "every template marker is filled"
    assert 'id="replay-data"' in text
    for remote in ("http://", "https://", "src=", "<link"):
        assert remote not in text, f"the page must load nothing ({remote!r} found)"


FOLDER_OF_TWO = ["g-1.html", "g-1.js", "g-2.html", "g-2.js", "index.html", "viewer.css", "viewer.js"]
"""A folder of two games' pages: a page and its data each, the index, one shared viewer."""


def test_html_of_several_files_writes_pages_and_an_index(two_replays: list[Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    out = craits("html", *two_replays, "-o", site, "--title", "Cup 1")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in site.iterdir()) == FOLDER_OF_TWO
    index = (site / "index.html").read_text(encoding="utf-8")
    assert '<a href="g-1.html">g-1</a>' in index and '<a href="g-2.html">g-2</a>' in index
    assert "&lt;bob&gt;" in index and "<bob>" not in index
    assert "<h1>Cup 1</h1>" in index
    page = (site / "g-1.html").read_text(encoding="utf-8")
    assert '<script src="g-1.js">' in page and '<script src="viewer.js">' in page
    assert len(page) < 2000, "a game's page is a few lines: the viewer is shared, the data is its own script"
    assert (site / "g-1.js").read_text().startswith('window.CRAITS_DATA = "')


def test_html_of_several_files_into_one_html_file_is_a_user_error(
    two_replays: list[Path], tmp_path: Path
) -> None:
    out = craits("html", *two_replays, "-o", tmp_path / "x.html")
    assert out.returncode == 2
    assert "several replays need an output directory" in out.stderr


def test_html_of_a_folder_with_a_damaged_replay_writes_the_others_and_names_it(
    two_replays: list[Path], tmp_path: Path
) -> None:
    """One replay cut short among others: its name and fault are printed, every other game
    gets its page and a place in the index, and the exit status says something failed."""
    folder = two_replays[0].parent
    (folder / "g-0.jsonl").write_bytes(two_replays[0].read_bytes()[:2000])  # (sorted first)
    site = tmp_path / "site"
    out = craits("html", folder, "-o", site)
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith(f"FAIL {folder / 'g-0.jsonl'}: record ") and "truncated" in out.stdout
    assert "1 replay(s) could not be read (left out of the index)" in out.stdout
    assert sorted(p.name for p in site.iterdir()) == FOLDER_OF_TWO
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "g-1.html" in index and "g-2.html" in index and "g-0" not in index


def test_html_into_a_place_it_cannot_write_is_one_line(two_replays: list[Path], tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    for args, says in (
        ([two_replays[0], "-o", tmp_path / "afile" / "x.html"], "cannot write"),
        ([*two_replays, "-o", tmp_path / "afile" / "site"], "cannot write"),
    ):
        out = craits("html", *args)
        assert out.returncode == 2, out.stderr
        assert out.stderr.startswith(f"craits: error: {says}") and len(out.stderr.splitlines()) == 1, out.stderr


def test_output_into_a_closed_pipe_is_no_traceback(two_replays: list[Path]) -> None:
    """``craits replay verify DIR | head -1``: the reader leaves early; craits stops quietly
    (exit 141, as a program ended by SIGPIPE), with no BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # (the reader is gone before the first line: deterministic)
    try:
        for args in (["verify", two_replays[0].parent], ["show", two_replays[0]]):
            done = subprocess.run(
                [sys.executable, "-m", "server.cli", "replay", *map(str, args)], stdout=write_end,
                stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                timeout=120, check=False,
            )
            assert done.returncode == 141, done.stderr
            assert done.stderr == "", done.stderr
    finally:
        os.close(write_end)
