/*
 * When a Transfer lets go of its native handle. A cpu transfer already done when submit returns
 * (a small one runs on the submitting thread) releases its handle inside submit: no transfer
 * handle stays open and nothing is registered for cleaning, yet the Transfer answers exactly as
 * one still holding its handle (done, its bytes, closed after close(), no device event). A
 * transfer still running at submit holds its handle until it is awaited or closed.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

public class TransferReleaseTest {
    private static final long ROW = 64;

    private static PoolSpec spec(long pages) {
        return PoolSpec.builder()
                .kind(PoolKind.MHA)
                .layout(KvLayout.LAYER_FIRST)
                .layers(2)
                .pages(pages)
                .pageSize(16)
                .heads(1)
                .headBytes(ROW)
                .build();
    }

    /** A page_first host pool of 4 pages over {@code device}, on the cpu backend. */
    private static HostKvPool pageFirstHost(DeviceKvPool device) {
        return HostKvPool.builder()
                .forDevice(device)
                .layout(KvLayout.PAGE_FIRST)
                .ioBackend(IoBackend.CPU)
                .pages(4)
                .build();
    }

    private static long[] range(long start, int count) {
        long[] v = new long[count];
        for (int i = 0; i < count; i++) {
            v[i] = start + i;
        }
        return v;
    }

    private static long openTransfers() {
        return NativeBridge.debugLiveObjects()[2];
    }

    @Test
    public void smallCpuTransferIsReleasedAtSubmitAndAnswersAsBefore() {
        try (DeviceKvPool device = DeviceKvPool.allocate(spec(4), IoBackend.CPU);
                HostKvPool host = pageFirstHost(device);
                TokenIndices h = TokenIndices.of(range(0, 16));
                TokenIndices d = TokenIndices.of(range(16, 16))) {
            long before = openTransfers();
            Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit();
            assertEquals(openTransfers(), before, "no transfer handle left open by submit");
            assertEquals(t.bytes(), 16 * ROW * 2 * 2, "16 tokens x 2 layers x K and V");
            assertTrue(t.isDone());
            expectThrows(KvioUnsupportedException.class, t::cudaEvent);
            expectThrows(KvioUnsupportedException.class, t::ascendEvent);
            t.await();
            assertTrue(t.await(0, TimeUnit.SECONDS));
            // Released by the await, but a cpu transfer never had an event: it says so still.
            expectThrows(KvioUnsupportedException.class, t::cudaEvent);
            t.close();
            t.close(); // idempotent

            Transfer closedFirst = host.backup(device).deviceIndices(d).hostIndices(h).submit();
            closedFirst.close();
            KvioClosedException e = expectThrows(KvioClosedException.class, closedFirst::await);
            assertTrue(e.getMessage().contains("closed before it was awaited"), e.getMessage());
            expectThrows(KvioClosedException.class, closedFirst::isDone);
            assertEquals(openTransfers(), before);
        }
    }

    @Test
    public void transferStillRunningAtSubmitHoldsItsHandleUntilAwaited() throws Exception {
        // 32 MiB on one worker thread, queued behind another, both held before their first copy
        // (KVIO_TEST_FAULT_CPU_HOLD): still running when submit returns, whatever the machine's
        // speed (unheld, a descheduled submitting thread could find them done and released at
        // submit, 1 run in 3 to 12 on a 2-core VM). Four threads await the second, released
        // while they wait: the first to see completion releases the handle, and every one must
        // report that outcome, never "closed while it was awaited" (a thread reaching the native
        // wait after the release finds the handle closed; this test does not force that
        // interleaving).
        long pages = 8192;
        PoolSpec big = spec(pages).toBuilder().kind(PoolKind.MLA).layers(1).headBytes(256).build();
        try (KvioExecutor one = KvioExecutor.create(IoBackend.CPU, 1);
                DeviceKvPool device = DeviceKvPool.allocate(big, IoBackend.CPU);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.LAYER_FIRST)
                                .executor(one)
                                .build();
                TokenIndices all = TokenIndices.of(range(0, (int) (pages * 16)))) {
            long before = openTransfers();
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 2);
            Thread release =
                    new Thread(
                            () -> {
                                try {
                                    Thread.sleep(100);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                KvioTestNative.injectFault(
                                        KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
                            });
            Transfer first;
            Transfer second;
            try {
                first = host.backup(device).deviceIndices(all).hostIndices(all).submit();
                second = host.backup(device).deviceIndices(all).hostIndices(all).submit();
                assertEquals(openTransfers(), before + 2, "held transfers hold their handles");
                assertFalse(second.isDone(), "held");
                release.start();
                Threads.runAll(4, thread -> assertTrue(second.await(30, TimeUnit.SECONDS)));
            } finally {
                KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
                release.join();
            }
            first.await();
            assertEquals(openTransfers(), before, "awaiting released both handles");
            assertEquals(second.bytes(), pages * 16 * 256);
        }
    }

    /**
     * What a Transfer knows at submit is final (no volatile write per transfer on the submit path)
     * and reads the same on another thread; no field of Transfer is volatile.
     */
    @Test
    public void whatIsKnownAtSubmitIsFinalAndReadsTheSameElsewhere() throws Exception {
        for (String name :
                new String[] {"bytes", "handle", "ranOnCpu", "backend", "skippedLayers"}) {
            int modifiers = Transfer.class.getDeclaredField(name).getModifiers();
            assertTrue(Modifier.isFinal(modifiers), name + " is final");
        }
        for (Field f : Transfer.class.getDeclaredFields()) {
            assertFalse(Modifier.isVolatile(f.getModifiers()), f.getName() + " is not volatile");
        }
        try (DeviceKvPool device = DeviceKvPool.allocate(spec(4), IoBackend.CPU);
                HostKvPool host = pageFirstHost(device)) {
            Transfer t = host.backup(device).deviceIndices(1).hostIndices(2).submit();
            ExecutorService other = Executors.newSingleThreadExecutor();
            try {
                Future<Object[]> seen =
                        other.submit(
                                () -> new Object[] {t.backend(), t.skippedLayers(), t.bytes()});
                Object[] values = seen.get(10, TimeUnit.SECONDS);
                assertSame(values[0], IoBackend.CPU);
                assertEquals((long[]) values[1], new long[0]);
                assertEquals(values[2], ROW * 2 * 2, "1 token x 2 layers x K and V");
            } finally {
                other.shutdown();
            }
            t.await();
        }
    }
}
