"""The Bot base class, the Request it receives, and the dispatcher between them.

A bot author writes one method, :meth:`Bot.choose`. Everything between the
referee's messages and that method (keeping each hand's history whole, turning
the bot's choice into an answer, surviving the bot's own exceptions) lives in
:class:`Dispatcher`, which does no I/O, so the runner, a test and an in-process
benchmark all drive a bot the same way.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from craits.v1 import referee_pb2 as pb

log = logging.getLogger("craits_bot")


class Request:
    """One decision to make. ``legal_actions`` is never empty and sorted by id.

    ``observation`` holds the hand's whole history, though the referee sends only the
    events since its previous request: the kit joins the two when a bot first reads
    ``observation`` (a bot that never looks at it, or looks only at the current message's
    fields, pays nothing for a long hand)."""

    __slots__ = (
        "_earlier",
        "_observation",
        "deadline_ms",
        "decision_id",
        "decision_number",
        "game",
        "game_id",
        "legal_actions",
        "repeated",
        "strikes",
        "time_bank_ms",
    )

    def __init__(
        self,
        observation: pb.Observation,
        legal_actions: list[pb.LegalAction],
        game_id: str,
        decision_id: int,
        deadline_ms: int,
        time_bank_ms: int,
        strikes: int,
        repeated: bool,
        game: pb.GameStart | None = None,
        earlier: Sequence[pb.Event] = (),
        decision_number: int = 0,
    ) -> None:
        self._observation = observation
        self._earlier = earlier
        """The hand's events before ``observation.history_start``, kept by the kit."""
        self.legal_actions = legal_actions
        self.game_id = game_id
        self.decision_id = decision_id
        """The wire's id, unique on the referee (echoed in the answer)."""
        self.decision_number = decision_number
        """The game's decision number (1, 2, ... over every seat's decisions): the one the replay,
        its viewer, the fault pages and ``craits replay rerun --from N`` use; 0 from an older referee."""
        self.deadline_ms = deadline_ms
        """Time for this decision before the time bank is used."""
        self.time_bank_ms = time_bank_ms
        self.strikes = strikes
        self.repeated = repeated
        """True when the referee sends the request again (after a reconnect or a refused answer)."""
        self.game = game
        """The game's GameStart (seat, players, preset, flags, clocks), if it was received."""

    @property
    def observation(self) -> pb.Observation:
        """What the bot may see: its hand, the top card, counts, every seat's hand size,
        totals, and the hand's whole history so far (the kit keeps it complete)."""
        if self._earlier:
            sent = self._observation
            whole = pb.Observation()
            whole.CopyFrom(sent)
            del whole.history[:]
            whole.history.extend(self._earlier)
            whole.history.extend(sent.history)
            whole.history_start = 0
            self._observation, self._earlier = whole, ()
        return self._observation

    @property
    def hand(self) -> list[pb.Card]:
        """The bot's cards (empty when the dealer names a suit blind)."""
        return list(self._observation.hand)

    @property
    def kind(self) -> int:
        """The pb.DecisionKind asked for (PLAY, ANSWER_COUNT, PLAY_AGAIN, NAME_SUIT, ...)."""
        return self._observation.decision

    @property
    def seat(self) -> int:
        return self._observation.seat

    @classmethod
    def from_message(
        cls, msg: pb.DecisionRequest, game: pb.GameStart | None = None, earlier: Sequence[pb.Event] = ()
    ) -> Request:
        """The Request for ``msg``; ``earlier``: the hand's events before its ``history_start``."""
        return cls(
            observation=msg.observation,
            legal_actions=list(msg.legal_actions),
            game_id=msg.game_id,
            decision_id=msg.decision_id,
            deadline_ms=msg.deadline_ms,
            time_bank_ms=msg.time_bank_ms,
            strikes=msg.strikes,
            repeated=msg.repeated_request,
            game=game,
            earlier=earlier,
            decision_number=msg.decision_number,
        )

    def __repr__(self) -> str:
        return (f"Request(game_id={self.game_id!r}, decision_number={self.decision_number}, "
                f"decision_id={self.decision_id}, kind={self.kind}, "
                f"legal_actions={len(self.legal_actions)})")


Choice = int | pb.LegalAction
"""What choose() returns: one of the request's LegalAction messages, or its id."""


class Bot:
    """Subclass this and write :meth:`choose`; the other methods are optional hooks.

    A complete bot::

        import random
        from craits_bot import Bot, run

        class MyBot(Bot):
            def choose(self, request):
                return random.choice(request.legal_actions)

        run(MyBot())
    """

    name: str = ""
    """Name sent to the referee (default: the class name); --name overrides it."""
    about: str = ""
    """Free text sent to the referee: version, language, author."""

    def choose(self, request: Request) -> Choice:
        """Return one of ``request.legal_actions`` (or its ``id``)."""
        raise NotImplementedError(f"{type(self).__name__} must define choose(self, request)")

    def on_game_start(self, game: pb.GameStart) -> None:
        """A game begins: your seat, the players, the preset, flags and clocks.

        One process may play many games one after another (a tournament keeps launched
        bots running between games): reset whatever the bot remembers about a game here."""

    def on_hand_start(self, hand: pb.HandStart) -> None:
        """A hand begins: its number, the dealer, cards dealt to each."""

    def on_hand_end(self, hand: pb.HandEnd) -> None:
        """A hand ended: why, scores, totals and its whole history."""

    def on_game_end(self, game: pb.GameEnd) -> None:
        """A game ended: final totals and placings (or ``aborted``)."""

    def on_error(self, error: pb.Error) -> None:
        """The referee refused something or a clock ran out (the runner logs it too)."""


def action_id(choice: object, request: Request) -> int:
    """The legal action id that ``choice`` names; ValueError/TypeError saying why not."""
    if isinstance(choice, pb.LegalAction):
        choice = choice.id
    if isinstance(choice, bool) or not isinstance(choice, int):
        raise TypeError(
            f"choose() returned {choice!r} ({type(choice).__name__}); "
            "return one of request.legal_actions or its .id"
        )
    legal = [a.id for a in request.legal_actions]
    if choice not in legal:
        offered = ", ".join(f"{a.id} ({a.text})" for a in request.legal_actions)
        raise ValueError(f"choose() returned {choice}, which is not a legal action id; legal: {offered}")
    return choice


def _where(err: BaseException) -> str:
    """file:line of the innermost frame of ``err``: enough to find a bug from one log line."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno}"


def decision_words(number: int, decision_id: int) -> str:
    """How the kit's logs name a decision: the game's number first, the one ``craits replay
    rerun --from N`` takes (a student reruns a fault from their log), then the wire's id."""
    return f"decision {number} (id {decision_id})" if number else f"decision id {decision_id}"


def _first_line(err: BaseException) -> str:
    """``Type: message``, its first line only, for the referee (Answer.bot_error)."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


_RULER = "!" * 72


@dataclass
class _Game:
    start: pb.GameStart | None = None
    hand_number: int = 0
    events: list[pb.Event] = field(default_factory=list)
    """The hand's events received so far (the messages' own, not copies)."""
    asked: tuple[int, int] = (0, 0)
    """The last request's (decision_id, decision_number): a referee Error names the id only."""
    failures: dict[str, int] = field(default_factory=dict)
    """How often choose() failed at each place in this game (each traceback printed once a game)."""


class Dispatcher:
    """Routes referee messages to a bot and turns its choices into answers. No I/O.

    ``handle`` takes one ``pb.RefereeMessage`` and returns the ``pb.BotMessage``
    to send back, or None. It never raises because of the bot: an exception in a
    hook is logged, an exception or an unusable value from ``choose`` is logged
    and answered with the first legal action.
    """

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.games: dict[str, _Game] = {}
        self.games_ended = 0
        self.decisions = 0
        self.fallbacks = 0
        """Answers the kit chose because choose() failed."""
        self.welcome: pb.Welcome | None = None

    def handle(self, msg: pb.RefereeMessage) -> pb.BotMessage | None:
        which = msg.WhichOneof("message")
        if which == "decision":
            return self._decide(msg.decision)
        if which == "welcome":
            self.welcome = msg.welcome
        elif which == "game_start":
            self.games[msg.game_start.game_id] = _Game(start=msg.game_start)
            self._hook("on_game_start", msg.game_start)
        elif which == "hand_start":
            game = self.games.setdefault(msg.hand_start.game_id, _Game())
            game.hand_number = msg.hand_start.hand_number
            game.events = []
            self._hook("on_hand_start", msg.hand_start)
        elif which == "hand_end":
            self._hook("on_hand_end", msg.hand_end)
        elif which == "game_end":
            self.games.pop(msg.game_end.game_id, None)
            self.games_ended += 1
            self._hook("on_game_end", msg.game_end)
        elif which == "error":
            self._hook("on_error", msg.error)
        return None

    def request_for(self, msg: pb.DecisionRequest) -> Request:
        """The Request for ``msg``, its observation's history made whole for the hand when read.

        The referee sends only the events since its previous request to this seat
        (from index ``history_start``); the kit keeps the rest.
        """
        game = self.games.setdefault(msg.game_id, _Game())
        obs = msg.observation
        if obs.hand_number != game.hand_number:
            game.hand_number = obs.hand_number
            game.events = []
        events = game.events
        start = obs.history_start
        if start > len(events):
            log.warning(
                "game %s: history jumps from %d to %d events (missed messages?)", msg.game_id, len(events), start
            )
            start = len(events)
        earlier = events[:start]
        del events[start:]
        events.extend(obs.history)
        game.asked = (msg.decision_id, msg.decision_number)
        return Request.from_message(msg, game.start, earlier)

    def decision_words(self, game_id: str, decision_id: int) -> str:
        """``decision 57 (id 48213)`` for the game's last request, else ``decision id 48213``."""
        game = self.games.get(game_id)
        number = game.asked[1] if game is not None and game.asked[0] == decision_id else 0
        return decision_words(number, decision_id)

    def _decide(self, msg: pb.DecisionRequest) -> pb.BotMessage:
        received = time.perf_counter_ns()
        request = self.request_for(msg)
        self.decisions += 1
        failure: pb.BotError | None = None
        try:
            choice = self.bot.choose(request)
        except Exception as err:  # a bot's bug must not cost it the game, nor go unseen
            failure = pb.BotError(message=_first_line(err), where=_where(err))
            chosen = self._fallback(request, f"choose() failed at {failure.where}: {failure.message}", err)
        else:
            try:
                chosen = action_id(choice, request)
            except (TypeError, ValueError) as err:
                failure = pb.BotError(message=_first_line(err))
                chosen = self._fallback(request, str(err))
        think_us = (time.perf_counter_ns() - received) // 1000
        if log.isEnabledFor(logging.DEBUG):
            chosen_text = next(a.text for a in request.legal_actions if a.id == chosen)
            log.debug(
                "game %s %s (%s): hand %s, top %s -> %s",
                msg.game_id, decision_words(msg.decision_number, msg.decision_id), pb.DecisionKind.Name(request.kind),
                " ".join(c.text for c in request.hand) or "(hidden)", request.observation.top_card.text,
                chosen_text,
            )
        answer = pb.Answer(game_id=msg.game_id, decision_id=msg.decision_id, action_id=chosen, think_us=think_us)
        if failure is not None:  # the referee records it as a fault of the bot's (bot_errors)
            answer.bot_error.CopyFrom(failure)
        return pb.BotMessage(answer=answer)

    def _fallback(self, request: Request, why: str, err: BaseException | None = None) -> int:
        """The first legal action, in place of a failed choice; the failure said loudly.

        The first failure at each place in the bot's code in a game prints its whole traceback
        between two rulers (a student's terminal scrolls fast; a kept bot's output is shown game
        by game on the participants' pages, so each game's has it); later ones at the same place
        one line each, counted. The referee is told too (Answer.bot_error)."""
        self.fallbacks += 1
        first = request.legal_actions[0]
        key = why if err is None else f"{type(err).__name__} at {_where(err)}"
        failures = self.games.setdefault(request.game_id, _Game()).failures
        seen = failures[key] = failures.get(key, 0) + 1
        if seen == 1:
            trace = "".join(traceback.format_exception(err)) if err is not None else why + "\n"
            log.error(
                "\n%s\nYOUR BOT FAILED (game %s, %s): %s\nThe kit answered the first legal action %r "
                "instead and told the referee, which counts it as a bot error.\n%s%s",
                _RULER, request.game_id, decision_words(request.decision_number, request.decision_id), why,
                first.text, trace, _RULER,
            )
        else:
            log.error("game %s, %s: %s; answered the first legal action %r instead (failure %d at this place; "
                      "its traceback was printed the first time in this game)", request.game_id,
                      decision_words(request.decision_number, request.decision_id), why, first.text, seen)
        return first.id

    def _hook(self, name: str, payload: object) -> None:
        try:
            getattr(self.bot, name)(payload)
        except Exception as err:
            log.error("%s() failed at %s: %s: %s (ignored)", name, _where(err), type(err).__name__, err)
