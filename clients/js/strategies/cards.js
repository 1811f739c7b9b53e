'use strict';
// Small helpers for the protocol's cards and actions (enums arrive as names, e.g. 'RANK_EIGHT').

/** What a card left in the hand scores at the end of a hand (rules 9.1). */
const POINTS = Object.freeze({
  RANK_ACE: 1, RANK_TWO: 20, RANK_THREE: 3, RANK_FOUR: 15, RANK_FIVE: 30, RANK_SIX: 30, RANK_SEVEN: 20,
  RANK_EIGHT: 50, RANK_NINE: 30, RANK_TEN: 25, RANK_JACK: 10, RANK_QUEEN: 10, RANK_KING: 10,
});

const isPlay = (action) => action.kind === 'ACTION_KIND_PLAY_CARD';

/** Playing an 8 or a 9 that names a suit: the wild cards of rule 3.3. */
const isWildPlay = (action) => isPlay(action) && action.suit !== 'SUIT_UNSPECIFIED';

module.exports = { POINTS, isPlay, isWildPlay };
