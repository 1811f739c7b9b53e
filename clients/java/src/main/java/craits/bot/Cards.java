package craits.bot;

import craits.v1.ActionKind;
import craits.v1.Card;
import craits.v1.LegalAction;
import craits.v1.Rank;
import craits.v1.Suit;
import java.util.EnumMap;
import java.util.Map;

/** Small helpers for the protocol's cards and actions. */
public final class Cards {
    /** What a card left in the hand scores at the end of a hand (rules 9.1). */
    public static final Map<Rank, Integer> POINTS = new EnumMap<>(Map.ofEntries(
            Map.entry(Rank.RANK_ACE, 1), Map.entry(Rank.RANK_TWO, 20), Map.entry(Rank.RANK_THREE, 3),
            Map.entry(Rank.RANK_FOUR, 15), Map.entry(Rank.RANK_FIVE, 30), Map.entry(Rank.RANK_SIX, 30),
            Map.entry(Rank.RANK_SEVEN, 20), Map.entry(Rank.RANK_EIGHT, 50), Map.entry(Rank.RANK_NINE, 30),
            Map.entry(Rank.RANK_TEN, 25), Map.entry(Rank.RANK_JACK, 10), Map.entry(Rank.RANK_QUEEN, 10),
            Map.entry(Rank.RANK_KING, 10)));

    private Cards() {}

    public static int points(Card card) {
        return POINTS.getOrDefault(card.getRank(), 0);
    }

    public static boolean isPlay(LegalAction action) {
        return action.getKind() == ActionKind.ACTION_KIND_PLAY_CARD;
    }

    /** Playing an 8 or a 9 that names a suit: the wild cards of rule 3.3. */
    public static boolean isWildPlay(LegalAction action) {
        return isPlay(action) && action.getSuit() != Suit.SUIT_UNSPECIFIED;
    }
}
