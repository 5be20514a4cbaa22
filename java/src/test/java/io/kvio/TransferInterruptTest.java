/*
 * Interrupting a thread that awaits a transfer. await() is not interruptible (like
 * CompletableFuture.join): the wait goes on and the interrupt stays set. awaitInterruptibly()
 * ends with InterruptedException, clearing the interrupt, and leaves the transfer running: it is
 * awaited to completion afterwards and moved every byte. The transfer is held before its first
 * copy (KVIO_TEST_FAULT_CPU_HOLD), so it is certainly still running while the waits happen.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class TransferInterruptTest {
    private static final PoolSpec SPEC = PoolFixtures.HOLDABLE;

    @AfterMethod(alwaysRun = true)
    public void release() {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
        Thread.interrupted(); // never leave the test thread interrupted
    }

    private static long[] allSlots() {
        long[] slots = new long[Math.toIntExact(SPEC.tokens())];
        for (int i = 0; i < slots.length; i++) slots[i] = i;
        return slots;
    }

    private static void fill(ByteBuffer b, int seed) {
        for (int i = 0; i < b.capacity(); i++) b.put(i, (byte) (i * 31 + seed));
    }

    @Test
    public void awaitInterruptiblyEndsOnInterruptAndTheTransferStillCompletes() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            fill(src.buffer(), 5);
            fill(dst.buffer(), 9);
            long[] all = allSlots();
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
            assertFalse(held.isDone(), "held");

            // Interrupted while it waits: InterruptedException, the interrupt cleared.
            AtomicReference<Thread> waiter = new AtomicReference<>();
            CompletableFuture<Throwable> outcome =
                    CompletableFuture.supplyAsync(
                            () -> {
                                waiter.set(Thread.currentThread());
                                try {
                                    held.awaitInterruptibly();
                                    return null;
                                } catch (Throwable e) {
                                    return e;
                                } finally {
                                    waiter.set(null);
                                }
                            },
                            r -> new Thread(r, "interruptible-waiter").start());
            while (waiter.get() == null && !outcome.isDone()) Thread.sleep(1);
            Thread.sleep(50);
            Thread t = waiter.get();
            if (t != null) t.interrupt();
            Throwable e = outcome.get(10, TimeUnit.SECONDS);
            assertTrue(e instanceof InterruptedException, "got " + e);
            assertFalse(held.isDone(), "the interrupt cancelled nothing: still held");

            // Interrupted before it waits: at once, with or without a timeout.
            Thread.currentThread().interrupt();
            expectThrows(
                    InterruptedException.class, () -> held.awaitInterruptibly(5, TimeUnit.SECONDS));
            assertFalse(Thread.currentThread().isInterrupted(), "the interrupt is cleared");

            // A timeout still times out.
            assertFalse(held.awaitInterruptibly(30, TimeUnit.MILLISECONDS));

            // await() is not interruptible: it waits its time, the interrupt stays set.
            Thread.currentThread().interrupt();
            long start = System.nanoTime();
            assertFalse(held.await(50, TimeUnit.MILLISECONDS));
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(45));
            assertTrue(Thread.interrupted(), "await() cleared the interrupt");

            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            assertTrue(held.awaitInterruptibly(30, TimeUnit.SECONDS));
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()),
                    LayoutOracle.snapshot(src.buffer()),
                    "destination after the transfer");
            assertEquals(held.bytes(), SPEC.tokens() * 4096);
        }
    }
}
