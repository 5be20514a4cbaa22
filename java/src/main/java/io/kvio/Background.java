/*
 * kvio's background threads ("kvio-background-N", daemons, started on need and ending after 10 s
 * idle) for the waits that must not block a caller or the shared Cleaner thread: polling closed
 * pools until kvio lets their wrapped memory go (MemoryRetainer), and closing a forgotten
 * executor, whose native close waits for its transfers. Each task gets a thread of its own, so a
 * task that waits on a transfer that never completes holds up no other task.
 */
package io.kvio;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

final class Background {
    private Background() {}

    private static final AtomicInteger NAMES = new AtomicInteger();

    // No queue: a task runs at once on an idle thread or on a new one (cached-pool rules).
    private static final ThreadPoolExecutor THREADS =
            new ThreadPoolExecutor(
                    0,
                    Integer.MAX_VALUE,
                    10,
                    TimeUnit.SECONDS,
                    new SynchronousQueue<>(),
                    task -> {
                        Thread t = new Thread(task, "kvio-background-" + NAMES.incrementAndGet());
                        t.setDaemon(true);
                        return t;
                    });

    // Tests only: run() answers as where no thread can be started.
    private static volatile boolean refusing;

    /** Tests only: from now on run() starts no thread and returns false (until set back). */
    static void refuseForTests(boolean refuse) {
        refusing = refuse;
    }

    /**
     * Runs {@code task} on a background thread of its own, now; false when no thread could be
     * started for it (the process's thread limit, no memory for a stack): the caller decides what
     * to do instead.
     */
    static boolean run(Runnable task) {
        if (refusing) {
            return false;
        }
        try {
            THREADS.execute(task);
            return true;
        } catch (RejectedExecutionException | OutOfMemoryError e) {
            return false;
        }
    }
}
