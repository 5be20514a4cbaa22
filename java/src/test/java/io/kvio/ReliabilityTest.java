/*
 * Reliability of the Java API beyond RejectionTest (docs/reliability.md): bad inputs whose offset
 * arithmetic would overflow 64 bits and absurd pool sizes; conflicting transfers from many threads
 * (each result is one thread's rows, never a mix); pools closed by one thread while others submit
 * (submissions fail cleanly with KvioClosedException, transfers in flight complete and their
 * memory is not freed under them); and injected native faults (a failed copy surfaces on
 * Transfer.await() naming the call that failed, a failed allocation on the builder, and the
 * library stays usable). Every case compares whole buffers.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.oracle.Oracle;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class ReliabilityTest {

    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterMethod(alwaysRun = true)
    public void tearDown() throws Exception {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 0);
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 0);
        for (int i = resources.size() - 1; i >= 0; i--) resources.get(i).close();
        resources.clear();
    }

    private <T extends AutoCloseable> T open(T resource) {
        resources.add(resource);
        return resource;
    }

    /** MLA layer_first, 1 layer, `rows` slots of `rowBytes` (one page per slot). */
    private static PoolSpec rows(long rows, long rowBytes) {
        return new PoolFixtures.Config(PoolKind.MLA, 1, rows, 1, 1, rowBytes)
                .spec(KvLayout.LAYER_FIRST);
    }

    private static long[] range(long start, long count) {
        long[] v = new long[(int) count];
        for (int i = 0; i < count; i++) v[i] = start + i;
        return v;
    }

    // ---- bad inputs ----

    @Test
    public void indexWhoseOffsetOverflowsIsOutOfRange() {
        DeviceKvPool src = open(DeviceKvPool.allocate(rows(16, 64), IoBackend.CPU));
        DeviceKvPool dst = open(DeviceKvPool.allocate(rows(16, 64), IoBackend.CPU));
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        byte[] s = LayoutOracle.fill(src.buffer(), 3);
        byte[] d = LayoutOracle.canary(dst.buffer(), 3);
        TokenIndices huge = open(TokenIndices.of(1, Long.MAX_VALUE));
        TokenIndices ok = open(TokenIndices.of(0, 1));
        CpuPoolsFixture.assertMessage(
                expectThrows(
                        KvioOutOfRangeException.class,
                        () -> Kvio.transfer(executor, src, dst, huge, ok, 0, 0, 1).await()),
                "srcIndices[1] = " + Long.MAX_VALUE,
                "valid: 0 to 15");
        CpuPoolsFixture.assertMessage(
                expectThrows(
                        KvioOutOfRangeException.class,
                        () -> Kvio.transfer(executor, src, dst, ok, huge, 0, 0, 1).await()),
                "dstIndices[1] = " + Long.MAX_VALUE,
                "valid: 0 to 15");
        CpuPoolsFixture.assertMessage(
                expectThrows(
                        KvioOutOfRangeException.class,
                        () ->
                                Kvio.transfer(executor, src, dst, ok, ok, 0, 0, Long.MAX_VALUE)
                                        .await()),
                "src layer range [0, " + Long.MAX_VALUE + ")",
                "1 layers");
        LayoutOracle.assertBytesEqual(LayoutOracle.snapshot(src.buffer()), s, "source");
        LayoutOracle.assertBytesEqual(LayoutOracle.snapshot(dst.buffer()), d, "destination");
    }

    @Test
    public void absurdPoolSizes() {
        CpuPoolsFixture.assertMessage(
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                new PoolFixtures.Config(PoolKind.MHA, 2, 2, 2, Long.MAX_VALUE, 2)
                                        .spec(KvLayout.PAGE_HEAD)),
                "pool too large",
                "does not fit in 2^62 bytes");
        CpuPoolsFixture.assertMessage(
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                new PoolFixtures.Config(PoolKind.MLA, 1L << 40, 1, 1, 1, 1)
                                        .spec(KvLayout.PAGE_FIRST)),
                "layers 1099511627776 is more than kvio supports",
                "valid: 1 to 1048576");
        CpuPoolsFixture.assertMessage(
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                new PoolFixtures.Config(PoolKind.MLA, 1, 1, 1, 1, 0)
                                        .spec(KvLayout.PAGE_FIRST)),
                "headBytes must be at least 1, got 0");
    }

    // ---- concurrency ----

    /**
     * Four threads copy their own source rows into the SAME destination slots on one shared
     * executor, all at once, many rounds: an executor is a stream, so after each round the
     * destination holds exactly one thread's rows (the last one to run), never a mix.
     */
    @Test(timeOut = 120_000)
    public void conflictingSlotSetsFromManyThreads() throws Exception {
        final int threads = 4;
        final long n = 112; // 112 KiB per transfer: run on the submitting thread
        DeviceKvPool src = open(DeviceKvPool.allocate(rows(threads * n, 1024), IoBackend.CPU));
        DeviceKvPool dst = open(DeviceKvPool.allocate(rows(n, 1024), IoBackend.CPU));
        ByteBuffer s = src.buffer();
        for (int k = 0; k < threads; k++) {
            for (int i = 0; i < n * 1024; i++) s.put((int) (k * n * 1024 + i), (byte) (k + 1));
        }
        KvioExecutor executor = KvioExecutor.shared(IoBackend.CPU);
        TokenIndices to = open(TokenIndices.of(range(0, n)));
        TokenIndices[] from = new TokenIndices[threads];
        for (int k = 0; k < threads; k++) from[k] = open(TokenIndices.of(range(k * n, n)));
        CyclicBarrier barrier = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        ByteBuffer d = dst.buffer();
        try {
            int mixed = 0;
            for (int round = 0; round < 300; round++) {
                Threads.runAll(
                        pool,
                        threads,
                        k -> {
                            barrier.await();
                            Kvio.transfer(executor, src, dst, from[k], to, 0, 0, 1).await();
                        });
                byte first = d.get(0);
                boolean uniform = first >= 1 && first <= threads;
                for (int i = 0; i < n * 1024 && uniform; i++) uniform = d.get(i) == first;
                if (!uniform) mixed++;
            }
            assertEquals(mixed, 0, "rounds whose destination mixed several threads' rows");
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Threads keep submitting loads from an allocated source pool into caller-owned memory; the
     * source pool is closed while transfers are in flight. Each submission either returns a
     * transfer that completes with exactly the source's rows, or fails with KvioClosedException;
     * the source's memory stays alive until the last transfer that uses it completes.
     */
    @Test(timeOut = 120_000)
    public void closingAPoolWhileOtherThreadsSubmit() throws Exception {
        final int threads = 4;
        final long n = 2048; // 4 MiB per transfer: run by the executor's workers
        final PoolSpec spec = rows(n, 2048);
        long[] before = NativeBridge.debugLiveObjects();
        DeviceKvPool src = DeviceKvPool.allocate(spec, IoBackend.CPU);
        // Filled through copyFrom: a buffer() of src would hold its memory after close() until
        // the buffer is collected, and the check below is that its last transfer frees it.
        byte[] data = Oracle.pattern(Math.toIntExact(src.regionBytes(0)), 11);
        src.copyFrom(ByteBuffer.wrap(data));
        DeviceKvPool backing = open(DeviceKvPool.allocate(spec, IoBackend.CPU));
        ByteBuffer memory = backing.buffer();
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 2));
        TokenIndices all = open(TokenIndices.of(range(0, n)));
        AtomicInteger submitted = new AtomicInteger();
        AtomicInteger closedRejections = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int k = 0; k < threads; k++) {
                futures.add(
                        pool.submit(
                                () -> {
                                    // Each thread wraps the same caller-owned memory as its own
                                    // destination pool.
                                    try (DeviceKvPool dst =
                                            DeviceKvPool.wrap(
                                                    spec,
                                                    backing.regionAddress(0),
                                                    backing.regionBytes(0),
                                                    IoBackend.CPU)) {
                                        for (int i = 0; i < 200; i++) {
                                            Transfer t;
                                            try {
                                                t =
                                                        Kvio.transfer(
                                                                executor, src, dst, all, all, 0, 0,
                                                                1);
                                            } catch (KvioClosedException e) {
                                                closedRejections.incrementAndGet();
                                                return null;
                                            }
                                            submitted.incrementAndGet();
                                            t.await();
                                            t.close();
                                        }
                                    }
                                    return null;
                                }));
            }
            while (submitted.get() < 8) Thread.onSpinWait();
            src.close(); // transfers are in flight now
            for (Future<?> f : futures) f.get();
        } finally {
            pool.shutdownNow();
        }
        assertTrue(
                submitted.get() >= 8, "transfers submitted before the close: " + submitted.get());
        assertTrue(
                closedRejections.get() > 0,
                "submissions after the close fail with KvioClosedException");
        LayoutOracle.assertBytesEqual(
                LayoutOracle.snapshot(memory),
                data,
                "caller memory after transfers from a pool closed in flight");
        // Only `backing` is still open (two pool handles: its own, and the one that holds its
        // memory for `memory`, its buffer); the closed source's memory goes with its last
        // transfer (released by the executor just after completing it).
        long[] after = NativeBridge.debugLiveObjects();
        for (int i = 0; i < 2000 && after[3] > before[3] + 1; i++) {
            Thread.sleep(1);
            after = NativeBridge.debugLiveObjects();
        }
        assertTrue(
                after[0] <= before[0] + 2 && after[3] <= before[3] + 1,
                "live pools/allocations "
                        + Arrays.toString(after)
                        + " vs before "
                        + Arrays.toString(before));
    }

    // ---- injected faults ----

    @Test
    public void copyFailureSurfacesOnAwaitAndTheLibraryStaysUsable() {
        for (long n : new long[] {8, 1024}) { // run on the submitting thread, and queued to workers
            DeviceKvPool device =
                    open(
                            DeviceKvPool.allocate(
                                    new PoolFixtures.Config(PoolKind.MHA, 2, n, 1, 2, 512)
                                            .spec(KvLayout.LAYER_FIRST),
                                    IoBackend.CPU));
            HostKvPool host = open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, n));
            byte[] deviceData = LayoutOracle.fill(device.buffer(), 5);
            byte[] hostBefore = LayoutOracle.canary(host.buffer(), 5);
            TokenIndices idx = open(TokenIndices.of(range(0, n)));
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 1);
            Transfer failed = host.backup(device).deviceIndices(idx).hostIndices(idx).submit();
            KvioBackendException e = expectThrows(KvioBackendException.class, failed::await);
            CpuPoolsFixture.assertMessage(
                    e,
                    "cpu backend: memcpy of copy 1 of",
                    "failed",
                    "fault injected by kvio_test_inject_fault");
            // The outcome is remembered: a second await reports the same failure.
            expectThrows(KvioBackendException.class, failed::await);
            failed.close();
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(host.buffer()),
                    hostBefore,
                    "host pool after the failed backup");
            // The fault was armed once: the same backup now works.
            host.backup(device).deviceIndices(idx).hostIndices(idx).submit().await();
            device.buffer()
                    .put(0, (byte) ~deviceData[0]); // the host copy must not follow later writes
            host.load(device, 0).hostIndices(idx).deviceIndices(idx).submit().await();
            host.load(device, 1).hostIndices(idx).deviceIndices(idx).submit().await();
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(device.buffer()),
                    deviceData,
                    "device after a backup and a load once the fault has passed");
        }
    }

    @Test
    public void allocationFailureSurfacesOnTheBuilder() {
        DeviceKvPool device =
                open(new PoolFixtures.Config(PoolKind.MHA, 2, 8, 4, 2, 64).allocateDevice());
        // Twice: where a closed pool's buffer still holds memory, the failed allocation collects
        // and tries once more (KvPool.allocateCollecting), which must fail too.
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 2);
        KvioOutOfMemoryException e =
                expectThrows(
                        KvioOutOfMemoryException.class,
                        () -> open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, 8)));
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 0);
        CpuPoolsFixture.assertMessage(
                e,
                "mmap of",
                "of host memory for a pool failed",
                "fault injected by kvio_test_inject_fault");
        HostKvPool host = open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, 8));
        assertEquals(host.regionCount(), 1);
    }
}
