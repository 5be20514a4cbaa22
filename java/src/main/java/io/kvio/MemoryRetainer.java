/*
 * Keeps the Java owner of a closed pool's wrapped memory (a direct ByteBuffer, a MemorySegment)
 * reachable until kvio no longer uses that memory. A pool closed while transfers submitted with it
 * still run keeps being written until they complete (kvio_pool_close); if the owner became
 * unreachable meanwhile, its own Cleaner (the JDK's, for ByteBuffer.allocateDirect and automatic
 * arenas) would free the memory under the copy: a crash of the JVM or bytes written into memory
 * reused by someone else. kvio's background thread (Background) waits on kvio_pool_close_wait for
 * each such pool, then lets its owner go.
 */
package io.kvio;

import java.lang.ref.Reference;
import java.util.concurrent.atomic.AtomicLong;

final class MemoryRetainer {
    private MemoryRetainer() {}

    private static final System.Logger LOGGER = System.getLogger("io.kvio");

    /** Owners held now, waiting for kvio to release their pools (for tests and diagnostics). */
    static final AtomicLong HELD = new AtomicLong();

    /**
     * Called right after closed pool {@code handle} was closed natively: returns at once if kvio
     * already released its memory, else holds {@code owner} until it does.
     */
    static void retainUntilReleased(long handle, Object owner, String description) {
        try {
            if (NativeBridge.poolCloseWait(handle, 0)) {
                return;
            }
        } catch (KvioException e) {
            log(description, e);
            return; // not a closed pool kvio knows: nothing of it can be in use
        }
        HELD.incrementAndGet();
        Background.run(
                () -> {
                    try {
                        NativeBridge.poolCloseWait(handle, -1);
                    } catch (KvioException e) {
                        log(description, e);
                    } finally {
                        HELD.decrementAndGet();
                        Reference.reachabilityFence(owner);
                    }
                });
    }

    private static void log(String description, KvioException e) {
        LOGGER.log(
                System.Logger.Level.WARNING,
                "kvio: waiting for the release of a closed " + description + " failed",
                e);
    }
}
