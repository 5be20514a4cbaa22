/*
 * Progress of long CLI runs on stderr (matrix, bench, roundtrip): one line rewritten in place when
 * stderr is a terminal, or a plain line every few seconds when stderr goes to a log or a pipe, so
 * long CI runs show progress. Whether stderr is a terminal is read from /proc/self/fd/2 (Linux);
 * where there is no /proc the plain lines are written. -Dkvio.progress=false (or --quiet where a
 * command has it) turns it off.
 */
package io.kvio.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;

/**
 * A throttled progress indicator on stderr: one line rewritten in place when stderr is a terminal,
 * or a plain line every few seconds when it is not (so long CI runs show progress, and a log file
 * gets no carriage returns). -Dkvio.progress=false turns it off.
 */
final class Progress {
    private static final long CONSOLE_INTERVAL_NS = 200_000_000L;
    private static final long LOG_INTERVAL_NS = 5_000_000_000L;

    private final PrintWriter err;
    private final boolean enabled;
    private final boolean console;
    private final long startNs = System.nanoTime();
    private long lastNs;
    private boolean shown;

    Progress(PrintWriter err) {
        this(err, false);
    }

    Progress(PrintWriter err, boolean quiet) {
        this.err = err;
        this.enabled = !quiet && !"false".equals(System.getProperty("kvio.progress"));
        // not System.console(): that is about stdin and stdout, and this writes to stderr
        this.console = enabled && isTerminal(STDERR);
    }

    /** The link Linux keeps from this process's file descriptor 2 to what it is open on. */
    static final Path STDERR = Paths.get("/proc/self/fd/2");

    /**
     * Whether a /proc/self/fd link leads to a terminal device (/dev/pts/N, /dev/ttyX,
     * /dev/console); false for a file, a pipe or a socket, and where it cannot be read (no /proc:
     * not Linux).
     */
    static boolean isTerminal(Path fdLink) {
        try {
            String target = Files.readSymbolicLink(fdLink).toString();
            return target.startsWith("/dev/pts/")
                    || target.startsWith("/dev/tty")
                    || target.equals("/dev/console");
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return false;
        }
    }

    void update(String phase, long done, long total) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        String text =
                phase
                        + (total > 1
                                ? String.format(Locale.ROOT, " %3d%%", 100 * done / total)
                                : " ...");
        if (console) {
            if (shown && now - lastNs < CONSOLE_INTERVAL_NS) {
                return;
            }
            err.printf(Locale.ROOT, "\r%-60s", text);
        } else {
            // In a log, the first line after LOG_INTERVAL_NS of work, then one per interval.
            if (now - (shown ? lastNs : startNs) < LOG_INTERVAL_NS) {
                return;
            }
            err.printf(Locale.ROOT, "progress: %s (%.0f s)%n", text, (now - startNs) / 1e9);
        }
        lastNs = now;
        shown = true;
        err.flush();
    }

    void clear() {
        if (shown && console) {
            err.printf("\r%-60s\r", "");
            err.flush();
            shown = false;
        }
    }
}
