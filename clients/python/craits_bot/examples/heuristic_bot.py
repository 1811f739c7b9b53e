"""A bot with a plan: a few rules of thumb a good human player uses.

    python -m craits_bot.examples.heuristic_bot [--server HOST:PORT] [--token T] [--name N]

It looks only at its own observation (its hand, the table, the others' hand sizes):

1. Say "one card" whenever the game offers it: forgetting costs a turn.
2. Keep the wild 8s and 9s for when nothing else can be played, or until
   another player is down to one card: then an 8 (50 points) is a liability.
3. Otherwise shed the card that would cost the most if the hand ended now
   (an 8 is 50, a 5 or a 6 is 30 ... an ace 1), which also answers a count with a
   2 before an ace.
4. Keep threes: each scores only 3 and covers another card at the end.
5. Play a 6 only when another card can follow it (else a 6 means drawing).
6. Between cards of close value, prefer the ones that hurt: a 5 (everyone draws),
   a 7, a 4 (skip), a 2 (a count); and when the next player is about to go out,
   a 4, a 2 or a 10 to stop them.
7. Name the suit it holds most of when it plays an 8 or a 9.
"""

from __future__ import annotations

from collections import Counter

from craits_bot import Bot, Request, pb, run
from craits_bot.cards import POINTS, is_wild_play

KEEP_THREES = -10
"""The value of playing a 3: below every other card, so threes are shed last."""
SIX_WITH_FOLLOW_UP = 15
SIX_WITHOUT_FOLLOW_UP = -40
ATTACK_BONUS = {pb.RANK_FIVE: 8, pb.RANK_SEVEN: 5, pb.RANK_FOUR: 5, pb.RANK_TWO: 5}
"""Small bonuses: they decide only between cards of close value."""
STOP_THE_NEXT_PLAYER = 25
"""Bonus for a 4, a 2 or a 10 when the next player holds one card."""
SAME_SUIT_KEPT = 2
"""Per card of the played card's suit left in the hand: we can follow it next time."""


class HeuristicBot(Bot):
    def choose(self, request: Request) -> pb.LegalAction:
        plays = [a for a in request.legal_actions if a.kind == pb.ACTION_KIND_PLAY_CARD]
        if not plays:
            # Nothing to weigh: draw, or (a dealer naming a suit blind) the first suit offered.
            return request.legal_actions[0]
        if any(a.announce for a in plays):  # rule 1
            plays = [a for a in plays if a.announce]
        tame = [a for a in plays if not is_wild_play(a)]
        if tame and not someone_about_to_go_out(request.observation):  # rule 2
            return max(tame, key=lambda a: self.value(a, request))
        best = max(plays, key=lambda a: self.value(a, request))
        if not is_wild_play(best):
            return best
        return self.name_suit([a for a in plays if a.card.text == best.card.text], request)

    def value(self, play: pb.LegalAction, request: Request) -> int:
        """How much we want to play this card now: higher is sooner."""
        rank = play.card.rank
        rest = without(request.hand, play.card)
        value = POINTS[rank]  # rule 3
        if rank == pb.RANK_THREE:
            value = KEEP_THREES  # rule 4
        if rank == pb.RANK_SIX:  # rule 5
            value += SIX_WITH_FOLLOW_UP if can_follow(play.card, rest) else SIX_WITHOUT_FOLLOW_UP
        value += ATTACK_BONUS.get(rank, 0)  # rule 6
        if next_player_cards(request.observation) == 1 and rank in stoppers(request.observation):
            value += STOP_THE_NEXT_PLAYER
        value += SAME_SUIT_KEPT * sum(1 for c in rest if c.suit == play.card.suit)
        return value

    def name_suit(self, options: list[pb.LegalAction], request: Request) -> pb.LegalAction:
        """Of the ways to play one wild card, the one naming the suit we hold most of (rule 7)."""
        rest = [c for c in without(request.hand, options[0].card) if c.rank not in (pb.RANK_EIGHT, pb.RANK_NINE)]
        held = Counter(c.suit for c in rest)
        weight: Counter[int] = Counter()
        for c in rest:
            weight[c.suit] += POINTS[c.rank]
        return max(options, key=lambda a: (held[a.suit], weight[a.suit]))


def without(hand: list[pb.Card], card: pb.Card) -> list[pb.Card]:
    """The hand after playing one copy of ``card``."""
    rest = list(hand)
    for i, c in enumerate(rest):
        if c.text == card.text:
            del rest[i]
            break
    return rest


def can_follow(six: pb.Card, rest: list[pb.Card]) -> bool:
    """True if some other card could be played on this 6: a 6, the same suit, or a wild card."""
    return any(c.rank in (pb.RANK_SIX, pb.RANK_EIGHT, pb.RANK_NINE) or c.suit == six.suit for c in rest)


def someone_about_to_go_out(obs: pb.Observation) -> bool:
    """True when another player holds a single card: the hand may end before our next turn."""
    return any(size <= 1 for seat, size in enumerate(obs.hand_sizes) if seat != obs.seat)


def next_player_cards(obs: pb.Observation) -> int:
    players = len(obs.hand_sizes)
    return int(obs.hand_sizes[(obs.seat + obs.direction) % players])


def stoppers(obs: pb.Observation) -> tuple[int, ...]:
    """Cards that keep the next player from playing at once: a skip, a count, a reverse (3+ players)."""
    if len(obs.hand_sizes) > 2:
        return (pb.RANK_FOUR, pb.RANK_TWO, pb.RANK_TEN)
    return (pb.RANK_FOUR, pb.RANK_TWO)


if __name__ == "__main__":
    run(HeuristicBot())
