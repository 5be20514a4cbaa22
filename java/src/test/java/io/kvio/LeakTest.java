/*
 * Resource safety of the Java API (docs/reliability.md): 100 000 create/transfer/close cycles
 * leave the process's resident size flat and every native counter (kvio_debug_live_objects: open
 * pools, executors, transfers, live host allocations) where it started; pools a program forgets
 * to close are freed by the Cleaner once unreachable, with a warning on the "io.kvio" logger.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.testng.annotations.Test;

public class LeakTest {
    /** The pools the Cleaner tests forget: 2 layers of 32 slots, one 64-byte latent row each. */
    private static final PoolSpec FORGOTTEN =
            PoolSpec.builder()
                    .kind(PoolKind.MLA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(2)
                    .pages(8)
                    .pageSize(4)
                    .heads(1)
                    .headBytes(64)
                    .build();

    static long residentKiB() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.substring(6).replace("kB", "").trim());
            }
        }
        return -1;
    }

    private static void cycles(int count, KvioExecutor executor) {
        PoolSpec spec = PoolFixtures.smallMha(4, 64);
        try (TokenIndices from = TokenIndices.of(1, 2, 3);
                TokenIndices to = TokenIndices.of(9, 8, 7)) {
            for (int i = 0; i < count; i++) {
                try (DeviceKvPool device = DeviceKvPool.allocate(spec, IoBackend.CPU);
                        HostKvPool host =
                                HostKvPool.builder()
                                        .forDevice(device)
                                        .layout(KvLayout.PAGE_FIRST_DIRECT)
                                        .ioBackend(IoBackend.CPU)
                                        .pages(4)
                                        .executor(executor)
                                        .build()) {
                    Transfer t = host.backup(device).deviceIndices(from).hostIndices(to).submit();
                    if (i % 2 == 0) {
                        t.await();
                    } // else: closed with the pools in flight, released by close()
                    t.close();
                }
            }
        }
    }

    /** Counters that must come back: pools, transfers, allocations (executors may be shared). */
    private static long[] settled(long[] baseline) throws InterruptedException {
        long[] now = NativeBridge.debugLiveObjects();
        for (int i = 0;
                i < 2000 && (now[0] > baseline[0] || now[2] > baseline[2] || now[3] > baseline[3]);
                i++) {
            Thread.sleep(1);
            now = NativeBridge.debugLiveObjects();
        }
        return now;
    }

    @Test(timeOut = 300_000)
    public void hundredThousandCreateTransferCloseCycles() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2)) {
            cycles(5_000, executor); // warm-up: JIT, allocator caches
            System.gc();
            long[] baseline = NativeBridge.debugLiveObjects();
            long before = residentKiB();
            cycles(100_000, executor);
            long[] after = settled(baseline);
            System.gc();
            long grown = residentKiB() - before;
            assertTrue(
                    after[0] <= baseline[0] && after[2] <= baseline[2] && after[3] <= baseline[3],
                    "native objects left open: "
                            + Arrays.toString(after)
                            + " vs "
                            + Arrays.toString(baseline)
                            + " (pools, executors, transfers, allocations)");
            // Leaked pools would keep at least the 4 KiB page each transfer wrote in its host
            // pool: >= 400 MiB over 100 000 cycles. The JVM's own heap and code growth on this
            // 24 GiB machine reached 86 MiB once (default heap limit 6 GiB), so the bound is
            // 256 MiB; the native counters above are the exact check.
            assertTrue(
                    grown < 256 * 1024,
                    "resident size grew by " + grown + " KiB over 100 000 cycles");
        }
    }

    @Test(timeOut = 120_000)
    public void forgottenPoolsAreFreedByTheCleanerWithAWarning() throws Exception {
        List<String> warnings = new ArrayList<>();
        Handler capture =
                new Handler() {
                    @Override
                    public void publish(LogRecord r) {
                        if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                            synchronized (warnings) {
                                warnings.add(r.getMessage());
                            }
                        }
                    }

                    @Override
                    public void flush() {}

                    @Override
                    public void close() {}
                };
        Logger logger = Logger.getLogger("io.kvio");
        logger.addHandler(capture);
        try {
            long freedBefore = KvPool.FREED_BY_CLEANER.get();
            long[] baseline = NativeBridge.debugLiveObjects();
            for (int i = 0; i < 50; i++) {
                DeviceKvPool.allocate(FORGOTTEN, IoBackend.CPU)
                        .buffer()
                        .put(0, (byte) i); // never closed
            }
            assertTrue(NativeBridge.debugLiveObjects()[0] >= baseline[0] + 50, "50 pools open");
            for (int i = 0; i < 200 && KvPool.FREED_BY_CLEANER.get() < freedBefore + 50; i++) {
                System.gc();
                Thread.sleep(20);
            }
            assertTrue(
                    KvPool.FREED_BY_CLEANER.get() >= freedBefore + 50,
                    "pools freed by the Cleaner: " + (KvPool.FREED_BY_CLEANER.get() - freedBefore));
            long[] after = settled(baseline);
            assertTrue(
                    after[0] <= baseline[0] && after[3] <= baseline[3],
                    "native pools after the Cleaner: "
                            + Arrays.toString(after)
                            + " vs "
                            + Arrays.toString(baseline));
            synchronized (warnings) {
                assertTrue(
                        warnings.stream()
                                .anyMatch(
                                        w ->
                                                w.contains("DeviceKvPool")
                                                        && w.contains("was never closed")),
                        "warnings: " + warnings);
            }
        } finally {
            logger.removeHandler(capture);
        }
    }

    private static boolean poolOpen(long handle) {
        try {
            NativeBridge.poolRegions(handle);
            return true;
        } catch (KvioClosedException e) {
            return false;
        }
    }

    /**
     * A slice of the buffer of a pool nothing else refers to; the pool's handle comes back in
     * handle[0]. Byte i of the pool holds (i * 7 + 3).
     */
    private static ByteBuffer sliceOfAForgottenPool(long[] handle) {
        DeviceKvPool pool = DeviceKvPool.allocate(FORGOTTEN, IoBackend.CPU); // never closed
        handle[0] = pool.handle();
        ByteBuffer whole = pool.buffer();
        for (int i = 0; i < whole.capacity(); i++) {
            whole.put(i, (byte) (i * 7 + 3));
        }
        return whole.slice(1024, 2048); // keeps `whole` reachable (its attachment), not the pool
    }

    /**
     * A pool dropped while a ByteBuffer of it is still used keeps its memory until the buffer is
     * unreachable too: freeing it with the pool made the next access a SIGSEGV of the JVM.
     */
    @Test(timeOut = 120_000)
    public void aForgottenPoolKeepsItsMemoryWhileABufferOfItIsReachable() throws Exception {
        long[] handle = new long[1];
        CountDownLatch found = new CountDownLatch(1); // this pool's Cleaner action has run
        KvPool.onFoundUnreachable =
                h -> {
                    if (h == handle[0]) {
                        found.countDown();
                    }
                };
        try {
            ByteBuffer slice = sliceOfAForgottenPool(handle);
            for (int i = 0; i < 500 && found.getCount() > 0; i++) {
                System.gc();
                found.await(10, TimeUnit.MILLISECONDS);
            }
            assertEquals(
                    found.getCount(), 0L, "the pool was not collected or its Cleaner did not run");
            assertTrue(
                    poolOpen(handle[0]), "the pool was freed while a buffer of it was reachable");
            for (int i = 0; i < slice.capacity(); i++) {
                assertEquals(slice.get(i), (byte) ((1024 + i) * 7 + 3), "byte " + (1024 + i));
            }
            slice = null; // now the memory may go
            for (int i = 0; i < 500 && poolOpen(handle[0]); i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertFalse(poolOpen(handle[0]), "the pool outlived its last buffer");
        } finally {
            KvPool.onFoundUnreachable = null;
        }
    }
}
