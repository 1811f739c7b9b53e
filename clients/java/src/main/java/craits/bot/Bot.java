package craits.bot;

import craits.v1.Error;
import craits.v1.GameEnd;
import craits.v1.GameStart;
import craits.v1.HandEnd;
import craits.v1.HandStart;
import craits.v1.LegalAction;

/**
 * A Craits bot: {@link #choose} picks one of the request's legal actions; the other callbacks
 * are news (override the ones you need). The kit calls them on one thread, in the order the
 * referee sent the messages.
 *
 * <p>An exception thrown by {@code choose}, or an action that is not one of the request's, never
 * costs the game: the kit answers the first legal action instead, prints the stack trace and
 * tells the referee (Answer.bot_error), which counts it as a bot error.
 */
public interface Bot {
    /** One of {@code request.legalActions()}. */
    LegalAction choose(Request request) throws Exception;

    /** A game begins: reset what you keep about a game (a launched bot plays many in a row). */
    default void onGameStart(GameStart start) {}

    default void onHandStart(HandStart start) {}

    default void onHandEnd(HandEnd end) {}

    default void onGameEnd(GameEnd end) {}

    /** A referee Error (a refused answer, a timeout); the kit has logged it already. */
    default void onError(Error error) {}

    /** The bot's name when the referee gives it none (CRAITS_BOT_NAME and --name win). */
    default String name() {
        return getClass().getSimpleName();
    }
}
