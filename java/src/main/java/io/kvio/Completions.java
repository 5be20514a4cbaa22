/*
 * The waits behind Transfer.whenDone(): a transfer still running when its stage is asked for is
 * waited for on a kvio background thread (Background), which then completes the stage. Waits are
 * queued per executor and one thread takes an executor's queue in order, so that any number of
 * pending stages on one executor cost one waiting thread, not one each: an executor runs its
 * transfers in submission order, so waiting for them in the order their stages were asked (the
 * submission order, for a thread that submits and asks) seldom waits behind a transfer that
 * completes later than the next. The thread ends, and the executor's queue goes, once the queue is
 * empty; the next stage starts another.
 */
package io.kvio;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

final class Completions {
    private Completions() {}

    /** One queued wait: {@link #await} blocks until its transfer is done. */
    interface Wait {
        void await();

        /**
         * The wait cannot be made: no thread could be started for it, or {@link #await} threw
         * ({@code why}; an OutOfMemoryError building a message, say). The stage says so.
         */
        void abandon(Throwable why);
    }

    // Executor handle -> its queue of waits; present while a thread drains it. Guarded by itself.
    private static final Map<Long, ArrayDeque<Wait>> QUEUES = new HashMap<>();

    /**
     * Queues {@code wait} behind the waits queued for {@code executor}, starting a background
     * thread to take the queue when none is taking it. Where no thread can be started, every wait
     * of that queue is abandoned (their transfers go on; await() still works).
     */
    static void enqueue(long executor, Wait wait) {
        synchronized (QUEUES) {
            ArrayDeque<Wait> queue = QUEUES.get(executor);
            if (queue != null) {
                queue.add(wait); // its thread takes it
                return;
            }
            queue = new ArrayDeque<>();
            queue.add(wait);
            QUEUES.put(executor, queue);
        }
        if (!Background.run(() -> drain(executor))) {
            ArrayDeque<Wait> abandoned;
            synchronized (QUEUES) {
                abandoned = QUEUES.remove(executor);
            }
            KvioOutOfMemoryException why =
                    new KvioOutOfMemoryException(
                            "no thread could be started to wait for this transfer (the process's"
                                    + " thread limit, or no memory for a stack); it still runs:"
                                    + " await() it instead");
            for (Wait w : abandoned) {
                w.abandon(why);
            }
        }
    }

    /** Takes the executor's queue in order until it is empty, then removes it. */
    private static void drain(long executor) {
        for (; ; ) {
            Wait next;
            synchronized (QUEUES) {
                ArrayDeque<Wait> queue = QUEUES.get(executor);
                next = queue.poll();
                if (next == null) {
                    QUEUES.remove(executor);
                    return;
                }
            }
            // Whatever one wait throws ends that wait only: the thread goes on with the queue,
            // which would otherwise stay, with no thread taking it, and hold its transfers.
            try {
                next.await();
            } catch (Throwable e) {
                try {
                    next.abandon(e);
                } catch (Throwable ignored) {
                    // nothing more can be done for that wait; the others still need this thread
                }
            }
        }
    }

    /** Executors with a queue now (for tests). */
    static int queues() {
        synchronized (QUEUES) {
            return QUEUES.size();
        }
    }
}
