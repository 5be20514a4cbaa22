/*
 * The poller that holds closed pools' memory owners (MemoryRetainer.Pending) and kvio's background
 * threads (Background), with a fake probe in place of kvio_pool_close_wait: an owner goes once its
 * pool is released, not before, and a pool that is never released holds up no other pool's owner
 * and no other background task.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;

import java.lang.ref.WeakReference;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

public class MemoryRetainerTest {
    private static final long STUCK = 1;
    private static final long LATER = 2;
    private static final long UNKNOWN = 3;
    private static final long FAILING = 4; // the probe fails (out of memory) until released

    private Set<Long> released;
    private AtomicLong failedProbes; // probes of FAILING that threw
    private MemoryRetainer.Pending pending;

    @BeforeMethod
    public void freshRetainer() {
        Set<Long> releasedNow = ConcurrentHashMap.newKeySet();
        released = releasedNow;
        AtomicLong failedNow = new AtomicLong();
        failedProbes = failedNow;
        pending =
                new MemoryRetainer.Pending(
                        handle -> {
                            if (handle == UNKNOWN) {
                                throw new KvioClosedException("no such pool");
                            }
                            if (handle == FAILING && !releasedNow.contains(handle)) {
                                failedNow.incrementAndGet();
                                throw new KvioOutOfMemoryException("out of host memory");
                            }
                            return releasedNow.contains(handle);
                        });
    }

    /** Retains a fresh owner for {@code handle} in its own frame; returns a weak reference. */
    private WeakReference<byte[]> retainNewOwner(long handle) {
        byte[] owner = new byte[1 << 20];
        pending.retain(handle, owner, "test pool " + handle);
        return new WeakReference<>(owner);
    }

    private static void collect() throws InterruptedException {
        System.gc();
        Thread.sleep(10);
        System.gc();
    }

    private static void awaitTrue(BooleanSupplier condition, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
            collect();
        }
        assertTrue(condition.getAsBoolean(), what);
    }

    @Test
    public void aPoolNeverReleasedHoldsOnlyItsOwnOwner() throws Exception {
        WeakReference<byte[]> stuck = retainNewOwner(STUCK);
        WeakReference<byte[]> later = retainNewOwner(LATER);
        assertEquals(pending.held(), 2L);
        collect();
        assertNotNull(stuck.get(), "collectable before its pool was released");
        assertNotNull(later.get(), "collectable before its pool was released");

        released.add(LATER);
        awaitTrue(() -> later.get() == null, "the released pool's owner was still held");
        assertEquals(pending.held(), 1L);
        assertNotNull(stuck.get(), "the pool still in use lost its owner");

        released.add(STUCK);
        awaitTrue(() -> stuck.get() == null, "still held after its pool was released");
        assertEquals(pending.held(), 0L);
    }

    @Test
    public void anOwnerRetainedAfterThePollerEndedIsWatchedToo() throws Exception {
        released.add(LATER);
        for (int round = 0; round < 3; round++) {
            released.remove(STUCK);
            WeakReference<byte[]> owner = retainNewOwner(STUCK);
            assertEquals(pending.held(), 1L);
            released.add(STUCK);
            awaitTrue(() -> owner.get() == null, "round " + round + ": still held");
            assertEquals(pending.held(), 0L);
            awaitTrue(() -> !pending.polling(), "round " + round + ": the poller did not end");
        }
    }

    @Test
    public void aPoolAlreadyReleasedOrUnknownIsNotHeld() {
        released.add(LATER);
        pending.retain(LATER, new Object(), "released pool");
        pending.retain(UNKNOWN, new Object(), "unknown pool");
        assertEquals(pending.held(), 0L);
    }

    @Test
    public void aProbeThatFailsIsNoAnswerAndTheOwnerStaysHeld() throws Exception {
        WeakReference<byte[]> owner = retainNewOwner(FAILING);
        assertEquals(pending.held(), 1L, "an error of the first probe let the owner go");
        long firstProbes = failedProbes.get();
        awaitTrue(() -> failedProbes.get() >= firstProbes + 3, "the poller asked no more");
        collect();
        assertNotNull(owner.get(), "a failing probe was taken for a release");
        released.add(FAILING);
        awaitTrue(() -> owner.get() == null, "still held after its pool was released");
        assertEquals(pending.held(), 0L);
    }

    @Test
    public void aBackgroundTaskThatNeverEndsHoldsUpNoOther() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        CountDownLatch ran = new CountDownLatch(1);
        try {
            assertTrue(Background.run(() -> awaitUninterruptibly(never)));
            assertTrue(Background.run(ran::countDown));
            assertTrue(ran.await(10, TimeUnit.SECONDS), "the second task waited for the first");
        } finally {
            never.countDown();
        }
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        for (; ; ) {
            try {
                latch.await();
                return;
            } catch (InterruptedException e) {
                // a background task ends only when its wait does
            }
        }
    }
}
