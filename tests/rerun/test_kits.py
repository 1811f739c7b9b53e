"""The kits run a bot against a messages file offline (no referee): the same answers as in the
game for the same bot, the first difference for another, the bot's exceptions raised."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from craits_bot import Bot
from craits_bot.offline import replay_messages

from server.game.transcript import transcript
from server.storage.replay import read_replay
from tests.rerun.conftest import WireGame

ROOT = Path(__file__).resolve().parents[2]


class SeededBot(Bot):
    """What the recording bot of seat 2 did (it only ever answered late, never wrongly)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, request):
        return self.rng.choice(request.legal_actions)


class FirstBot(Bot):
    def choose(self, request):
        return request.legal_actions[-1]


@pytest.fixture(scope="module")
def seat2(wire_game: WireGame, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    rebuilt = transcript(read_replay(wire_game.replay), 2)
    folder = tmp_path_factory.mktemp("kits")
    lines, binary = folder / "seat2.jsonl", folder / "seat2.bin"
    lines.write_text("".join(line + "\n" for line in rebuilt.json_lines()))
    binary.write_bytes(rebuilt.delimited())
    return lines, binary


def test_the_same_bot_gives_the_recorded_answer_at_every_request(seat2: tuple[Path, Path]) -> None:
    steps = replay_messages(SeededBot(1002), seat2[0])
    assert steps and all(step.recorded is not None for step in steps)
    assert steps.first_difference() is None
    assert [step.request.decision_number for step in steps] == [step.n for step in steps]  # the replay's number
    step = steps.at(steps[3].n)
    assert step.request.observation.history_start == 0 and step.request.observation.history  # the whole hand


def test_another_bot_is_shown_at_its_first_difference(seat2: tuple[Path, Path]) -> None:
    steps = replay_messages(FirstBot(), seat2[0])
    first = steps.first_difference()
    assert first is not None and first.chosen.id == first.request.legal_actions[-1].id != first.recorded


def test_the_bots_exception_is_raised_and_the_binary_form_has_no_answers(seat2: tuple[Path, Path]) -> None:
    class Broken(Bot):
        def choose(self, request):
            raise ZeroDivisionError("the bug")

    with pytest.raises(ZeroDivisionError, match="the bug") as raised:
        replay_messages(Broken(), seat2[0])
    first = replay_messages(SeededBot(1002), seat2[0])[0]
    # the traceback says which decision: steps.at(n), rerun --from n
    assert raised.value.__notes__ == [
        f"raised by choose() at decision {first.n} (id {first.request.decision_id}) of {seat2[0]}"]
    steps = replay_messages(SeededBot(1002), seat2[1])
    assert len(steps) == len(replay_messages(SeededBot(1002), seat2[0]))
    assert all(step.n is None and step.recorded is None for step in steps)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_javascript_kit_runs_a_strategy_offline(seat2: tuple[Path, Path], tmp_path: Path) -> None:
    script = tmp_path / "t.js"
    script.write_text(f"""
const {{ replayMessages }} = require({json.dumps(str(ROOT / 'clients/js/offline.js'))});
const last = {{ choose: (r) => r.legal_actions[r.legal_actions.length - 1] }};
(async () => {{
  const lines = await replayMessages(last, {json.dumps(str(seat2[0]))});
  const binary = await replayMessages(last, {json.dumps(str(seat2[1]))});
  const diff = lines.firstDifference();
  console.log(JSON.stringify({{ steps: lines.length, binary: binary.length, n: diff.n,
    same: lines.at(diff.n).same, recorded: lines.filter((s) => s.recorded !== null).length,
    numbered: lines.every((s) => s.request.decision_number === s.n) }}));
}})();
""")
    done = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60, check=True)
    found = json.loads(done.stdout)
    python = replay_messages(FirstBot(), seat2[0])
    assert found == {"steps": len(python), "binary": len(python), "n": python.first_difference().n,
                     "same": False, "recorded": len(python), "numbered": True}
