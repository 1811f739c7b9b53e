'use strict';
/**
 * A strategy with a plan: the same rules of thumb as the Python heuristic bot
 * (clients/python/craits_bot/examples/heuristic_bot.py), from the observation only.
 *
 * 1. Say "one card" whenever the game offers it: forgetting costs a turn.
 * 2. Keep the wild 8s and 9s for when nothing else can be played, or until
 *    another player is down to one card: then an 8 (50 points) is a liability.
 * 3. Otherwise shed the card that would cost the most if the hand ended now,
 *    which also answers a count with a 2 before an ace.
 * 4. Keep threes: each scores only 3 and covers another card at the end.
 * 5. Play a 6 only when another card can follow it (else a 6 means drawing).
 * 6. Between cards of close value, prefer the ones that hurt: a 5, a 7, a 4, a 2;
 *    and when the next player is about to go out, a 4, a 2 or a 10 to stop them.
 * 7. Name the suit it holds most of when it plays an 8 or a 9.
 */

const { POINTS, isPlay, isWildPlay } = require('./cards');

const KEEP_THREES = -10;
const SIX_WITH_FOLLOW_UP = 15;
const SIX_WITHOUT_FOLLOW_UP = -40;
const ATTACK_BONUS = { RANK_FIVE: 8, RANK_SEVEN: 5, RANK_FOUR: 5, RANK_TWO: 5 };
const STOP_THE_NEXT_PLAYER = 25;
const SAME_SUIT_KEPT = 2;
const WILD_RANKS = ['RANK_EIGHT', 'RANK_NINE'];

function choose(request) {
  let plays = request.legal_actions.filter(isPlay);
  if (plays.length === 0) {
    // Nothing to weigh: draw, or (a dealer naming a suit blind) the first suit offered.
    return request.legal_actions[0];
  }
  if (plays.some((a) => a.announce)) plays = plays.filter((a) => a.announce); // rule 1
  const best = (actions) => actions.reduce((a, b) => (value(b, request) > value(a, request) ? b : a));
  const tame = plays.filter((a) => !isWildPlay(a));
  if (tame.length > 0 && !someoneAboutToGoOut(request.observation)) return best(tame); // rule 2
  const pick = best(plays);
  if (!isWildPlay(pick)) return pick;
  return nameSuit(plays.filter((a) => a.card.text === pick.card.text), request);
}

/** How much we want to play this card now: higher is sooner. */
function value(play, request) {
  const rank = play.card.rank;
  const rest = without(request.hand, play.card);
  let v = POINTS[rank]; // rule 3
  if (rank === 'RANK_THREE') v = KEEP_THREES; // rule 4
  if (rank === 'RANK_SIX') v += canFollow(play.card, rest) ? SIX_WITH_FOLLOW_UP : SIX_WITHOUT_FOLLOW_UP; // rule 5
  v += ATTACK_BONUS[rank] || 0; // rule 6
  if (nextPlayerCards(request.observation) === 1 && stoppers(request.observation).includes(rank)) {
    v += STOP_THE_NEXT_PLAYER;
  }
  v += SAME_SUIT_KEPT * rest.filter((c) => c.suit === play.card.suit).length;
  return v;
}

/** Of the ways to play one wild card, the one naming the suit we hold most of (rule 7). */
function nameSuit(options, request) {
  const rest = without(request.hand, options[0].card).filter((c) => !WILD_RANKS.includes(c.rank));
  const held = (suit) => rest.filter((c) => c.suit === suit).length;
  const weight = (suit) => rest.filter((c) => c.suit === suit).reduce((sum, c) => sum + POINTS[c.rank], 0);
  const key = (a) => [held(a.suit), weight(a.suit)];
  return options.reduce((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return kb[0] > ka[0] || (kb[0] === ka[0] && kb[1] > ka[1]) ? b : a;
  });
}

/** The hand after playing one copy of `card`. */
function without(hand, card) {
  const rest = hand.slice();
  const i = rest.findIndex((c) => c.text === card.text);
  if (i >= 0) rest.splice(i, 1);
  return rest;
}

/** True if some other card could be played on this 6: a 6, the same suit, or a wild card. */
function canFollow(six, rest) {
  return rest.some((c) => c.rank === 'RANK_SIX' || WILD_RANKS.includes(c.rank) || c.suit === six.suit);
}

/** True when another player holds a single card: the hand may end before our next turn. */
function someoneAboutToGoOut(obs) {
  return obs.hand_sizes.some((size, seat) => seat !== obs.seat && size <= 1);
}

function nextPlayerCards(obs) {
  const players = obs.hand_sizes.length;
  return obs.hand_sizes[(((obs.seat + obs.direction) % players) + players) % players];
}

/** Cards that keep the next player from playing at once: a skip, a count, a reverse (3+ players). */
function stoppers(obs) {
  return obs.hand_sizes.length > 2 ? ['RANK_FOUR', 'RANK_TWO', 'RANK_TEN'] : ['RANK_FOUR', 'RANK_TWO'];
}

module.exports = { name: 'js-heuristic', choose, value };
