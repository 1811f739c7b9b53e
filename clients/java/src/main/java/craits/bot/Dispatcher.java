package craits.bot;

import craits.v1.Answer;
import craits.v1.BotError;
import craits.v1.BotMessage;
import craits.v1.DecisionRequest;
import craits.v1.Event;
import craits.v1.GameStart;
import craits.v1.LegalAction;
import craits.v1.Observation;
import craits.v1.RefereeMessage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Routes referee messages to a {@link Bot} and turns its choices into answers; no I/O, so the
 * offline runner and tests use it as a live game does. The bot's own failures never cost the
 * game: an exception, or an action that was not offered, is answered with the first legal action
 * and reported to the referee (Answer.bot_error).
 */
public final class Dispatcher {
    private static final String RULER = "!".repeat(72);

    private final Bot bot;
    private final Map<String, Game> games = new HashMap<>();
    private final Map<String, Integer> failures = new HashMap<>();
    int gamesEnded;
    int decisions;
    int fallbacks;

    private static final class Game {
        GameStart start;
        int handNumber;
        List<Event> history = new ArrayList<>();
        long askedId;
        int askedNumber;
    }

    public Dispatcher(Bot bot) {
        this.bot = bot;
    }

    /** Handle one RefereeMessage: the BotMessage to send back, or null. */
    public BotMessage handle(RefereeMessage msg) {
        switch (msg.getMessageCase()) {
            case DECISION:
                return decide(msg.getDecision());
            case GAME_START: {
                Game game = new Game();
                game.start = msg.getGameStart();
                games.put(game.start.getGameId(), game);
                hook("onGameStart", () -> bot.onGameStart(msg.getGameStart()));
                break;
            }
            case HAND_START: {
                Game game = game(msg.getHandStart().getGameId());
                game.handNumber = msg.getHandStart().getHandNumber();
                game.history = new ArrayList<>();
                hook("onHandStart", () -> bot.onHandStart(msg.getHandStart()));
                break;
            }
            case HAND_END:
                hook("onHandEnd", () -> bot.onHandEnd(msg.getHandEnd()));
                break;
            case GAME_END: {
                String id = msg.getGameEnd().getGameId();
                games.remove(id);
                failures.keySet().removeIf(key -> key.startsWith(id + "\0"));
                gamesEnded++;
                hook("onGameEnd", () -> bot.onGameEnd(msg.getGameEnd()));
                break;
            }
            case ERROR:
                hook("onError", () -> bot.onError(msg.getError()));
                break;
            default:
                break;
        }
        return null;
    }

    private Game game(String gameId) {
        return games.computeIfAbsent(gameId, id -> new Game());
    }

    /** The request a bot sees: the hand's history made whole (the referee sends increments). */
    public Request requestFor(DecisionRequest msg) {
        Game game = game(msg.getGameId());
        Observation obs = msg.getObservation();
        if (obs.getHandNumber() != game.handNumber) {
            game.handNumber = obs.getHandNumber();
            game.history = new ArrayList<>();
        }
        int start = obs.getHistoryStart();
        if (start > game.history.size()) {
            Log.warn("game " + msg.getGameId() + ": history jumps from " + game.history.size() + " to " + start
                    + " events (missed messages?)");
            start = game.history.size();
        }
        List<Event> history = new ArrayList<>(game.history.subList(0, start));
        history.addAll(obs.getHistoryList());
        game.history = history;
        game.askedId = msg.getDecisionId();
        game.askedNumber = msg.getDecisionNumber();
        Observation whole = obs.toBuilder().clearHistory().addAllHistory(history).setHistoryStart(0).build();
        return new Request(msg, whole, msg.getLegalActionsList(), List.copyOf(history), game.start);
    }

    BotMessage decide(DecisionRequest msg) {
        long received = System.nanoTime();
        Request request = requestFor(msg);
        decisions++;
        int chosen;
        BotError failure = null;
        try {
            chosen = actionId(bot.choose(request), request);
        } catch (Throwable err) { // (an Error too: a StackOverflowError in choose() is the bot's, not the kit's)
            if (err instanceof VirtualMachineError && !(err instanceof StackOverflowError)) {
                throw (VirtualMachineError) err; // out of memory: nothing sensible to answer with
            }
            failure = botError(err);
            chosen = fallback(request, err);
        }
        long thinkUs = (System.nanoTime() - received) / 1000;
        if (Log.enabled(Log.DEBUG)) {
            Log.debug("game " + msg.getGameId() + " " + request.words() + " (" + request.kind() + "): "
                    + textOf(request, chosen));
        }
        Answer.Builder answer = Answer.newBuilder().setGameId(msg.getGameId()).setDecisionId(msg.getDecisionId())
                .setActionId(chosen).setThinkUs(thinkUs);
        if (failure != null) {
            answer.setBotError(failure); // the referee records it as a fault of the bot's (bot_errors)
        }
        return BotMessage.newBuilder().setAnswer(answer).build();
    }

    /** "decision 57 (id 48213)" for the game's last request, else "decision id 48213". */
    public String decisionWords(String gameId, long decisionId) {
        Game game = games.get(gameId);
        return decisionWords(game != null && game.askedId == decisionId ? game.askedNumber : 0, decisionId);
    }

    static String decisionWords(int number, long decisionId) {
        return number > 0 ? "decision " + number + " (id " + decisionId + ")" : "decision id " + decisionId;
    }

    /** A choice the bot returned that is not one of the request's actions. */
    public static final class ChoiceError extends Exception {
        ChoiceError(String message) {
            super(message);
        }
    }

    /** The id of the legal action {@code choice} names, or a ChoiceError saying why it names none. */
    public static int actionId(LegalAction choice, Request request) throws ChoiceError {
        if (choice == null) {
            throw new ChoiceError("choose() returned null; return one of request.legalActions()");
        }
        for (LegalAction action : request.legalActions()) {
            if (action.getId() == choice.getId()) {
                return action.getId();
            }
        }
        StringBuilder offered = new StringBuilder();
        for (LegalAction action : request.legalActions()) {
            offered.append(offered.length() > 0 ? ", " : "").append(action.getId()).append(" (")
                    .append(action.getText()).append(')');
        }
        throw new ChoiceError("choose() returned " + choice.getId() + " (" + choice.getText()
                + "), which is not a legal action now; legal: " + offered);
    }

    private int fallback(Request request, Throwable err) {
        LegalAction first = request.legalActions().get(0);
        fallbacks++;
        String what = err instanceof ChoiceError ? err.getMessage() : "choose() failed: " + firstLine(err);
        String key = request.gameId() + "\0" + what + "\0" + where(err);
        int seen = failures.merge(key, 1, Integer::sum);
        if (seen == 1) {
            StringBuilder trace = new StringBuilder();
            if (!(err instanceof ChoiceError)) {
                java.io.StringWriter out = new java.io.StringWriter();
                err.printStackTrace(new java.io.PrintWriter(out));
                trace.append('\n').append(out.toString().stripTrailing());
            }
            Log.error("\n" + RULER + "\nYOUR BOT FAILED (game " + request.gameId() + ", " + request.words() + "): "
                    + what + "\nThe kit answered the first legal action '" + first.getText()
                    + "' instead and told the referee, which counts it as a bot error." + trace + "\n" + RULER);
        } else {
            Log.error("game " + request.gameId() + ", " + request.words() + ": " + what
                    + "; answered the first legal action '" + first.getText() + "' instead (failure " + seen
                    + " at this place; its stack was printed the first time in this game)");
        }
        return first.getId();
    }

    /** Answer.bot_error for a failed choice: its first line and where in the bot's code. */
    static BotError botError(Throwable err) {
        String message = err instanceof ChoiceError ? "ChoiceError: " + err.getMessage() : firstLine(err);
        message = message.split("\n", 2)[0];
        return BotError.newBuilder().setMessage(message.length() > 200 ? message.substring(0, 200) : message)
                .setWhere(where(err)).build();
    }

    /** "ArithmeticException: / by zero": the exception's simple name and its message's first line. */
    public static String firstLine(Throwable err) {
        String text = err.getMessage();
        String name = err.getClass().getSimpleName();
        return text == null || text.isBlank() ? name : name + ": " + text.split("\n", 2)[0];
    }

    /** "MyBot.java:42": the deepest frame in the bot's own code (not Java's, not the kit's). */
    static String where(Throwable err) {
        for (StackTraceElement frame : err.getStackTrace()) {
            String cls = frame.getClassName();
            boolean kit = cls.startsWith("craits.bot.") && !cls.startsWith("craits.bot.examples.");
            if (kit || cls.startsWith("java.") || cls.startsWith("jdk.") || cls.startsWith("sun.")
                    || frame.getFileName() == null || frame.getLineNumber() < 0) {
                continue;
            }
            return frame.getFileName() + ":" + frame.getLineNumber();
        }
        return "";
    }

    private static String textOf(Request request, int id) {
        for (LegalAction action : request.legalActions()) {
            if (action.getId() == id) {
                return action.getText();
            }
        }
        return String.valueOf(id);
    }

    private void hook(String name, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException err) {
            Log.error(name + "() failed: " + firstLine(err) + " (ignored)");
        }
    }

    public int decisions() {
        return decisions;
    }

    public int gamesEnded() {
        return gamesEnded;
    }

    public int fallbacks() {
        return fallbacks;
    }
}
