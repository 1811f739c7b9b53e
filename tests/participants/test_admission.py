"""A version's way in: its build runs in the sandbox within limits (a build that loops, forks
or fills memory is killed and reported), then the checker and a validation game; a version
refused at any step keeps no folder and says why, and an interrupted one is built again."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest

from participants import admission
from participants.admission import (
    ATTEMPTS,
    INTERRUPTED,
    BuildLimits,
    Outcome,
    admit,
    admit_pending,
    build,
    refuse_pending,
)
from participants.roster import Roster, Version
from server.web.participants import Builder
from tests.participants.uploads import MANIFEST, RANDOM_BOT, good_bot, zip_of

SMALL = BuildLimits(time_s=3.0, memory=128 * 2**20, processes=16, output=4096)


@pytest.fixture
def roster(tmp_path: Path) -> Roster:
    made = Roster.create(tmp_path / "roster")
    made.add("alice")
    return made


def _build(tmp_path: Path, command: str) -> tuple[bool, str]:
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    return build(folder, ("sh", "-c", command), SMALL)


def test_a_build_writes_its_folder_and_nothing_else(tmp_path: Path) -> None:
    ok, log = _build(tmp_path, "echo hello > built.txt; cat built.txt; touch /usr/evil 2>&1; ls /root 2>&1; exit 0")
    assert ok, log
    assert (tmp_path / "work" / "built.txt").read_text() == "hello\n"
    assert "hello" in log and "built in" in log
    assert not Path("/usr/evil").exists()


def test_a_build_has_no_network(tmp_path: Path) -> None:
    ok, log = _build(tmp_path, "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 2)\"")
    assert not ok and "Network is unreachable" in log


def test_a_build_that_loops_is_killed_at_its_time_limit(tmp_path: Path) -> None:
    ok, log = _build(tmp_path, "while :; do :; done")
    assert not ok and log.rstrip().endswith("[craits: build killed: time limit 3 s]")


def test_a_build_that_fills_memory_is_killed_at_its_limit(tmp_path: Path) -> None:
    ok, log = _build(tmp_path, "python3 -c \"x = bytearray(1 << 30); print('allocated')\"")
    assert not ok and "allocated" not in log
    assert "memory limit 128 MiB" in log or "MemoryError" in log


def test_a_build_that_forks_is_stopped_at_its_process_limit(tmp_path: Path) -> None:
    ok, log = _build(tmp_path, "for i in $(seq 40); do sleep 5 & done; wait")
    assert not ok and ("fork" in log.lower() or "resource temporarily unavailable" in log.lower()), log


def test_a_build_that_talks_too_much_is_cut_at_its_output_limit(tmp_path: Path) -> None:
    ok, log = _build(tmp_path, "yes craits | head -c 100000")
    assert ok and log.count("craits\n") < 700 and "the rest is not kept" in log


def test_an_admitted_version_has_its_folder_and_the_checkers_and_games_word(roster: Roster) -> None:
    version = roster.submit("alice", good_bot(build="echo compiled > built.txt"), "a.zip")
    outcome = admit(roster, version)
    assert outcome.status == "admitted", outcome.reason
    folder = roster.version_dir(version)
    assert (folder / "built.txt").read_text() == "compiled\n"
    assert "0 failed" in outcome.report
    assert outcome.validation is not None and outcome.validation["status"] == "ok"
    assert list((roster.folder / "tmp").iterdir()) == []


def test_a_javascript_strategy_from_the_first_bot_guide_is_admitted_as_one_file(roster: Roster) -> None:
    """The guide's JavaScript bot is a strategy module: uploaded alone, it runs in the kit's
    bot.js (readable in the sandbox, as the Python kit is), by a name no path of this machine's."""
    strategy = (b"module.exports = { name: 'my-js-bot', choose(request) {\n"  # (the guide's first)
                b"  const actions = request.legal_actions;\n"
                b"  return actions[Math.floor(Math.random() * actions.length)];\n} };\n")
    version = roster.submit("alice", strategy, "my_strategy.js")
    outcome = admit(roster, version)
    assert outcome.status == "admitted", outcome.reason + outcome.report
    assert outcome.command == ("craits-js-bot", "--strategy", "my_strategy.js")


@pytest.mark.parametrize(("files", "said"), [
    ({"bot.toml": MANIFEST + 'build = "echo bot.c:1: error: expected; exit 7"\n', "bot.py": RANDOM_BOT},
     "the build failed: exit status 7 after"),
    ({"bot.toml": MANIFEST + 'build = "echo bot.c:1: error: expected; exit 7"\n', "bot.py": RANDOM_BOT},
     "(its last line of output: bot.c:1: error: expected)"),  # (craits submit prints it: no page to open)
    ({"bot.toml": 'command = ["python", "missing.py"]\n'}, "bot.toml: command: no such file missing.py"),
    ({"bot.toml": MANIFEST, "bot.py": "import sys\nsys.exit(3)\n"}, "the conformance checker failed"),
    ({"bot.toml": MANIFEST, "bot.py": "def broken(:\n"},  # (the reason, which craits submit prints, says why)
     "the conformance checker failed: hello (the bot exited with code 1 before connecting to CRAITS_SERVER; "
     "its last line of output: SyntaxError: invalid syntax at bot.py:1)"),
    ({"readme.txt": "hi"}, "no bot.toml"),
])
def test_a_refused_version_says_why_and_keeps_no_folder(roster: Roster, files: dict[str, str], said: str) -> None:
    version = roster.submit("alice", zip_of(files), "a.zip")
    [(_, outcome)] = admit_pending(roster)
    assert outcome.status == "refused" and said in outcome.reason
    stored = roster.version("alice", version.number)
    assert stored is not None and stored.status == "refused" and said in stored.reason
    assert not roster.version_dir(version).exists()
    assert roster.active() == []


def test_a_build_interrupted_by_a_crash_leaves_no_half_version_and_is_built_again(roster: Roster) -> None:
    version = roster.submit("alice", good_bot(), "a.zip")
    half = roster.version_dir(version)  # what a crash between rename and verdict would leave
    half.mkdir(parents=True)
    (half / "bot.py").write_text("half")
    (roster.folder / "tmp" / "build-1-dead").mkdir()
    (roster.folder / "tmp" / f"attempt-{version.id}").write_text("1")  # (the build a restart cut off)
    assert roster.active() == []  # (still building: not playable)
    [(_, outcome)] = admit_pending(roster)
    assert outcome.status == "admitted"
    assert (roster.version_dir(version) / "bot.py").read_text() == RANDOM_BOT
    assert list((roster.folder / "tmp").iterdir()) == []  # (the cut-off attempt's folder and marker too)


def test_a_build_cut_off_again_and_again_is_refused_and_a_server_fault_stops_only_its_version(
        roster: Roster, monkeypatch: pytest.MonkeyPatch) -> None:
    roster.import_csv("name\nbob\ncarol\n")  # (one upload of each waits: three students')
    cut = roster.submit("alice", good_bot(), "a.zip")
    (roster.folder / "tmp" / f"attempt-{cut.id}").write_text(str(ATTEMPTS))
    faulty = roster.submit("bob", good_bot(), "b.zip")
    fine = roster.submit("carol", good_bot(), "c.zip")
    built = []

    def admit_(roster: Roster, version: Version, **_: object) -> Outcome:
        built.append(version.id)
        if version.id == faulty.id:
            raise sqlite3.OperationalError("database is locked")
        return Outcome("admitted")

    monkeypatch.setattr(admission, "admit", admit_)
    outcomes = {v.id: o for v, o in admit_pending(roster)}
    assert built == [faulty.id, fine.id]  # (the one cut off too often is not built again)
    assert outcomes[cut.id] == Outcome("refused", INTERRUPTED)
    assert outcomes[faulty.id].status == "refused"
    assert "the server failed while checking it (OperationalError: database is locked)" in outcomes[faulty.id].reason
    assert outcomes[fine.id].status == "admitted"
    assert [v.status for v in roster.versions()] == ["refused", "refused", "admitted"]
    assert not list((roster.folder / "tmp").glob("attempt-*"))


def test_a_builder_that_keeps_dying_refuses_the_waiting_versions_saying_so(roster: Roster) -> None:
    waiting = roster.submit("alice", good_bot(), "a.zip")
    refused: list[str] = []

    async def run() -> None:
        builder = Builder(roster.folder, module="participants.no_such_module", give_up=refused.append)
        builder.kick()
        while builder._task is not None:  # (every run fails at once: no timing involved)
            await asyncio.sleep(0.05)

    asyncio.run(run())
    assert len(refused) == 1 and "exit status 1" in refused[0] and "No module named" in refused[0]
    refuse_pending(roster, refused[0])
    stored = roster.version_by_id(waiting.id)
    assert stored is not None and stored.status == "refused"
    assert stored.reason.startswith("the server could not build it (its builder stopped: exit status 1")


def test_the_organizers_limits_are_the_ones_a_build_gets(roster: Roster) -> None:
    roster.set_limits({"build_time_s": 1.0})
    roster.submit("alice", good_bot(build="sleep 20"), "a.zip")
    [(_, outcome)] = admit_pending(roster)
    assert outcome.status == "refused" and outcome.reason == "build killed: time limit 1 s"


RAISING_BOT = RANDOM_BOT.replace(  # (one decision in ten raises: the checker passes it, the game shows it)
    "        return self.rng.choice(request.legal_actions)",
    "        self.asked = getattr(self, 'asked', 0) + 1\n"
    "        if self.asked % 10 == 0:\n            return 1 / 0\n"
    "        return self.rng.choice(request.legal_actions)", 1)


def test_a_version_whose_validation_game_had_bot_errors_is_admitted_with_a_warning_or_refused_as_set(
    roster: Roster, capsys: pytest.CaptureFixture[str],
) -> None:
    """A bot that raises on every decision plays a whole game (its kit answers for it): it was
    admitted without a word. Now its reason says what went wrong, with the first error's place;
    with validation_faults=refuse it is refused."""
    from server.cli import main as craits

    roster.submit("alice", zip_of({"bot.toml": MANIFEST, "bot.py": RAISING_BOT}), "a.zip")
    [(_, outcome)] = admit_pending(roster)
    assert outcome.status == "admitted", outcome.reason
    assert re.match(r"warning: its validation game had \d+ bot errors \(first: ZeroDivisionError: division by zero"
                    r".* at bot\.py:\d+\)", outcome.reason), outcome.reason
    assert outcome.validation is not None and outcome.validation["faults"]["bot_errors"] > 0
    assert str(roster.folder) not in outcome.report  # (the student's paths, not the server's)
    from participants.dashboard import rows

    assert [row.latest for row in rows(roster, [], [])] == ["v1 admitted with a warning"]  # (the dashboard says so)
    assert craits(["roster", "set", str(roster.folder), "validation_faults=refuse"]) == 0
    assert "a validation game with faults: refused" in capsys.readouterr().out
    roster.submit("alice", zip_of({"bot.toml": MANIFEST, "bot.py": RAISING_BOT}), "b.zip")
    [(_, outcome)] = admit_pending(roster)
    assert outcome.status == "refused" and outcome.reason.startswith("its validation game had ")
    assert craits(["roster", "set", str(roster.folder), "validation_faults=maybe"]) == 2
    assert "validation_faults: warn (admit with a warning) or refuse" in capsys.readouterr().err
    roster.submit("alice", good_bot(), "c.zip")  # (a clean one: no warning)
    [(_, outcome)] = admit_pending(roster)
    assert (outcome.status, outcome.reason) == ("admitted", "")


def test_a_refused_build_shows_the_students_paths_not_the_servers(roster: Roster) -> None:
    roster.submit("alice", zip_of({"bot.toml": MANIFEST + 'build = "pwd; echo $PWD/bot.c:2: error: no; exit 1"\n',
                                   "bot.py": RANDOM_BOT}), "a.zip")
    [(_, outcome)] = admit_pending(roster)
    assert outcome.status == "refused" and "(its last line of output: bot.c:2: error: no)" in outcome.reason
    assert str(roster.folder) not in outcome.build_log and str(roster.folder) not in outcome.reason
