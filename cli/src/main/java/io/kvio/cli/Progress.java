/*
 * Progress of long CLI runs on stderr (matrix, bench, roundtrip): one line rewritten in place on
 * a console, or a plain line every few seconds when stderr goes to a log, so long CI runs show
 * progress. -Dkvio.progress=false (or --quiet where a command has it) turns it off.
 */
package io.kvio.cli;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * A throttled progress indicator on stderr: one line rewritten in place on a console, or a plain
 * line every few seconds when stderr goes to a log (so long CI runs show progress).
 * -Dkvio.progress=false turns it off.
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
        this.console = System.console() != null;
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
