package craits.bot;

import java.time.LocalTime;
import java.time.format.DateTimeFormatter;

/** The kit's log: one line per event on standard error, as the other kits write it. */
public final class Log {
    public static final int DEBUG = 10, INFO = 20, WARN = 30, ERROR = 40;
    private static volatile int level = INFO;
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss");

    private Log() {}

    public static void setLevel(int value) {
        level = value;
    }

    public static boolean enabled(int at) {
        return at >= level;
    }

    public static void debug(String message) {
        write(DEBUG, "DEBUG", message);
    }

    public static void info(String message) {
        write(INFO, "INFO", message);
    }

    public static void warn(String message) {
        write(WARN, "WARNING", message);
    }

    public static void error(String message) {
        write(ERROR, "ERROR", message);
    }

    private static void write(int at, String name, String message) {
        if (at < level) {
            return;
        }
        System.err.println(LocalTime.now().format(TIME) + " craits_bot_java " + name + " " + message);
        System.err.flush();
    }
}
