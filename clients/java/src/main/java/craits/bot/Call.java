package craits.bot;

import craits.v1.BotMessage;
import craits.v1.RefereeMessage;

/** The Play stream, on gRPC ({@link GrpcCall}) or as frames ({@link FramedCall}): one runner reads both. */
interface Call {
    void open() throws Ended;

    void write(BotMessage message) throws Ended;

    /** The next RefereeMessage, or null once the referee ended the stream ({@link #status}). */
    RefereeMessage read() throws Ended;

    /** Close this side (a clean leave); drop the connection if the referee has not ended it in 5 s.
     * Safe from another thread (a signal's). */
    void leave();

    void close();

    /** How the referee ended the stream, once {@link #read} returned null: a gRPC status name, details. */
    Ended status();

    /** A stream's end: gRPC's status name ("OK", "UNAVAILABLE") and details. */
    final class Ended extends Exception {
        final String code;
        final String details;

        Ended(String code, String details) {
            super(code + ": " + details, null, false, false);
            this.code = code;
            this.details = details == null ? "" : details;
        }
    }
}
