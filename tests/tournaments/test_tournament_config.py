"""A tournament file: what it accepts, and that every mistake names its line and key."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from server.spec import Clocks
from tournaments.config import TournamentFileError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
name = "t"
table_size = 3
deals = 2
seed = 5

[flags]
short_game = true

[[bots]]
name = "a"
builtin = "random"

[[bots]]
name = "b"
builtin = "first"

[[bots]]
name = "c"
builtin = "greedy"
"""


def error_of(text: str) -> str:
    with pytest.raises(TournamentFileError) as caught:
        parse_config(textwrap.dedent(text), source="t.toml", base_dir=ROOT)
    return str(caught.value)


def replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


@pytest.mark.parametrize("path", ["tournaments/demo.toml", "tournaments/examples/classroom.toml",
                                  "tournaments/examples/local-quick.toml", "tournaments/examples/reference.toml"])
def test_the_bundled_files_are_valid(path: str) -> None:
    config = load_config(ROOT / path)
    assert 2 <= config.table_size <= 5 and len(config.bots) >= config.table_size
    assert config.clocks == Clocks() or path.endswith("demo.toml") or path.endswith("classroom.toml")


def test_a_good_file_gives_frozen_values() -> None:
    config = parse_config(GOOD, base_dir=ROOT)
    assert config.name == "t" and config.table_size == 3 and config.deals == 2 and config.seed == 5
    assert config.game.flags.short_game and config.game.players == 3
    assert [b.kind for b in config.bots] == ["builtin", "builtin", "builtin"]
    assert str(config.output_dir()) == "logs/t"
    with pytest.raises(AttributeError):
        config.name = "other"  # type: ignore[misc]


def test_a_file_saved_with_a_byte_order_mark_reads_the_same(tmp_path: Path) -> None:
    """Windows editors (Notepad) start a UTF-8 file with a BOM."""
    path = tmp_path / "t.toml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert load_config(path) == parse_config(GOOD, source=str(path), base_dir=tmp_path)


def test_syntax_errors_give_line_and_column() -> None:
    message = error_of(replace('seed = 5', 'seed = = 5'))
    assert message.startswith("t.toml:4:") and "syntax" in message


def test_unknown_keys_are_errors_with_a_suggestion() -> None:
    message = error_of(replace("deals = 2", "deal = 2"))
    assert message.startswith("t.toml:3: deal: unknown key") and "did you mean 'deals'" in message


def test_unknown_bot_keys_name_the_bot_and_line() -> None:
    message = error_of(replace('name = "b"\nbuiltin = "first"', 'name = "b"\nbuitin = "first"'))
    assert message.startswith("t.toml:15: bots[2].buitin: unknown key") and "'builtin'" in message


def test_a_command_given_as_one_string_is_refused_at_its_line() -> None:
    message = error_of(replace('name = "c"\nbuiltin = "greedy"', 'name = "c"\ncommand = "python bot.py"'))
    assert message.startswith("t.toml:19: bots[3].command: must be a list of strings")


def test_table_size_out_of_range() -> None:
    assert error_of(replace("table_size = 3", "table_size = 6")).startswith("t.toml:2: table_size: must be from 2 to 5")


def test_wrong_types_are_named() -> None:
    assert error_of(replace("seed = 5", 'seed = "five"')).startswith("t.toml:4: seed: must be a whole number")
    assert error_of(replace("deals = 2", "deals = 0")).startswith("t.toml:3: deals: must be from 1")


def test_flags_are_checked_by_the_engine() -> None:
    message = error_of(replace("short_game = true", "short_game = 1"))
    assert message == "t.toml:7: flags.short_game: flag short_game must be true or false, got 1"
    message = error_of(replace("short_game = true", "shortgame = true"))
    assert message.startswith("t.toml:7: flags.shortgame: unknown flag(s) shortgame")


def test_a_preset_must_fit_the_table() -> None:
    message = error_of(replace("table_size = 3", 'table_size = 3\npreset = "crates-partners"'))
    assert message.startswith("t.toml:3: preset: preset crates-partners takes exactly 4 players, not 3")
    assert "unknown preset 'poker'" in error_of(replace("table_size = 3", 'table_size = 3\npreset = "poker"'))


def test_too_few_bots_for_a_table() -> None:
    assert "2 bot(s) cannot fill a table of 3" in error_of(replace('[[bots]]\nname = "c"\nbuiltin = "greedy"\n', ""))


def test_bot_names_are_unique() -> None:
    """Both places are named by line: in a file of 100 bots, bots[57] alone is hard to find."""
    message = error_of(replace('name = "c"', 'name = "a"'))
    assert message == "t.toml:18: bots[3].name: 'a' is already the name of bots[1] (line 10)"


def test_a_bot_needs_a_way_to_play() -> None:
    message = error_of(replace('name = "c"\nbuiltin = "greedy"', 'name = "c"'))
    assert message.startswith("t.toml:17: bots[3]: bot 'c' needs a command") and "token" in message


@pytest.mark.parametrize("kinds", [("command", "token"), ("builtin", "token"), ("command", "builtin"),
                                   ("command", "builtin", "token")])
def test_a_bot_with_two_kinds_is_refused_at_its_line_saying_a_bot_is_one_of_the_three(kinds: tuple[str, ...]) -> None:
    """A bot is launched (command), played in-process (builtin) or connects on its own (token):
    a file that gives two (a command with a token was taken without a word) is refused at the bot."""
    lines = {"command": 'command = ["python", "-m", "craits_bot.examples.random_bot"]', "builtin": 'builtin = "greedy"',
             "token": 'token = "c-secret-token"'}
    message = error_of(replace('builtin = "greedy"', "\n".join(lines[k] for k in kinds)))
    assert message == (f"t.toml:17: bots[3]: bot 'c' has a {' and a '.join(kinds)}: a bot is one of the three, "
                       "a command (the referee launches it), a builtin (played in-process) or a token (it connects "
                       "on its own with it)")


def test_unknown_builtin() -> None:
    assert "unknown builtin 'smart'" in error_of(replace('builtin = "greedy"', 'builtin = "smart"'))


def test_short_tokens_and_shared_tokens_are_refused() -> None:
    assert "at least 8 characters" in error_of(replace('builtin = "greedy"', 'token = "abc"'))
    two = replace('builtin = "first"', 'token = "abcdefgh"').replace('builtin = "greedy"', 'token = "abcdefgh"')
    assert error_of(two).startswith("t.toml:19: bots[3].token: the same token as bots[2]")


def test_missing_name_and_missing_bots() -> None:
    assert "the key 'name' is missing" in error_of(GOOD.replace('name = "t"\n', ""))
    assert "no bots" in error_of(GOOD.split("[[bots]]")[0])


def test_clocks_take_positive_numbers_and_known_keys() -> None:
    config = parse_config(GOOD + "\n[clocks]\ndecision_s = 2\nmax_strikes = 5\n", base_dir=ROOT)
    assert config.clocks.decision_s == 2.0 and config.clocks.max_strikes == 5
    assert "must be a number of seconds above 0" in error_of(GOOD + "\n[clocks]\ndecision_s = -1\n")
    assert "did you mean 'decision_s'" in error_of(GOOD + "\n[clocks]\ndecision = 1\n")


def test_games_is_a_minimum_rounded_up_to_whole_deals() -> None:
    # 3 bots at tables of 3: one table, 3 games per deal; 10 games -> 4 deals (12 games).
    config = parse_config(replace("deals = 2", "games = 10"), base_dir=ROOT)
    assert config.deals == 4
    assert "not both" in error_of(replace("deals = 2", "deals = 2\ngames = 10"))


def test_python_means_this_interpreter_and_cwd_is_relative_to_the_file() -> None:
    text = replace('builtin = "greedy"', 'command = ["python", "-m", "bot"]\ncwd = "tournaments"')
    bot = parse_config(text, base_dir=ROOT).bots[2]
    assert bot.command == (sys.executable, "-m", "bot") and bot.cwd == str(ROOT / "tournaments")
    assert "is not a folder" in error_of(text.replace('cwd = "tournaments"', 'cwd = "nowhere"'))


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TournamentFileError, match="no such tournament file"):
        load_config(tmp_path / "missing.toml")


def test_launched_bots_are_kept_between_games_unless_the_file_says_restart_game() -> None:
    from server.transport.pool import RestartPolicy

    assert parse_config(GOOD).restart == RestartPolicy(every_game=False, after_games=0, above_mb=1024)
    keys = 'restart = "game"\nrestart_after_games = 50\nrestart_above_mb = 300\n'
    assert parse_config(keys + GOOD).restart == RestartPolicy(every_game=True, after_games=50, above_mb=300)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('restart = "always"', 't.toml:1: restart: must be "keep" (bots stay up between games) or "game"'),
        ("restart = 1", "t.toml:1: restart: must be a string, got 1"),
        ("restart_after_games = -1", "t.toml:1: restart_after_games: must be from 0 to"),
        ('restart_above_mb = "1G"', "t.toml:1: restart_above_mb: must be a whole number, got '1G'"),
        ("restrat = 1", "t.toml:1: restrat: unknown key; did you mean 'restart'?"),
    ],
)
def test_a_bad_restart_key_names_its_line_and_what_would_do(line: str, message: str) -> None:
    assert error_of(line + "\n" + GOOD).startswith(message)


def test_a_memory_limit_without_a_unit_too_small_for_any_bot_is_refused() -> None:
    """memory = 512 counts bytes: every launched bot would die as it starts and lose every game."""
    message = error_of(GOOD.replace("[flags]", "[limits]\nmemory = 512\n\n[flags]"))
    assert message == 't.toml:7: limits.memory: 512 is 512 bytes (a number without a unit counts bytes), too little ' \
                      'for any bot to start; write a size: "512 MiB"'
    assert parse_config(GOOD.replace("[flags]", "[limits]\nmemory = 536870912\n\n[flags]"), base_dir=ROOT).limits.memory \
        == 512 * 2**20


def test_a_path_starting_with_a_tilde_is_in_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No shell reads a tournament file: output = "~/results" was a folder named ~ in the current one."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "bots").mkdir()
    text = GOOD.replace('seed = 5', 'seed = 5\noutput = "~/results"').replace(
        'name = "c"\nbuiltin = "greedy"', 'name = "c"\ncommand = ["python", "-m", "x"]\ncwd = "~/bots"\nallow_read = ["~"]')
    config = parse_config(text, base_dir=ROOT)
    assert config.output_dir() == tmp_path / "results"
    assert config.bots[2].cwd == str(tmp_path / "bots") and config.bots[2].allow_read == (str(tmp_path),)


def test_bots_written_as_single_tables_are_pointed_to_double_brackets() -> None:
    message = error_of(GOOD.replace("[[bots]]", "[bots]"))
    assert message == ("t.toml:13:6: TOML syntax error: Cannot declare ('bots',) twice (each bot is a [[bots]] section, "
                       "with double brackets)")


def test_a_command_path_that_is_not_there_says_what_it_is_relative_to(tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    text = GOOD.replace('name = "c"\nbuiltin = "greedy"', 'name = "c"\ncommand = ["alice/run.sh"]\ncwd = "alice"')
    (why,) = parse_config(text, source="t.toml", base_dir=tmp_path).unrunnable
    assert why == (f"t.toml:19: bots[3].command: cannot run 'alice/run.sh': alice/run.sh does not exist (a command's "
                   f"paths are relative to its bot's cwd, {tmp_path / 'alice'})")


def test_duplicate_deals_are_refused_with_a_bot_that_connects_on_its_own() -> None:
    """Its one process would meet the deal again in the next rotation (issue 35)."""
    text = ('name = "dup"\ntable_size = 2\nduplicate = "table"\n[[bots]]\nname = "own"\ntoken = "own-token-1"\n'
            '[[bots]]\nname = "house"\nbuiltin = "random"\n')
    with pytest.raises(TournamentFileError, match=r"dup.toml:3: duplicate: duplicate deals need launched or builtin"):
        parse_config(text, source="dup.toml")
    assert parse_config(text.replace('duplicate = "table"\n', ""), source="dup.toml").duplicate == "none"
