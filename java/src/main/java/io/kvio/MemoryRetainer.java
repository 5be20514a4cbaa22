/*
 * Keeps the Java owner of a closed pool's wrapped memory (a direct ByteBuffer, a MemorySegment)
 * reachable until kvio no longer uses that memory. A pool closed while transfers submitted with it
 * still run keeps being written until they complete (kvio_pool_close); if the owner became
 * unreachable meanwhile, its own Cleaner (the JDK's, for ByteBuffer.allocateDirect and automatic
 * arenas) would free the memory under the copy: a crash of the JVM or bytes written into memory
 * reused by someone else. One poller on a kvio background thread (Background) asks
 * kvio_pool_close_wait, without waiting, about every pool held, lets go of each owner as soon as
 * its pool is released, and ends when none is left. Polling, not one blocking wait per pool: a
 * transfer that never completes then holds only its own pool's owner, and a thousand pools closed
 * at once take one thread.
 */
package io.kvio;

import java.lang.ref.Reference;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

final class MemoryRetainer {
    private MemoryRetainer() {}

    private static final System.Logger LOGGER = System.getLogger("io.kvio");

    /** Whether kvio has released a closed pool (kvio_pool_close_wait without waiting). */
    interface ReleaseProbe {
        /** True once released; KvioException when kvio does not know the handle. */
        boolean released(long handle);
    }

    /** kvio's closed pools held, and their poller (tests make their own, with a fake probe). */
    static final Pending NATIVE = new Pending(handle -> NativeBridge.poolCloseWait(handle, 0));

    /**
     * Called right after closed pool {@code handle} was closed natively: returns at once if kvio
     * already released its memory, else holds {@code owner} until it does.
     */
    static void retainUntilReleased(long handle, Object owner, String description) {
        NATIVE.retain(handle, owner, description);
    }

    /** Owners held now, waiting for kvio to release their pools (for tests and diagnostics). */
    static long held() {
        return NATIVE.held();
    }

    /** Owners held until their pools are released, and the one poller that watches them. */
    static final class Pending {
        // The poller sleeps this long after a round that released nothing, doubling up to the
        // longest: an owner goes at most 10 ms after its pool's last transfer, and a pool that
        // stays busy costs a hundred polls a second.
        private static final long FIRST_SLEEP_NS = TimeUnit.MICROSECONDS.toNanos(50);
        private static final long LONGEST_SLEEP_NS = TimeUnit.MILLISECONDS.toNanos(10);

        private final ReleaseProbe probe;
        private final ConcurrentLinkedQueue<Held> held = new ConcurrentLinkedQueue<>();
        private final AtomicLong count = new AtomicLong();
        private final AtomicBoolean polling = new AtomicBoolean();

        Pending(ReleaseProbe probe) {
            this.probe = probe;
        }

        long held() {
            return count.get();
        }

        /** True while a poller runs (tests: it has ended once this is false and none is held). */
        boolean polling() {
            return polling.get();
        }

        void retain(long handle, Object owner, String description) {
            if (releasedOrForeign(handle, description)) {
                return;
            }
            count.incrementAndGet();
            held.add(new Held(handle, owner, description));
            startPolling();
        }

        /**
         * Starts the poller unless one runs. Without a thread for it, the owners stay held (memory
         * kept, never freed under a copy) until a later retain starts one.
         */
        private void startPolling() {
            if (polling.compareAndSet(false, true) && !Background.run(this::poll)) {
                polling.set(false);
            }
        }

        private void poll() {
            try {
                pollUntilNoneHeld();
            } catch (RuntimeException | Error e) {
                polling.set(false); // the owners stay held; the next retain starts a poller
                throw e;
            }
        }

        private void pollUntilNoneHeld() {
            long sleepNs = FIRST_SLEEP_NS;
            for (; ; ) {
                boolean releasedSome = false;
                for (Iterator<Held> it = held.iterator(); it.hasNext(); ) {
                    Held h = it.next();
                    if (releasedOrForeign(h.handle, h.description)) {
                        it.remove();
                        count.decrementAndGet();
                        Reference.reachabilityFence(h.owner);
                        releasedSome = true;
                    }
                }
                if (held.isEmpty()) {
                    polling.set(false);
                    // A retain that added one after the check above and saw polling still set
                    // started no poller: this one goes on.
                    if (held.isEmpty() || !polling.compareAndSet(false, true)) {
                        return;
                    }
                }
                sleepNs = releasedSome ? FIRST_SLEEP_NS : Math.min(sleepNs * 2, LONGEST_SLEEP_NS);
                LockSupport.parkNanos(sleepNs);
            }
        }

        /**
         * True once kvio released the pool, or when kvio does not know the handle (CLOSED: never
         * opened; INVALID_ARGUMENT: not a pool handle; logged): nothing of it can be in use. Any
         * other error (out of memory, say) is no answer: the owner stays held, and is asked about
         * again.
         */
        private boolean releasedOrForeign(long handle, String description) {
            try {
                return probe.released(handle);
            } catch (KvioClosedException | KvioInvalidArgumentException e) {
                log("kvio: a closed " + description + " is not known to kvio; letting it go", e);
                return true;
            } catch (KvioException e) {
                log(
                        "kvio: asking about the release of a closed "
                                + description
                                + " failed; "
                                + "its memory stays held and kvio is asked again",
                        e);
                return false;
            }
        }

        private static void log(String message, KvioException e) {
            LOGGER.log(System.Logger.Level.WARNING, message, e);
        }
    }

    private static final class Held {
        final long handle;
        final Object owner;
        final String description;

        Held(long handle, Object owner, String description) {
            this.handle = handle;
            this.owner = owner;
            this.description = description;
        }
    }
}
