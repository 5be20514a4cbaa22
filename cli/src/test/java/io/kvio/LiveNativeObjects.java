/*
 * The native library's live-object counters (kvio_debug_live_objects, read through the bridge's
 * package-private NativeBridge) for the CLI tests, which live in another package.
 */
package io.kvio;

public final class LiveNativeObjects {
    private LiveNativeObjects() {}

    /** Pool handles open in this process. */
    public static long pools() {
        return NativeBridge.debugLiveObjects()[0];
    }

    /**
     * Pool handles open in this process once the counters have settled: objects earlier tests
     * dropped are closed by Cleaner actions whenever the collector finds them, so a count taken at
     * once can drop in the middle of a test. Collects until the counters stay the same over three
     * rounds in a row, with no closed pool's memory held by a buffer, at most about 10 s.
     */
    public static long settledPools() {
        long[] last = null;
        int same = 0;
        for (int i = 0; i < 500 && same < 3; i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            long[] now = NativeBridge.debugLiveObjects();
            same =
                    java.util.Arrays.equals(now, last) && KvPool.HELD_AFTER_CLOSE.get() == 0
                            ? same + 1
                            : 0;
            last = now;
        }
        return pools();
    }
}
