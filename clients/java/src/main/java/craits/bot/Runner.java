package craits.bot;

import craits.v1.BotMessage;
import craits.v1.Error;
import craits.v1.ErrorCode;
import craits.v1.Hello;
import craits.v1.ProtocolVersion;
import craits.v1.RefereeMessage;
import craits.v1.Welcome;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

/**
 * Plays one {@link Bot} against a referee and says how it ended, as an exit code:
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     Runner.run(new MyBot(), args);   // never returns: exits with the code
 * }
 * }</pre>
 *
 * A bot the referee launched in its sandbox speaks frames on CRAITS_FRAMED_SOCKET; any other
 * connects with gRPC to CRAITS_SERVER / --server (HOST:PORT, or grpcs://HOST:PORT over TLS with
 * CRAITS_TLS_CA / --tls-ca). It reconnects with backoff when the connection drops, leaves cleanly
 * on SIGTERM and Ctrl-C (a half-close), and exits 0 done (or SIGTERM), 1 unexpected end (or the
 * kit crashed), 2 usage, 3 refused, 4 no referee for the whole reconnect window, 130 Ctrl-C.
 *
 * <p>SIGTERM and SIGINT are handled as signals ({@code sun.misc.Signal}), not with a shutdown hook:
 * the JVM runs shutdown hooks on every exit, an uncaught exception's too, so a hook cannot tell
 * a crash from a stop.
 */
public final class Runner {
    static final long LEAVE_MS = 5000;
    static final String DEFAULT_SERVER = "127.0.0.1:50051";
    static final String TLS_SCHEME = "grpcs://";
    private static final Set<String> RETRYABLE = Set.of("UNAVAILABLE", "INTERNAL", "UNKNOWN", "ABORTED", "CANCELLED");
    private static final Set<String> REFUSED = Set.of("UNAUTHENTICATED", "FAILED_PRECONDITION", "PERMISSION_DENIED",
            "INVALID_ARGUMENT");

    /** Where and who: from the command line and the environment ({@link #options}). */
    public record Options(String server, String token, String name, boolean tls, String tlsCa, double reconnectS,
            String framedSocket, int logLevel) {}

    private final Bot bot;
    private final Options options;
    private final Dispatcher dispatcher;
    private final String name;
    private volatile boolean stopped;
    private volatile int stopCode = ExitCode.OK;
    private volatile Call call;
    private boolean welcomed;
    private boolean everWelcomed;
    private String lastFailure = "";

    public Runner(Bot bot, Options options) {
        this.bot = bot;
        this.options = options;
        this.dispatcher = new Dispatcher(bot);
        this.name = options.name().isEmpty() ? bot.name() : options.name();
    }

    /** Parse {@code args}, play, and exit the process with the exit code. */
    public static void run(Bot bot, String[] args) {
        int code;
        try {
            if (args.length == 2 && args[0].equals("--offline")) { // a messages file, no referee
                try {
                    System.exit(Offline.report(bot, java.nio.file.Path.of(args[1])));
                } catch (java.io.IOException | Offline.Failed err) {
                    System.err.println(err.getMessage());
                    if (err.getCause() != null) {
                        err.getCause().printStackTrace();
                    }
                    System.exit(ExitCode.FAILED);
                }
            }
            Options options = options(args, System.getenv());
            if (options == null) {
                System.out.println(HELP);
                System.exit(ExitCode.OK);
            }
            Log.setLevel(options.logLevel());
            Runner runner = new Runner(bot, options);
            runner.handleSignals();
            code = runner.play();
        } catch (UsageError err) {
            System.err.println("craits bot: error: " + err.getMessage() + "\n" + HELP.split("\n\n")[0]);
            code = ExitCode.USAGE;
        } catch (Throwable err) { // the kit itself failed: said as a crash, never as a clean exit
            Log.error("the bot crashed: " + Dispatcher.firstLine(err));
            err.printStackTrace();
            code = ExitCode.FAILED;
        }
        System.exit(code);
    }

    @SuppressWarnings("removal")
    private void handleSignals() {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), s -> stop(ExitCode.OK));
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), s -> stop(ExitCode.INTERRUPTED));
        } catch (IllegalArgumentException | LinkageError err) {
            Log.warn("cannot handle SIGTERM here (" + err + "): a stop will read as a lost connection");
        }
    }

    /** Stop: close this side of the stream (the referee reads a clean leave); play() returns {@code code}. */
    public void stop(int code) {
        if (!stopped) {
            stopCode = code;
            stopped = true;
        }
        Call current = call;
        if (current != null) {
            current.leave();
        }
        synchronized (this) {
            notifyAll();
        }
    }

    /** Play until the referee is done with this bot; the exit code. */
    public int play() throws InterruptedException {
        long failingSince = -1;
        long delayMs = 200;
        while (!stopped) {
            welcomed = false;
            Integer code = session();
            if (code != null) {
                return code;
            }
            long now = System.currentTimeMillis();
            boolean fresh = welcomed || failingSince < 0;
            if (fresh) {
                failingSince = now;
                delayMs = 200;
            }
            if (now - failingSince >= options.reconnectS() * 1000) {
                Log.error("giving up: no referee at " + where() + " for " + options.reconnectS()
                        + " s (is it running? is --server right?) last error: " + lastFailure);
                return ExitCode.UNREACHABLE;
            }
            String what = welcomed ? "lost the connection to" : "cannot reach";
            String line = what + " the referee at " + where() + ": " + lastFailure + "; retrying for up to "
                    + options.reconnectS() + " s";
            if (fresh) {
                Log.warn(line);
            } else {
                Log.debug(line);
            }
            synchronized (this) {
                if (!stopped) {
                    wait(delayMs);
                }
            }
            delayMs = Math.min(delayMs * 2, 5000);
        }
        return stopCode;
    }

    private String where() {
        return options.framedSocket().isEmpty() ? options.server() : options.framedSocket();
    }

    private Call newCall() {
        if (!options.framedSocket().isEmpty()) {
            return new FramedCall(options.framedSocket());
        }
        String server = options.server();
        String target = server.startsWith(TLS_SCHEME) ? server.substring(TLS_SCHEME.length()) : server;
        return new GrpcCall(target, tls(options), options.tlsCa());
    }

    static boolean tls(Options options) {
        return options.tls() || !options.tlsCa().isEmpty() || options.server().startsWith(TLS_SCHEME);
    }

    /** One stream from Hello to its end: an exit code, or null to reconnect. */
    private Integer session() {
        Error fatal = null;
        Call current = newCall();
        try {
            current.open();
            call = current;
            if (stopped) {
                current.leave();
            }
            current.write(hello());
            RefereeMessage msg;
            while ((msg = current.read()) != null) {
                if (msg.hasError()) {
                    logError(msg.getError());
                    if (msg.getError().getFatal()) {
                        fatal = msg.getError();
                    }
                } else if (msg.hasWelcome()) {
                    onWelcome(msg.getWelcome());
                }
                BotMessage reply = dispatcher.handle(msg);
                if (reply != null && !stopped) {
                    current.write(reply);
                }
            }
            if (stopped) {
                Log.info("stopped; stream closed");
                return stopCode;
            }
            return ended(current.status(), fatal);
        } catch (Call.Ended err) {
            if (stopped) {
                Log.info("stopped; stream closed");
                return stopCode;
            }
            return ended(err, fatal);
        } finally {
            call = null;
            current.close();
        }
    }

    private BotMessage hello() {
        String about = "craits Java kit (Java " + Runtime.version().feature() + ") " + bot.getClass().getSimpleName();
        return BotMessage.newBuilder().setHello(Hello.newBuilder().setToken(options.token())
                .setProtocolVersion(ProtocolVersion.PROTOCOL_VERSION_CURRENT.getNumber())
                .setName(cut(name, 64)).setAbout(cut(about, 200))).build();
    }

    private static String cut(String text, int most) {
        return text.length() > most ? text.substring(0, most) : text;
    }

    private void onWelcome(Welcome welcome) {
        welcomed = everWelcomed = true;
        Log.info("connected to " + where() + " as '" + (welcome.getBotName().isEmpty() ? name : welcome.getBotName())
                + "' (referee " + welcome.getServerVersion() + ", protocol " + welcome.getProtocolVersion() + ")"
                + (welcome.getResumed() ? "; resuming games in progress" : ""));
    }

    private void logError(Error error) {
        StringBuilder line = new StringBuilder("referee error " + error.getCode() + ": " + error.getMessage());
        if (!error.getRule().isEmpty()) {
            line.append("; rule ").append(error.getRule());
        }
        if (!error.getGameId().isEmpty()) {
            line.append("; game ").append(error.getGameId());
            if (error.getDecisionId() != 0) {
                line.append(' ').append(dispatcher.decisionWords(error.getGameId(), error.getDecisionId()));
            }
        }
        if (error.getStrikes() > 0) {
            line.append("; strikes ").append(error.getStrikes());
        }
        if (error.getFatal()) {
            line.append("; fatal");
        }
        boolean news = error.getCode() == ErrorCode.ERROR_CODE_SHUTTING_DOWN
                || (everWelcomed && !welcomed && error.getCode() == ErrorCode.ERROR_CODE_UNAUTHENTICATED);
        if (news) {
            Log.info(line.toString());
        } else {
            Log.warn(line.toString());
        }
    }

    private String summary() {
        return dispatcher.gamesEnded() + " game(s) ended, " + dispatcher.decisions() + " decision(s), "
                + dispatcher.fallbacks() + " fallback answer(s)";
    }

    private Integer ended(Call.Ended end, Error fatal) {
        String code = end.code;
        String details = end.details;
        if (code.equals("OK")) {
            Log.info("the referee closed the stream: done (" + summary() + ")");
            return ExitCode.OK;
        }
        if (fatal != null && fatal.getCode() == ErrorCode.ERROR_CODE_SHUTTING_DOWN) {
            Log.info("the referee shut down: done (" + summary() + ")");
            return ExitCode.OK;
        }
        if (code.equals("UNAUTHENTICATED") && welcomed) {
            Log.error("the referee at " + where() + " ended this bot's stream: "
                    + (fatal != null ? fatal.getMessage() : details));
            return ExitCode.REFUSED;
        }
        if (code.equals("UNAUTHENTICATED") && everWelcomed) {
            Log.info("the referee at " + where() + " no longer knows this bot's token: its games are over; done ("
                    + summary() + ")");
            return ExitCode.OK;
        }
        boolean refusing = fatal != null && (fatal.getCode() == ErrorCode.ERROR_CODE_UNAUTHENTICATED
                || fatal.getCode() == ErrorCode.ERROR_CODE_PROTOCOL_VERSION);
        if (code.equals("FAILED_PRECONDITION") && !everWelcomed && details.startsWith("TLS is not available")) {
            Log.error("cannot connect to the referee at " + where() + ": " + details);
            return ExitCode.REFUSED;
        }
        if (REFUSED.contains(code) || refusing) {
            String hint = code.equals("UNAUTHENTICATED") ? (options.token().isEmpty()
                    ? "; this bot sent no token: give it --token TOKEN or set CRAITS_TOKEN"
                    : "; check the token (--token or CRAITS_TOKEN)") : "";
            Log.error("the referee at " + where() + " refused this bot: "
                    + (details.isEmpty() && fatal != null ? fatal.getMessage() : details) + " (" + code + ")" + hint);
            return ExitCode.REFUSED;
        }
        if (fatal != null) {
            Log.error("the referee at " + where() + " closed the stream: " + fatal.getMessage() + " (" + code + ")");
            return ExitCode.FAILED;
        }
        if (code.equals("UNAVAILABLE") && details.startsWith("TLS: ") && !everWelcomed) {
            Log.error("cannot connect to the referee at " + where() + " over TLS (" + details.substring(5)
                    + "): set CRAITS_TLS_CA (or --tls-ca) to the certificate file the organizer gave you; "
                    + "this bot never falls back to plain text");
            return ExitCode.REFUSED;
        }
        if (RETRYABLE.contains(code)) {
            lastFailure = details + " (" + code + ")";
            return null;
        }
        Log.error("the referee at " + where() + " ended the stream: " + details + " (" + code + ")");
        return ExitCode.FAILED;
    }

    // ------------------------------------------------------------------------------ command line

    static final String HELP = """
            usage: BOT [--server HOST:PORT|grpcs://HOST:PORT] [--tls] [--tls-ca FILE] [--token T] [--name N]
                       [--reconnect-s SECONDS] [-v|--verbose] [-q|--quiet]

              --server       referee address, or grpcs://HOST:PORT over TLS (env CRAITS_SERVER; default 127.0.0.1:50051)
              --tls          connect over TLS (env CRAITS_TLS=1; implied by grpcs:// and --tls-ca)
              --tls-ca       the referee's (self-signed) certificate to trust (env CRAITS_TLS_CA)
              --token        this bot's secret token (env CRAITS_TOKEN)
              --name         display name (env CRAITS_BOT_NAME)
              --reconnect-s  how long to keep trying to reach the referee (default 30)

            BOT --offline MESSAGES_FILE answers a `craits replay messages` file with no referee and
            prints the first answer that differs from the recorded one (exit 1), else exits 0.""";

    /** A mistake on the command line, said in one line. */
    static final class UsageError extends Exception {
        UsageError(String message) {
            super(message);
        }
    }

    /** The options from {@code args} and the environment; null for --help. */
    static Options options(String[] args, java.util.Map<String, String> env) throws UsageError {
        String server = env.getOrDefault("CRAITS_SERVER", "");
        String token = env.getOrDefault("CRAITS_TOKEN", "");
        String name = env.getOrDefault("CRAITS_BOT_NAME", "");
        boolean tls = !Set.of("", "0").contains(env.getOrDefault("CRAITS_TLS", ""));
        String tlsCa = env.getOrDefault("CRAITS_TLS_CA", "");
        double reconnectS = 30;
        int level = Log.INFO;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "-h", "--help" -> {
                    return null;
                }
                case "-v", "--verbose" -> level = Log.DEBUG;
                case "-q", "--quiet" -> level = Log.WARN;
                case "--tls" -> tls = true;
                case "--server", "--token", "--name", "--tls-ca", "--reconnect-s" -> {
                    if (i + 1 >= args.length) {
                        throw new UsageError(arg + " needs a value");
                    }
                    String value = args[++i];
                    switch (arg) {
                        case "--server" -> server = value;
                        case "--token" -> token = value;
                        case "--name" -> name = value;
                        case "--tls-ca" -> tlsCa = value;
                        default -> {
                            try {
                                reconnectS = Double.parseDouble(value);
                            } catch (NumberFormatException err) {
                                reconnectS = -1;
                            }
                            if (!(reconnectS >= 0)) {
                                throw new UsageError("--reconnect-s must be a number, 0 or more");
                            }
                        }
                    }
                }
                default -> throw new UsageError("unknown argument " + arg);
            }
        }
        if (server.isEmpty()) {
            server = DEFAULT_SERVER;
        }
        String framed = env.getOrDefault("CRAITS_FRAMED_SOCKET", "");
        String address = server.startsWith(TLS_SCHEME) ? server.substring(TLS_SCHEME.length()) : server;
        boolean wantsTls = tls || !tlsCa.isEmpty() || server.startsWith(TLS_SCHEME);
        if (wantsTls) {
            framed = ""; // asked for TLS: never a plain-text side door
        }
        if (framed.isEmpty() && address.startsWith("unix:")) {
            throw new UsageError(server + ": the Java kit reaches a referee's Unix socket only as frames "
                    + "(CRAITS_FRAMED_SOCKET, which a sandboxing referee sets); grpc-java needs netty's native "
                    + "epoll library for unix: addresses. Give --server HOST:PORT");
        }
        if (framed.isEmpty() && (!address.contains(":") || address.startsWith(":"))) {
            throw new UsageError("--server takes HOST:PORT or grpcs://HOST:PORT, e.g. " + DEFAULT_SERVER
                    + "; got '" + server + "'");
        }
        if (!tlsCa.isEmpty() && !Files.isReadable(Path.of(tlsCa))) {
            throw new UsageError("CRAITS_TLS_CA/--tls-ca " + tlsCa + ": cannot read it");
        }
        return new Options(server, token, name, tls, tlsCa, reconnectS, framed, level);
    }
}
