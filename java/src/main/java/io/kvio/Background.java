/*
 * kvio's one background thread ("kvio-background", a daemon, started on first need and ending
 * after 10 s idle) for the waits that must not block a caller or the shared Cleaner thread:
 * holding a closed pool's wrapped memory until kvio lets it go (MemoryRetainer), and closing a
 * forgotten executor, whose native close waits for its transfers. Tasks run one at a time, in
 * order.
 */
package io.kvio;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

final class Background {
    private Background() {}

    private static final ThreadPoolExecutor THREAD =
            new ThreadPoolExecutor(
                    0,
                    1,
                    10,
                    TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(),
                    task -> {
                        Thread t = new Thread(task, "kvio-background");
                        t.setDaemon(true);
                        return t;
                    });

    static void run(Runnable task) {
        THREAD.execute(task);
    }
}
