package craits.bot.examples;

import craits.bot.Bot;
import craits.bot.Cards;
import craits.bot.Request;
import craits.bot.Runner;
import craits.v1.Card;
import craits.v1.LegalAction;
import craits.v1.Observation;
import craits.v1.Rank;
import craits.v1.Suit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * A bot with a plan: the same rules of thumb as the Python and JavaScript heuristic bots, from
 * the observation only.
 *
 * <ol>
 * <li>Say "one card" whenever the game offers it: forgetting costs a turn.
 * <li>Keep the wild 8s and 9s for when nothing else can be played, or until another player is
 *     down to one card: then an 8 (50 points) is a liability.
 * <li>Otherwise shed the card that would cost the most if the hand ended now.
 * <li>Keep threes: each scores only 3 and covers another card at the end.
 * <li>Play a 6 only when another card can follow it.
 * <li>Between cards of close value, prefer the ones that hurt (a 5, a 7, a 4, a 2), and stop a
 *     next player about to go out.
 * <li>Name the suit it holds most of when it plays an 8 or a 9.
 * </ol>
 */
public class HeuristicBot implements Bot {
    static final int KEEP_THREES = -10;
    static final int SIX_WITH_FOLLOW_UP = 15;
    static final int SIX_WITHOUT_FOLLOW_UP = -40;
    static final int STOP_THE_NEXT_PLAYER = 25;
    static final int SAME_SUIT_KEPT = 2;
    static final Map<Rank, Integer> ATTACK_BONUS = Map.of(Rank.RANK_FIVE, 8, Rank.RANK_SEVEN, 5, Rank.RANK_FOUR, 5,
            Rank.RANK_TWO, 5);

    @Override
    public LegalAction choose(Request request) {
        List<LegalAction> plays = request.legalActions().stream().filter(Cards::isPlay).toList();
        if (plays.isEmpty()) {
            return request.legalActions().get(0); // draw, or (a dealer naming a suit blind) the first suit
        }
        if (plays.stream().anyMatch(LegalAction::getAnnounce)) {
            plays = plays.stream().filter(LegalAction::getAnnounce).toList(); // rule 1
        }
        Comparator<LegalAction> byValue = Comparator.comparingInt(a -> value(a, request));
        List<LegalAction> tame = plays.stream().filter(a -> !Cards.isWildPlay(a)).toList();
        if (!tame.isEmpty() && !someoneAboutToGoOut(request.observation())) {
            return tame.stream().max(byValue).orElseThrow(); // rule 2
        }
        LegalAction pick = plays.stream().max(byValue).orElseThrow();
        if (!Cards.isWildPlay(pick)) {
            return pick;
        }
        String text = pick.getCard().getText();
        return nameSuit(plays.stream().filter(a -> a.getCard().getText().equals(text)).toList(), request);
    }

    /** How much we want to play this card now: higher is sooner. */
    int value(LegalAction play, Request request) {
        Rank rank = play.getCard().getRank();
        List<Card> rest = without(request.hand(), play.getCard());
        int v = Cards.points(play.getCard()); // rule 3
        if (rank == Rank.RANK_THREE) {
            v = KEEP_THREES; // rule 4
        }
        if (rank == Rank.RANK_SIX) {
            v += canFollow(play.getCard(), rest) ? SIX_WITH_FOLLOW_UP : SIX_WITHOUT_FOLLOW_UP; // rule 5
        }
        v += ATTACK_BONUS.getOrDefault(rank, 0); // rule 6
        Observation obs = request.observation();
        if (nextPlayerCards(obs) == 1 && stoppers(obs).contains(rank)) {
            v += STOP_THE_NEXT_PLAYER;
        }
        v += SAME_SUIT_KEPT * (int) rest.stream().filter(c -> c.getSuit() == play.getCard().getSuit()).count();
        return v;
    }

    /** Of the ways to play one wild card, the one naming the suit we hold most of (rule 7). */
    LegalAction nameSuit(List<LegalAction> options, Request request) {
        List<Card> rest = without(request.hand(), options.get(0).getCard()).stream()
                .filter(c -> c.getRank() != Rank.RANK_EIGHT && c.getRank() != Rank.RANK_NINE).toList();
        Comparator<LegalAction> held = Comparator.comparingLong(a -> count(rest, a.getSuit()));
        Comparator<LegalAction> weight = Comparator.comparingInt(
                a -> rest.stream().filter(c -> c.getSuit() == a.getSuit()).mapToInt(Cards::points).sum());
        LegalAction best = options.get(0);
        for (LegalAction option : options) {
            if (held.thenComparing(weight).compare(option, best) > 0) {
                best = option;
            }
        }
        return best;
    }

    private static long count(List<Card> cards, Suit suit) {
        return cards.stream().filter(c -> c.getSuit() == suit).count();
    }

    /** The hand after playing one copy of {@code card}. */
    static List<Card> without(List<Card> hand, Card card) {
        List<Card> rest = new ArrayList<>(hand);
        for (int i = 0; i < rest.size(); i++) {
            if (rest.get(i).getText().equals(card.getText())) {
                rest.remove(i);
                break;
            }
        }
        return rest;
    }

    static boolean canFollow(Card six, List<Card> rest) {
        return rest.stream().anyMatch(c -> c.getRank() == Rank.RANK_SIX || c.getRank() == Rank.RANK_EIGHT
                || c.getRank() == Rank.RANK_NINE || c.getSuit() == six.getSuit());
    }

    static boolean someoneAboutToGoOut(Observation obs) {
        List<Integer> sizes = obs.getHandSizesList();
        for (int seat = 0; seat < sizes.size(); seat++) {
            if (seat != obs.getSeat() && sizes.get(seat) <= 1) {
                return true;
            }
        }
        return false;
    }

    static int nextPlayerCards(Observation obs) {
        int players = obs.getHandSizesCount();
        return obs.getHandSizes(Math.floorMod(obs.getSeat() + obs.getDirection(), players));
    }

    static List<Rank> stoppers(Observation obs) {
        return obs.getHandSizesCount() > 2 ? List.of(Rank.RANK_FOUR, Rank.RANK_TWO, Rank.RANK_TEN)
                : List.of(Rank.RANK_FOUR, Rank.RANK_TWO);
    }

    @Override
    public String name() {
        return "java-heuristic";
    }

    public static void main(String[] args) {
        Runner.run(new HeuristicBot(), args);
    }
}
