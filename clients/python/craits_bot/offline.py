"""Run a bot against a recorded game's messages, with no referee: a unit test of a decision.

``craits replay messages REPLAY --seat S -o seat.jsonl`` writes every message the referee
sent that seat, exactly as sent, and the answers its bot gave. :func:`replay_messages` feeds
them to a bot, in order, as the runner would, and returns one :class:`Step` per request::

    from craits_bot.offline import replay_messages

    def test_my_bot_keeps_its_eight_at_decision_57():
        step = replay_messages(MyBot(), "tests/seat1.jsonl").at(57)
        assert step.chosen.text != "8H:clubs"

Exceptions from ``choose`` are raised (the runner would answer for the bot and log them):
a test should see them. The binary form (``--format binary``) works too, without the
recorded answers.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from craits.v1 import referee_pb2 as pb

from .bot import Bot, Dispatcher, Request, action_id, decision_words


@dataclass
class Step:
    """One request the bot answered offline, beside the answer recorded in the game."""

    n: int | None
    """The decision's number in the replay (``craits replay rerun --from N``); None in binary files."""
    request: Request
    answer: int
    """The action id the bot chose now."""
    recorded: int | None
    """The action id the bot answered in the game (None: none was recorded, e.g. a timeout)."""

    @property
    def chosen(self) -> pb.LegalAction:
        return next(a for a in self.request.legal_actions if a.id == self.answer)

    @property
    def same(self) -> bool:
        return self.recorded is None or self.recorded == self.answer


class Steps(list[Step]):
    """The steps of a run, in order."""

    def at(self, n: int) -> Step:
        """The (first) request of decision ``n``."""
        for step in self:
            if step.n == n:
                return step
        raise KeyError(f"no request of decision {n} in these messages (they hold {self.numbers()})")

    def numbers(self) -> str:
        ns = [s.n for s in self if s.n is not None]
        return f"decisions {ns[0]} to {ns[-1]}" if ns else "no numbered decisions"

    def first_difference(self) -> Step | None:
        """The first request answered otherwise than in the game, if any."""
        return next((step for step in self if not step.same), None)


def read_messages(path: str | os.PathLike[str]) -> Iterator[tuple[pb.RefereeMessage | pb.Answer, int | None]]:
    """The items of a messages file, in order: (RefereeMessage or the bot's Answer, decision number)."""
    data = Path(path).read_bytes()
    if data[:1] == b"{":
        for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                source = item["from"]
                if source == "referee":
                    yield pb.RefereeMessage.FromString(base64.b64decode(item["bytes"])), item.get("n")
                elif source == "bot" and not item.get("refused"):
                    yield pb.Answer(action_id=int(item["answer"].get("action_id", 0))), item.get("n")
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                raise ValueError(f"{path}: line {number} is not a messages line: {err}") from None
        return
    for message in split_delimited(data, str(path)):
        yield pb.RefereeMessage.FromString(message), None


def split_delimited(data: bytes, name: str = "the data") -> Iterator[bytes]:
    """The messages of a length-delimited stream (each a varint length, then its bytes)."""
    i = 0
    while i < len(data):
        size = shift = 0
        while True:
            if i >= len(data) or shift > 63:
                raise ValueError(f"{name}: cut short at byte {i}: not a length-delimited messages file")
            byte = data[i]
            i += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if i + size > len(data):
            raise ValueError(f"{name}: cut short at byte {i}: not a length-delimited messages file")
        yield data[i:i + size]
        i += size


def replay_messages(bot: Bot, path: str | os.PathLike[str]) -> Steps:
    """Feed ``bot`` every message of ``path`` in order and return a :class:`Step` per request."""
    dispatcher = Dispatcher(bot)
    steps = Steps()
    for item, n in read_messages(path):
        if isinstance(item, pb.Answer):
            if steps and steps[-1].recorded is None:
                steps[-1].recorded = item.action_id
            continue
        if not item.HasField("decision"):
            dispatcher.handle(item)
            continue
        request = dispatcher.request_for(item.decision)
        try:
            chosen = action_id(bot.choose(request), request)
        except Exception as err:
            if hasattr(err, "add_note"):  # (Python 3.11+) say where, in the numbers rerun and the viewer use
                number = n if n is not None else request.decision_number
                where = decision_words(number, request.decision_id) if number else f"request {len(steps) + 1}"
                err.add_note(f"raised by choose() at {where} of {path}")
            raise
        steps.append(Step(n, request, chosen, None))
    return steps
