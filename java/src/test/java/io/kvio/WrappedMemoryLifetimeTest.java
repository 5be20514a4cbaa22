/*
 * A host pool wrapped over a caller's direct ByteBuffer, closed while a transfer into it still
 * runs, then forgotten together with the buffer: kvio writes the memory until that transfer
 * completes, so the buffer must stay reachable until then (else the JDK's Cleaner frees it under
 * the copy: a crash of the JVM), and must become collectable once kvio has released the pool. The
 * transfer is held before its first copy by the test library's hold (KVIO_TEST_FAULT_CPU_HOLD), so
 * it is certainly still running while the collector looks.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class WrappedMemoryLifetimeTest {
    private static final PoolSpec SPEC = PoolFixtures.HOLDABLE;

    @AfterMethod(alwaysRun = true)
    public void release() {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
    }

    /** The transfer submitted, and the buffer the closed pool was wrapped over. */
    private static final class Forgotten {
        final Transfer transfer;
        final WeakReference<ByteBuffer> buffer;

        Forgotten(Transfer transfer, WeakReference<ByteBuffer> buffer) {
            this.transfer = transfer;
            this.buffer = buffer;
        }
    }

    /**
     * Wraps a fresh buffer, submits a backup into it on {@code executor} (not one the pool owns:
     * closing that would wait for the held transfer) and closes the pool; in its own frame, so that
     * no local variable keeps the pool or the buffer.
     */
    private static Forgotten closeWhileWriting(
            DeviceKvPool device, KvioExecutor executor, TokenIndices all) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(Math.toIntExact(SPEC.componentBytes()));
        HostKvPool host =
                HostKvPool.builder()
                        .forDevice(device)
                        .layout(KvLayout.LAYER_FIRST)
                        .executor(executor)
                        .wrap(buffer)
                        .build();
        Transfer t = host.backup(device).hostIndices(all).deviceIndices(all).submit();
        host.close();
        return new Forgotten(t, new WeakReference<>(buffer));
    }

    private static void collect() throws InterruptedException {
        System.gc();
        Thread.sleep(10);
        System.gc();
    }

    @Test
    public void aClosedPoolsBufferLivesUntilItsTransferEndsThenGoes() throws Exception {
        long[] slots = new long[Math.toIntExact(SPEC.tokens())];
        for (int i = 0; i < slots.length; i++) slots[i] = i;
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                TokenIndices all = TokenIndices.of(slots)) {
            ByteBuffer deviceBytes = device.buffer();
            for (int i = 0; i < deviceBytes.capacity(); i += 4096) deviceBytes.put(i, (byte) 7);
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Forgotten f = closeWhileWriting(device, executor, all);
            collect();
            assertFalse(f.transfer.isDone(), "held");
            assertNotNull(f.buffer.get(), "the buffer was collectable while a transfer wrote it");
            assertEquals(MemoryRetainer.held(), 1L, "kvio holds it");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            f.transfer.await();
            ByteBuffer written = f.buffer.get();
            if (written != null) { // the copy landed in the caller's buffer
                assertEquals(written.get(4096 * 5), (byte) 7);
                written = null;
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (f.buffer.get() != null && System.nanoTime() < deadline) {
                collect();
            }
            assertNull(f.buffer.get(), "the buffer was still held after kvio released it");
            assertEquals(MemoryRetainer.held(), 0L);
        }
    }
}
