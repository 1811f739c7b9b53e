package craits.bot;

import craits.v1.RefereeMessage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs a bot against a recorded game's messages, with no referee: a unit test of one decision.
 *
 * <pre>
 *   craits replay messages REPLAY --seat 1 -o seat1.jsonl
 *   Offline.Steps steps = Offline.replay(new MyBot(), Path.of("seat1.jsonl"));
 *   assert !steps.at(57).chosen().getText().equals("8H:clubs");
 * </pre>
 *
 * Every message goes through the same {@link Dispatcher} as in a live game, in order. The bot's
 * exceptions are thrown (a test should see them), with the decision they came from. The binary
 * form ({@code --format binary}) works too, without the recorded answers.
 */
public final class Offline {
    private static final Pattern HEAD = Pattern.compile("^\\{\"from\": \"(\\w+)\"(?:, \"n\": (null|\\d+))?");
    private static final Pattern BYTES = Pattern.compile("\"bytes\": \"([A-Za-z0-9+/=]*)\"\\}$");
    private static final Pattern ACTION = Pattern.compile("\"action_id\": (\\d+)");
    private static final Pattern REFUSED = Pattern.compile("\"refused\": true\\}$");

    private Offline() {}

    /** One request the bot answered offline, beside the answer recorded in the game (-1: none). */
    public record Step(Integer n, Request request, int answer, int recorded) {
        public craits.v1.LegalAction chosen() {
            return request.legalActions().stream().filter(a -> a.getId() == answer).findFirst().orElseThrow();
        }

        public boolean same() {
            return recorded < 0 || recorded == answer;
        }
    }

    /** The steps of a run, in order. */
    public static final class Steps extends ArrayList<Step> {
        /** The (first) request of decision {@code n} (the replay's number: rerun --from N). */
        public Step at(int n) {
            for (Step step : this) {
                if (step.n() != null && step.n() == n) {
                    return step;
                }
            }
            throw new IllegalArgumentException("no request of decision " + n + " in these messages");
        }

        /** The first request answered otherwise than in the game, or null. */
        public Step firstDifference() {
            return stream().filter(s -> !s.same()).findFirst().orElse(null);
        }
    }

    /** A decision's choose() failed offline: which one, and the bot's exception as the cause. */
    public static final class Failed extends RuntimeException {
        Failed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private record Item(Integer n, RefereeMessage message, int answer) {}

    static List<Item> read(Path file) throws IOException {
        byte[] data = Files.readAllBytes(file);
        List<Item> items = new ArrayList<>();
        if (data.length > 0 && data[0] == '{') {
            String[] lines = new String(data, StandardCharsets.UTF_8).split("\n");
            for (int i = 0; i < lines.length; i++) {
                String line = lines[i].strip();
                if (line.isEmpty()) {
                    continue;
                }
                Matcher head = HEAD.matcher(line);
                if (!head.find()) {
                    throw new IOException(file + ": line " + (i + 1) + " is not a messages line");
                }
                Integer n = head.group(2) == null || head.group(2).equals("null") ? null : Integer.valueOf(head.group(2));
                if (head.group(1).equals("referee")) {
                    Matcher bytes = BYTES.matcher(line);
                    if (!bytes.find()) {
                        throw new IOException(file + ": line " + (i + 1) + " has no message bytes");
                    }
                    items.add(new Item(n, RefereeMessage.parseFrom(Base64.getDecoder().decode(bytes.group(1))), -1));
                } else if (head.group(1).equals("bot") && !REFUSED.matcher(line).find()) {
                    Matcher action = ACTION.matcher(line);
                    items.add(new Item(n, null, action.find() ? Integer.parseInt(action.group(1)) : 0));
                }
            }
            return items;
        }
        ByteArrayInputStream in = new ByteArrayInputStream(data);
        while (in.available() > 0) {
            RefereeMessage message = RefereeMessage.parseDelimitedFrom(in);
            if (message == null) {
                break;
            }
            items.add(new Item(null, message, -1));
        }
        return items;
    }

    /** Feed {@code bot} every message of {@code file} in order: a Step per request. */
    public static Steps replay(Bot bot, Path file) throws IOException {
        Dispatcher dispatcher = new Dispatcher(bot);
        Steps steps = new Steps();
        for (Item item : read(file)) {
            if (item.message() == null) {
                int last = steps.size() - 1;
                if (last >= 0 && steps.get(last).recorded() < 0) {
                    Step s = steps.get(last);
                    steps.set(last, new Step(s.n(), s.request(), s.answer(), item.answer()));
                }
                continue;
            }
            if (!item.message().hasDecision()) {
                dispatcher.handle(item.message());
                continue;
            }
            Request request = dispatcher.requestFor(item.message().getDecision());
            int chosen;
            try {
                chosen = Dispatcher.actionId(bot.choose(request), request);
            } catch (Exception err) {
                int number = item.n() != null ? item.n() : request.decisionNumber();
                throw new Failed("choose() failed at " + Dispatcher.decisionWords(number, request.decisionId())
                        + " of " + file + ": " + Dispatcher.firstLine(err), err);
            }
            steps.add(new Step(item.n(), request, chosen, -1));
        }
        return steps;
    }

    /**
     * Replays {@code file} to {@code bot} and prints the first answer that differs from the
     * recorded one (1), or that every answer is the recorded one (0): {@code BOT --offline FILE}.
     */
    public static int report(Bot bot, Path file) throws IOException {
        Steps steps = replay(bot, file);
        long recorded = steps.stream().filter(s -> s.recorded() >= 0).count();
        System.out.println(steps.size() + " requests answered, " + recorded + " with a recorded answer");
        Step diff = steps.firstDifference();
        if (diff == null) {
            System.out.println("every answer is the recorded one");
            return 0;
        }
        String was = diff.request().legalActions().stream().filter(a -> a.getId() == diff.recorded())
                .map(craits.v1.LegalAction::getText).findFirst().orElse(String.valueOf(diff.recorded()));
        System.out.println("first difference at decision " + diff.n() + ": recorded " + was + " (" + diff.recorded()
                + "), now " + diff.chosen().getText() + " (" + diff.answer() + ")");
        return 1;
    }

    /** {@code java ... craits.bot.Offline MESSAGES_FILE BOT_CLASS}: {@link #report} for a bot class. */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: craits.bot.Offline MESSAGES_FILE BOT_CLASS (e.g. craits.bot.examples.RandomBot)");
            System.exit(ExitCode.USAGE);
        }
        Bot bot = (Bot) Class.forName(args[1]).getDeclaredConstructor().newInstance();
        System.exit(report(bot, Path.of(args[0])));
    }
}
