/*
 * A private executor that is never closed is closed by the Cleaner, and its native close waits
 * for its transfers. That wait must not run on the Cleaner thread, which frees every other kvio
 * object: with a transfer of the forgotten executor held (KVIO_TEST_FAULT_CPU_HOLD), a forgotten
 * pool must still be freed meanwhile.
 */
package io.kvio;

import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class ForgottenExecutorTest {
    private static final PoolSpec SPEC = PoolFixtures.HOLDABLE;

    @AfterMethod(alwaysRun = true)
    public void release() {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
    }

    /** Submits a held transfer on a private executor nobody keeps; returns the transfer only. */
    private static Transfer submitOnAForgottenExecutor(
            DeviceKvPool src, DeviceKvPool dst, TokenIndices all) {
        KvioExecutor forgotten = KvioExecutor.create(IoBackend.CPU, 1);
        return Kvio.transfer(forgotten, src, dst, all, all, 0, 0, 1);
    }

    private static void forgetAPool() {
        DeviceKvPool.allocate(SPEC, IoBackend.CPU); // never closed, never kept
    }

    private static long openExecutors() {
        return NativeBridge.debugLiveObjects()[1];
    }

    @Test
    public void itsWaitDoesNotHoldUpTheCleaner() throws Exception {
        long[] slots = new long[Math.toIntExact(SPEC.tokens())];
        for (int i = 0; i < slots.length; i++) slots[i] = i;
        try (DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                TokenIndices all = TokenIndices.of(slots)) {
            long executorsBefore = openExecutors();
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held = submitOnAForgottenExecutor(src, dst, all);
            assertTrue(openExecutors() > executorsBefore);
            // Until the Cleaner has begun closing the executor (its handle is removed first).
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (openExecutors() > executorsBefore && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(10);
            }
            assertTrue(openExecutors() == executorsBefore, "the executor was not collected");
            assertFalse(held.isDone(), "held");
            long freedBefore = KvPool.FREED_BY_CLEANER.get();
            forgetAPool();
            deadline = System.nanoTime() + 10_000_000_000L;
            while (KvPool.FREED_BY_CLEANER.get() == freedBefore && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(10);
            }
            assertTrue(
                    KvPool.FREED_BY_CLEANER.get() > freedBefore,
                    "a forgotten pool was not freed while the forgotten executor's transfer ran:"
                            + " the Cleaner thread is waiting for it");
            assertFalse(held.isDone(), "still held: the pool was freed meanwhile");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            held.await();
        }
    }
}
