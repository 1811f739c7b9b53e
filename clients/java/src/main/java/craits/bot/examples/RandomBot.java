package craits.bot.examples;

import craits.bot.Bot;
import craits.bot.Request;
import craits.bot.Runner;
import craits.v1.LegalAction;
import java.util.Random;

/** The smallest useful bot: any legal action, at random. */
public final class RandomBot implements Bot {
    private final Random random = new Random();

    @Override
    public LegalAction choose(Request request) {
        return request.legalActions().get(random.nextInt(request.legalActions().size()));
    }

    @Override
    public String name() {
        return "java-random";
    }

    public static void main(String[] args) {
        Runner.run(new RandomBot(), args);
    }
}
