"""What one seat was sent in a recorded game, rebuilt from its replay: every RefereeMessage
byte for byte as the referee serialised it, and the answers its bot gave (docs/rerun.md).

A game is its seed and its decisions, so the engine gives back every state the bot saw, and
:mod:`server.protocol.wire` serialises it exactly as the referee did (the same encoder). What
the engine cannot derive, each request's decision id and time bank and every refused answer,
the referee keeps in the decision's ``wire`` record; the texts of the errors come from the
functions the referee sends them with. ``tests/replay/test_transcript.py`` records the real
wire of games and compares.

Not rebuilt (listed in :attr:`Transcript.caveats` when the replay shows them): the stream's
Welcome (not part of a game), what a seat was sent around a disconnect and a reconnect, and
the errors for stale answers (answers to decisions already settled: counted, not recorded).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from craits.v1 import referee_pb2 as pb
from google.protobuf import json_format

from server.engine import GameState
from server.game.judge import judge_answer
from server.game.referee import aborted_text, refusal_text, struck_out_text, timeout_text
from server.game.seats import error_message, framed
from server.protocol import wire
from server.spec import Clocks
from server.storage.replay import Replay

_DEFAULT_CLOCKS = Clocks()


@dataclass(frozen=True, slots=True)
class Sent:
    """One RefereeMessage, serialised as it went on the wire."""

    data: bytes
    n: int | None = None
    """The decision it belongs to (a request, an error about an answer), else None."""

    @property
    def message(self) -> pb.RefereeMessage:
        return pb.RefereeMessage.FromString(self.data)


@dataclass(frozen=True, slots=True)
class Answered:
    """One answer the bot sent: accepted, or refused (an error and, unless struck out, the
    request again follow it)."""

    n: int
    answer: pb.Answer
    refused: bool = False


@dataclass(frozen=True, slots=True)
class Transcript:
    game_id: str
    seat: int
    bot: str
    items: tuple[Sent | Answered, ...]
    caveats: tuple[str, ...]
    """What this transcript does not rebuild exactly, in words (empty: every message is exact)."""

    @property
    def sent(self) -> list[Sent]:
        return [item for item in self.items if isinstance(item, Sent)]

    def delimited(self) -> bytes:
        """The referee's messages, each as a varint length then its bytes (protobuf's
        length-delimited stream: ``parseDelimitedFrom`` in Java, ``decodeDelimited`` in JS)."""
        return b"".join(wire.delimited(s.data) for s in self.sent)

    def json_lines(self) -> Iterator[str]:
        """A first line about the game, then one line per message and answer, in order.

        A message line carries the message as JSON and its exact bytes (``bytes``, base64);
        an answer line the answer as JSON, and ``refused``."""
        import json

        yield json.dumps({"from": "replay", "game_id": self.game_id, "seat": self.seat, "bot": self.bot,
                          "caveats": list(self.caveats)}, ensure_ascii=False)
        for item in self.items:
            if isinstance(item, Sent):
                yield json.dumps({
                    "from": "referee", "n": item.n,
                    "message": json_format.MessageToDict(item.message, preserving_proto_field_name=True),
                    "bytes": base64.b64encode(item.data).decode("ascii"),
                }, ensure_ascii=False)
            else:
                yield json.dumps({
                    "from": "bot", "n": item.n,
                    "answer": json_format.MessageToDict(item.answer, preserving_proto_field_name=True),
                    "refused": item.refused,
                }, ensure_ascii=False)


def replay_clocks(replay: Replay) -> Clocks:
    """The game's clocks as the referee had them, from the header's whole milliseconds."""
    entry: dict[str, Any] = replay.header.get("clocks") or {}
    d = _DEFAULT_CLOCKS

    def seconds(key: str, default_s: float) -> float:
        return entry[key] / 1000 if key in entry else default_s

    return Clocks(
        decision_s=seconds("decision_ms", d.decision_s),
        bank_s=seconds("bank_ms", d.bank_s),
        max_strikes=int(entry.get("max_strikes", d.max_strikes)),
        reconnect_grace_s=seconds("reconnect_grace_ms", d.reconnect_grace_s),
    )


def transcript(replay: Replay, seat: int) -> Transcript:
    """Every message the referee sent ``seat`` in ``replay``'s game, and the bot's answers.

    The replay must have been verified (``verify_replay``): this follows its decisions."""
    players = replay.config.players
    if not 0 <= seat < players:
        raise ValueError(f"seat {seat}: this game's seats are 0 to {players - 1}")
    return _Rebuild(replay, seat).run()


class _Rebuild:
    """The referee's side of one seat's stream, step by step as :class:`GameReferee` sends it."""

    def __init__(self, replay: Replay, seat: int) -> None:
        self.replay = replay
        self.seat = seat
        self.game_id = replay.game_id
        self.clocks = replay_clocks(replay)
        self.state = GameState(replay.config, replay.seed)
        self.encoder = wire.GameEncoder(self.state, self.game_id)
        self.items: list[Sent | Answered] = []
        self.caveats: list[str] = []
        self.strikes = 0
        self.history_hand = 0
        self.history_sent = 0

    def send(self, field: str, message: Any, n: int | None = None) -> None:
        self.items.append(Sent(framed(field, message), n))

    def error(self, n: int | None, code: int, text: str, **fields: Any) -> None:
        self.items.append(Sent(error_message(code, text, game_id=self.game_id, **fields).SerializeToString(), n))

    def run(self) -> Transcript:
        replay, state, seat = self.replay, self.state, self.seat
        header = replay.header
        self.send("game_start", wire.game_start(
            state.config, seat, game_id=self.game_id, seat_names=replay.bots, clock=self.clocks,
            tournament=str(header.get("tournament", ""))))
        if not state.game_over:
            self.send("hand_start", wire.hand_start(state, self.game_id))
        gone = False
        hands_done = 0
        unknown = 0
        builtin = is_builtin(replay, seat)
        for rec in replay.decisions:
            facts = rec.get("wire")
            if rec["seat"] == seat and facts is not None and not gone:
                gone = self.asked(rec, facts)
            elif rec["seat"] == seat and not gone and rec["status"] not in ("auto", "default") and not builtin:
                unknown += 1  # asked, but recorded by a referee that kept no wire facts
            state.apply(rec["action"])
            if len(state.hand_results) != hands_done and not gone:
                for result in state.hand_results[hands_done:]:
                    self.send("hand_end", self.encoder.hand_end(result, seat))
                if not state.game_over:
                    self.send("hand_start", wire.hand_start(state, self.game_id))
            hands_done = len(state.hand_results)
        if not gone:
            aborted = replay.aborted
            if aborted:
                code = pb.ERROR_CODE_SHUTTING_DOWN if "shutting down" in aborted else pb.ERROR_CODE_UNSPECIFIED
                self.error(None, code, aborted_text(aborted))
                self.caveats.append("the game was aborted: the code of its last Error is inferred from its reason")
            self.send("game_end", wire.game_end(state, self.game_id, aborted))
        if unknown:
            self.caveats.append(f"{unknown} request(s) to this seat are left out: the replay does not keep what "
                                "they carried (recorded before replays kept it)")
        report = _seat_report(replay, seat)
        if report.get("stale"):
            self.caveats.append(f"the bot sent {report['stale']} stale answer(s): the errors refusing them "
                                "are not in the replay")
        if report.get("status") == "never_connected":
            self.caveats.append("the bot did not connect in time: it was sent nothing before it came (if it came)")
        if int(report.get("disconnects") or 0) > int(gone):  # (a bot gone for good left once, at the end)
            self.caveats.append(f"the bot disconnected {report['disconnects']} time(s): what it was sent "
                                "around a reconnect is not rebuilt")
        bot = replay.bots[seat]
        return Transcript(self.game_id, seat, bot, tuple(self.items), tuple(self.caveats))

    def asked(self, rec: dict[str, Any], facts: dict[str, Any]) -> bool:
        """The request of decision ``rec`` and what followed it; True when the bot is gone after it."""
        state, seat, n = self.state, self.seat, rec["n"]
        max_strikes = self.clocks.max_strikes
        decision_id = facts["id"]
        history_from = self.history_sent if self.history_hand == state.hand_number else 0
        self.history_hand = state.hand_number
        self.history_sent = len(state.log) - state.hand_log_start
        if facts.get("away") or facts.get("reconnects"):
            self.caveats.append(f"decision {n}: the bot was away or reconnected; its requests are not rebuilt")
            return bool(rec["status"] == "disconnected")
        deadline = facts.get("deadline_ms", max(0, int(self.clocks.decision_s * 1000)))

        def request(deadline_ms: int, bank_ms: int, repeated: bool) -> None:
            self.send("decision", self.encoder.decision_request(
                seat, decision_id=decision_id, deadline_ms=deadline_ms, bank_ms=bank_ms, strikes=self.strikes,
                repeated=repeated, history_from=history_from), n)

        request(deadline, facts["bank_ms"], False)
        legal = state.legal_action_ids()
        for entry in facts.get("refused", ()):
            self.items.append(Answered(n, pb.Answer(game_id=self.game_id, decision_id=decision_id,
                                                    action_id=entry[0]), refused=True))
            judgement = judge_answer(state, legal, entry[0])
            if not judgement.refused:
                self.caveats.append(f"decision {n}: answer {entry[0]} is recorded as refused but is accepted now")
                continue
            self.strikes += 1
            self.error(n, judgement.code, refusal_text(judgement, self.strikes, max_strikes), rule=judgement.rule,
                       decision_id=decision_id, strikes=self.strikes)
            if len(entry) == 3:
                request(entry[1], entry[2], True)
        status = rec["status"]
        if status in ("ok", "bank"):
            think = rec.get("think_us")
            self.items.append(Answered(n, pb.Answer(
                game_id=self.game_id, decision_id=decision_id, action_id=rec.get("sent", rec["action"]),
                think_us=think if isinstance(think, int) and think > 0 else 0)))
        elif status == "timeout":
            self.strikes += 1
            self.error(n, pb.ERROR_CODE_TIMEOUT, timeout_text(rec["action"], self.strikes, max_strikes),
                       decision_id=decision_id, strikes=self.strikes)
            if self.strikes >= max_strikes:
                self.error(n, pb.ERROR_CODE_STRUCK_OUT, struck_out_text(self.strikes), strikes=self.strikes)
        elif status in ("illegal", "malformed") and self.strikes >= max_strikes:
            self.error(n, pb.ERROR_CODE_STRUCK_OUT, struck_out_text(self.strikes), strikes=self.strikes)
        elif status == "disconnected":
            return True
        return False


def is_builtin(replay: Replay, seat: int) -> bool:
    """True for a seat played in-process by a built-in bot (it is sent no messages)."""
    entry = replay.header["seats"][seat]
    return isinstance(entry, dict) and entry.get("via") == "builtin"


def _seat_report(replay: Replay, seat: int) -> dict[str, Any]:
    reports = replay.result.get("seat_reports") or []
    report = reports[seat] if seat < len(reports) else {}
    return report if isinstance(report, dict) else {}
