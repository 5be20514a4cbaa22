/*
 * Settles the native live-object counters (kvio_debug_live_objects) before a test compares them:
 * objects earlier tests dropped (forgotten pools, executors and transfers; buffers that hold a
 * closed pool's memory) are freed by Cleaner actions whenever the collector finds them, so a
 * count taken right away can drop by one in the middle of a test that counts its own objects.
 * Public, and in the test-hooks JAR, for kvio-cli's tests (another package).
 */
package io.kvio;

import java.util.Arrays;

public final class NativeCounts {
    private NativeCounts() {}

    /**
     * Collects until the counters stay the same over three rounds in a row, with no closed pool's
     * memory held by a buffer (KvPool.HELD_AFTER_CLOSE), at most about 10 s (then the test counts
     * from where they are); returns the counters.
     */
    public static long[] settle() {
        long[] last = null;
        int same = 0;
        for (int i = 0; i < 500; i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            long[] now = NativeBridge.debugLiveObjects();
            same = Arrays.equals(now, last) && KvPool.HELD_AFTER_CLOSE.get() == 0 ? same + 1 : 0;
            if (same >= 3) {
                return now;
            }
            last = now;
        }
        return NativeBridge.debugLiveObjects();
    }

    /** Pool handles open in this process now (kvio_debug_live_objects). */
    public static long pools() {
        return NativeBridge.debugLiveObjects()[0];
    }

    /** Pool handles open in this process once the counters have settled ({@link #settle()}). */
    public static long settledPools() {
        return settle()[0];
    }
}
