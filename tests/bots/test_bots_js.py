"""The JavaScript bot: its own unit tests, and the same choices as the Python heuristic.

Requests are built from real engine states by ``server.protocol.wire``, serialized, and
decoded on the Node side by the bot's own gRPC deserializer, so the JavaScript
strategy sees exactly what it sees in a game.
"""

from __future__ import annotations

import base64
import json
import random
import subprocess

from craits.v1 import referee_pb2 as pb
from craits_bot import Dispatcher
from craits_bot.examples.heuristic_bot import HeuristicBot

from server.engine import new_game
from server.protocol import wire
from tests.bots.commands import ROOT, need_node

JS_CHOOSE = ROOT / "tests" / "bots" / "js_choose.js"


def test_the_js_unit_tests_pass() -> None:
    need_node()
    done = subprocess.run(
        ["node", "--test", "test/"], cwd=ROOT / "clients" / "js", capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def sample_requests(count: int) -> list[pb.RefereeMessage]:
    """Decision requests from random games of every preset, seen by whoever acts."""
    out: list[pb.RefereeMessage] = []
    rng = random.Random(4)
    presets = [("craits", 4, {}), ("craits", 2, {}), ("craits", 3, {"face_cards": True}),
               ("crates-partners", 4, {}), ("crazy-eights", 3, {}), ("craits", 6, {"voluntary_draw": True})]
    seed = 0
    while len(out) < count:
        preset, players, flags = presets[seed % len(presets)]
        state = new_game(preset, players, seed=seed, short_game=True, **flags) if preset != "crazy-eights" \
            else new_game(preset, players, seed=seed)
        seed += 1
        while state.decision is not None and len(out) < count:
            ids = state.legal_action_ids()
            if len(ids) > 1:
                msg = wire.decision_request(state, state.to_act, game_id=f"g{seed}", decision_id=len(out) + 1,
                                            deadline_ms=1000, bank_ms=1000, strikes=0)
                out.append(pb.RefereeMessage(decision=msg))
            state.apply(rng.choice(ids))
    return out


def test_the_js_heuristic_chooses_exactly_as_the_python_heuristic() -> None:
    need_node()
    messages = sample_requests(1500)
    python = Dispatcher(HeuristicBot())
    expected = [python.handle(m).answer.action_id for m in messages]  # type: ignore[union-attr]
    lines = "\n".join(base64.b64encode(m.SerializeToString()).decode() for m in messages)
    done = subprocess.run(["node", str(JS_CHOOSE), "heuristic"], input=lines, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["fallbacks"] == 0
    assert python.fallbacks == 0
    mismatches = [(i, e, j) for i, (e, j) in enumerate(zip(expected, result["chosen"], strict=True)) if e != j]
    assert mismatches == []
