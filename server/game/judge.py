"""How an answer's action id is judged: the one rule the referee and check-bot share.

An answer names one of the request's LegalAction ids; anything else is judged here
(the referee's fast path takes an offered id without calling this):

- the announced form of an offered play (``5S+one-card`` when ``5S`` was offered,
  the play not leaving one card) is taken as the plain play: rule 7.1 ignores such an
  announcement, as the engine does;
- an id that names no action is ``MALFORMED``: a strike, no rule;
- an id that names an action not legal now is ``ILLEGAL_ACTION``: a strike, and ``rule``
  says which rule it breaks.

``check-bot`` (``server.checker``) sends exactly these errors, so a bot that passes the
checker is judged the same by the referee (tests/checker/test_checker_judges_like_the_referee.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from craits.v1 import referee_pb2 as pb

from server.engine import ACTIONS, GameState, IllegalActionError
from server.engine.actions import MAX_ACTION_ID, is_announced_play

_IDS_SHOWN = 12


@dataclass(frozen=True, slots=True)
class Judgement:
    """What an answer's action id comes to: an action to apply, or a refusal (a strike)."""

    action: int | None
    """The action to apply; None when the answer is refused."""
    code: int = pb.ERROR_CODE_UNSPECIFIED
    """The ErrorCode of a refusal."""
    message: str = ""
    """What was wrong, for the bot (a refusal) or the report (an accepted id that was not offered)."""
    rule: str = ""
    """The rule broken (ILLEGAL_ACTION only)."""
    note: str = ""
    """A short note for the replay and the seat's events."""

    @property
    def refused(self) -> bool:
        return self.action is None

    @property
    def malformed(self) -> bool:
        return self.code == pb.ERROR_CODE_MALFORMED


def judge_answer(state: GameState, legal: Sequence[int], action_id: int) -> Judgement:
    """Judge ``action_id`` answered to the decision ``state`` is at (``legal``: its ids)."""
    if action_id in legal:
        return Judgement(action_id)
    if action_id > MAX_ACTION_ID or ACTIONS[action_id] is None:
        shown = ", ".join(str(a) for a in legal[:_IDS_SHOWN]) + (", ..." if len(legal) > _IDS_SHOWN else "")
        return Judgement(
            None,
            pb.ERROR_CODE_MALFORMED,
            f"action id {action_id} names no action; answer with one of the LegalAction ids of the request ({shown})",
            note=f"malformed answer: action id {action_id}",
        )
    if is_announced_play(action_id) and action_id - 1 in legal:
        return Judgement(
            action_id - 1,
            message=(
                f"{ACTIONS[action_id]} (id {action_id}) was not offered: taken as {ACTIONS[action_id - 1]} "
                "(an announcement on a play that does not leave one card is ignored, rule 7.1)"
            ),
            note=f"unoffered announcement {ACTIONS[action_id]}: taken as {ACTIONS[action_id - 1]}",
        )
    try:
        state.clone().apply(action_id)
    except IllegalActionError as err:
        return Judgement(None, pb.ERROR_CODE_ILLEGAL_ACTION, str(err), err.rule,
                         note=f"illegal answer: {ACTIONS[action_id]}")
    raise AssertionError(f"action {action_id} is not in the legal list but the engine applies it")
