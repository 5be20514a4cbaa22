/*
 * Test helper: runs one task per thread index and waits for all of them, rethrowing the first
 * failure (an ExecutionException carrying the task's exception). Used by the concurrency and
 * reliability tests.
 */
package io.kvio;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

final class Threads {
    private Threads() {}

    /** The work of thread {@code thread} (0 to n - 1). */
    @FunctionalInterface
    interface Task {
        void run(int thread) throws Exception;
    }

    /** Submits task(0) to task(n - 1) to {@code pool} and waits up to 60 s for each. */
    static void runAll(ExecutorService pool, int n, Task task) throws Exception {
        List<Future<?>> futures = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            final int id = k;
            futures.add(
                    pool.submit(
                            () -> {
                                task.run(id);
                                return null;
                            }));
        }
        for (Future<?> f : futures) f.get(60, TimeUnit.SECONDS);
    }

    /** runAll on a pool of n threads of its own, shut down afterwards. */
    static void runAll(int n, Task task) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            runAll(pool, n, task);
        } finally {
            pool.shutdownNow();
        }
    }
}
