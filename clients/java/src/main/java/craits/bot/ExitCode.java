package craits.bot;

/** How a bot process ends: the same codes as the Python and JavaScript kits (docs/protocol.md). */
public final class ExitCode {
    /** The referee closed the stream normally (its games are over), or SIGTERM. */
    public static final int OK = 0;
    /** The referee ended the stream with an unexpected status, or the kit itself crashed. */
    public static final int FAILED = 1;
    /** Bad command-line arguments. */
    public static final int USAGE = 2;
    /** The referee refused this bot: unknown token, protocol version, an untrusted certificate. */
    public static final int REFUSED = 3;
    /** No referee answered (or it stayed gone) for the whole reconnect window. */
    public static final int UNREACHABLE = 4;
    /** Ctrl-C. */
    public static final int INTERRUPTED = 130;

    private ExitCode() {}
}
