package craits.bot;

import craits.v1.Card;
import craits.v1.DecisionKind;
import craits.v1.DecisionRequest;
import craits.v1.Event;
import craits.v1.GameStart;
import craits.v1.LegalAction;
import craits.v1.Observation;
import java.util.List;

/**
 * One decision as a bot sees it: the referee's DecisionRequest with the hand's whole history
 * (the referee sends only what is new since this seat's previous request; the kit keeps the rest).
 *
 * <p>Ids: {@code decisionId} is the wire's (echoed by the kit); {@code decisionNumber} is the
 * game's, the one the replay, its viewer and {@code craits replay rerun --from N} use. uint64
 * fields are Java {@code long}s (the ids never reach 2^63); enums are Java enums
 * ({@code DecisionKind.DECISION_KIND_PLAY}); a oneof is read with {@code getMessageCase()}.
 */
public record Request(
        DecisionRequest message,
        Observation observation,
        List<LegalAction> legalActions,
        List<Event> history,
        GameStart game) {

    public String gameId() {
        return message.getGameId();
    }

    public long decisionId() {
        return message.getDecisionId();
    }

    public int decisionNumber() {
        return message.getDecisionNumber();
    }

    public List<Card> hand() {
        return observation.getHandList();
    }

    public DecisionKind kind() {
        return observation.getDecision();
    }

    public int deadlineMs() {
        return message.getDeadlineMs();
    }

    public int timeBankMs() {
        return message.getTimeBankMs();
    }

    public boolean repeated() {
        return message.getRepeatedRequest();
    }

    /** "decision 57 (id 48213)": how the kit's logs name it (rerun takes the first number). */
    public String words() {
        return Dispatcher.decisionWords(decisionNumber(), decisionId());
    }
}
