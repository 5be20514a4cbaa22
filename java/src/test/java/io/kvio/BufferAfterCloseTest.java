/*
 * A ByteBuffer from a pool's buffer() or slice() stays valid after the pool is closed
 * (docs/memory-lifetime.md, "Java: buffers and segments over pool memory"): close() used to free
 * memory kvio allocated whatever buffers remained, so `b = dev.buffer(); dev.close(); b.get(0)`
 * read unmapped memory and the JVM died with SIGSEGV. Memory kvio allocated is now held by every
 * buffer of it and freed once the pool is closed and its last buffer is unreachable
 * (kvio_debug_live_objects: open pool handles [0], live host allocations [3]). For wrapped caller
 * memory the buffer keeps the caller's ByteBuffer reachable, and kvio opens nothing to hold it.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

public class BufferAfterCloseTest {
    /** 2 layers x 4 pages x 2 slots x (K and V) x 2 heads x 16 B: 1 KiB. */
    private static final PoolSpec SPEC = PoolFixtures.smallMha(2, 16);

    private static byte pattern(int i, int seed) {
        return (byte) (i * 31 + seed);
    }

    private static void fill(ByteBuffer b, int seed) {
        for (int i = 0; i < b.capacity(); i++) b.put(i, pattern(i, seed));
    }

    private static void assertFilled(ByteBuffer b, int seed, String what) {
        for (int i = 0; i < b.capacity(); i++) {
            if (b.get(i) != pattern(i, seed)) {
                assertEquals(b.get(i), pattern(i, seed), what + ": byte " + i);
            }
        }
    }

    /** Live host allocations kvio made ([3]) and open pool handles ([0]), process-wide. */
    private static long allocations() {
        return NativeBridge.debugLiveObjects()[3];
    }

    private static long openPools() {
        return NativeBridge.debugLiveObjects()[0];
    }

    /**
     * Before counting: buffers earlier tests dropped still hold their closed pools' memory until
     * they are collected, and forgotten pools go when the Cleaner finds them, so the counters move
     * on their own until those are collected. Collects until they stay put.
     */
    private static void settle() throws Exception {
        long last = -1;
        for (int i = 0; i < 500; i++) {
            System.gc();
            Thread.sleep(20);
            long now = allocations();
            if (KvPool.HELD_AFTER_CLOSE.get() == 0 && now == last) return;
            last = now;
        }
    }

    /** Collects until {@code done}, at most about 10 s. */
    private static void collectUntil(java.util.function.BooleanSupplier done) throws Exception {
        for (int i = 0; i < 500 && !done.getAsBoolean(); i++) {
            System.gc();
            Thread.sleep(20);
        }
    }

    @Test(timeOut = 60_000)
    public void aBufferOfAClosedDevicePoolReadsAndWritesItsMemoryUntilItIsUnreachable()
            throws Exception {
        settle();
        long baseline = allocations();
        long poolsBefore = openPools();
        DeviceKvPool pool = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
        ByteBuffer buffer = pool.buffer();
        assertEquals(allocations(), baseline + 1, "the pool's allocation");
        fill(buffer, 5);
        pool.close();
        assertTrue(pool.isClosed());
        // The user trial: buffer(), close(), get(0) was a SIGSEGV.
        assertEquals(buffer.get(0), pattern(0, 5));
        assertFilled(buffer, 5, "after close()");
        fill(buffer, 9); // written after close: the memory is still the pool's allocation
        assertFilled(buffer, 9, "written after close()");
        ByteBuffer view = buffer.duplicate();
        assertEquals(view.get(100), pattern(100, 9));
        assertEquals(
                allocations(),
                baseline + 1,
                "close() freed memory a buffer of the pool still uses");
        assertEquals(
                openPools(),
                poolsBefore + 1,
                "the pool's handle is closed; the hold of its buffers stays");
        expectThrows(KvioClosedException.class, pool::buffer); // no new buffer once closed
        buffer = null;
        view = null;
        collectUntil(() -> allocations() <= baseline);
        assertEquals(allocations(), baseline, "memory outlived the last buffer of a closed pool");
        assertEquals(openPools(), poolsBefore, "the buffers' hold outlived them");
    }

    @Test(timeOut = 60_000)
    public void aSliceOfAHostPoolOutlivesCloseAndWait() throws Exception {
        settle();
        long baseline = allocations();
        HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.PAGE_FIRST)
                        .ioBackend(IoBackend.CPU)
                        .deviceLayers(2)
                        .pages(8)
                        .pageSize(4)
                        .heads(2)
                        .headBytes(16)
                        .build();
        ByteBuffer slice = host.slice(0, 1024, 512);
        fill(slice, 3);
        assertTrue(host.closeAndWait(10, TimeUnit.SECONDS), "no transfer uses the pool");
        assertFilled(slice, 3, "after closeAndWait()");
        fill(slice, 4);
        assertFilled(slice, 4, "written after closeAndWait()");
        assertEquals(allocations(), baseline + 1, "closeAndWait freed memory a slice still uses");
        slice = null;
        collectUntil(() -> allocations() <= baseline);
        assertEquals(allocations(), baseline, "memory outlived the last slice of a closed pool");
    }

    /** Fills a buffer of {@code pool} and drops it: unreachable, but not yet collected. */
    private static void useABufferOf(KvPool pool) {
        fill(pool.buffer(), 1);
    }

    /**
     * Runs {@code body} with the system property io.kvio.heldAfterCloseLimit set to {@code value}
     * (null: unset), which kvio reads at each allocation; restores it after.
     */
    private static void withLimit(String value, ThrowingRunnable body) throws Exception {
        String before = System.getProperty(KvPool.HELD_AFTER_CLOSE_LIMIT_PROPERTY);
        try {
            if (value == null) {
                System.clearProperty(KvPool.HELD_AFTER_CLOSE_LIMIT_PROPERTY);
            } else {
                System.setProperty(KvPool.HELD_AFTER_CLOSE_LIMIT_PROPERTY, value);
            }
            body.run();
        } finally {
            if (before == null) {
                System.clearProperty(KvPool.HELD_AFTER_CLOSE_LIMIT_PROPERTY);
            } else {
                System.setProperty(KvPool.HELD_AFTER_CLOSE_LIMIT_PROPERTY, before);
            }
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    /**
     * A program that fills each pool through its buffer and closes it, then allocates the next
     * (kvio-cli's bench does), makes little garbage: the JVM may not collect the dropped buffers
     * for a long time, and each closed pool's memory would stay. Once the memory so held exceeds
     * the limit (here 0 bytes), the next allocation asks for a collection, so the closed pool's
     * memory goes without the program calling System.gc().
     */
    @Test(timeOut = 60_000)
    public void aboveTheLimitTheNextAllocationCollectsBuffersOfClosedPools() throws Exception {
        settle();
        withLimit(
                "0",
                () -> {
                    long baseline = allocations();
                    long heldBefore = KvPool.HELD_AFTER_CLOSE.get();
                    DeviceKvPool first = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                    long bytes = first.regionBytes(0);
                    useABufferOf(first);
                    first.close();
                    assertEquals(
                            KvPool.HELD_AFTER_CLOSE.get(),
                            heldBefore + bytes,
                            "the closed pool's memory is counted as held by its buffer");
                    long asked = KvPool.COLLECTIONS_ASKED.get();
                    try (DeviceKvPool second = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
                        assertEquals(
                                KvPool.COLLECTIONS_ASKED.get(),
                                asked + 1,
                                "the allocation asked for a collection");
                        // No System.gc() here: the allocation asked for it, and the Cleaner
                        // frees the memory.
                        for (int i = 0; i < 500 && allocations() > baseline + 1; i++) {
                            Thread.sleep(10);
                        }
                        assertEquals(
                                allocations(),
                                baseline + 1,
                                "the first pool's memory stayed after the next allocation (only"
                                        + " the second's should be live)");
                        assertEquals(KvPool.HELD_AFTER_CLOSE.get(), heldBefore);
                    }
                });
    }

    /**
     * Below the limit (the default, 1 GiB, over a pool of 1 KiB) a closed pool's memory held by a
     * dropped buffer waits for the collector's own schedule: the next allocation asks for no
     * collection and pays no wait.
     */
    @Test(timeOut = 60_000)
    public void belowTheLimitTheNextAllocationAsksForNoCollection() throws Exception {
        settle();
        withLimit(
                null,
                () -> {
                    assertEquals(KvPool.heldAfterCloseLimit(), 1L << 30);
                    long heldBefore = KvPool.HELD_AFTER_CLOSE.get();
                    DeviceKvPool first = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                    long bytes = first.regionBytes(0);
                    useABufferOf(first);
                    first.close();
                    assertEquals(KvPool.HELD_AFTER_CLOSE.get(), heldBefore + bytes);
                    long asked = KvPool.COLLECTIONS_ASKED.get();
                    DeviceKvPool.allocate(SPEC, IoBackend.CPU).close();
                    HostKvPool.builder()
                            .ioBackend(IoBackend.CPU)
                            .deviceLayers(2)
                            .pages(8)
                            .pageSize(4)
                            .heads(2)
                            .headBytes(16)
                            .build()
                            .close();
                    assertEquals(
                            KvPool.COLLECTIONS_ASKED.get(),
                            asked,
                            "an allocation asked for a collection below the limit");
                });
        settle(); // the first pool's memory, for the tests after
    }

    /**
     * An allocation that runs out of memory (injected: the next host allocation fails) while a
     * closed pool's buffer holds memory asks for a collection and tries once more, whatever the
     * limit; with nothing held it fails at once, asking for none.
     */
    @Test(timeOut = 60_000)
    public void anAllocationOutOfMemoryCollectsAndTriesOnceMore() throws Exception {
        settle();
        try {
            withLimit(
                    Long.toString(Long.MAX_VALUE),
                    () -> {
                        assertEquals(KvPool.HELD_AFTER_CLOSE.get(), 0L, "settled: none held");
                        long asked = KvPool.COLLECTIONS_ASKED.get();
                        KvioTestNative.injectFault(
                                KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 1);
                        KvioOutOfMemoryException e =
                                expectThrows(
                                        KvioOutOfMemoryException.class,
                                        () -> DeviceKvPool.allocate(SPEC, IoBackend.CPU));
                        assertTrue(e.getMessage().contains("fault injected"), e.getMessage());
                        assertEquals(
                                KvPool.COLLECTIONS_ASKED.get(),
                                asked,
                                "nothing was held: a collection could free nothing");

                        long baseline = allocations();
                        DeviceKvPool first = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                        useABufferOf(first);
                        first.close();
                        assertTrue(KvPool.HELD_AFTER_CLOSE.get() > 0);
                        KvioTestNative.injectFault(
                                KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 1);
                        try (DeviceKvPool second = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
                            assertEquals(
                                    KvPool.COLLECTIONS_ASKED.get(),
                                    asked + 1,
                                    "the failed allocation asked for a collection");
                            assertTrue(second.regionBytes(0) > 0, "the second try allocated");
                            collectUntil(() -> allocations() <= baseline + 1);
                            assertEquals(allocations(), baseline + 1, "the first pool's memory");
                        }

                        // Both tries fail: the second failure is thrown, the first suppressed.
                        DeviceKvPool third = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                        ByteBuffer kept = third.buffer();
                        third.close();
                        KvioTestNative.injectFault(
                                KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 2);
                        KvioOutOfMemoryException twice =
                                expectThrows(
                                        KvioOutOfMemoryException.class,
                                        () -> DeviceKvPool.allocate(SPEC, IoBackend.CPU));
                        assertEquals(KvPool.COLLECTIONS_ASKED.get(), asked + 2);
                        assertEquals(twice.getSuppressed().length, 1);
                        assertTrue(
                                twice.getSuppressed()[0] instanceof KvioOutOfMemoryException,
                                String.valueOf(twice.getSuppressed()[0]));
                        assertEquals(kept.get(0), (byte) 0, "a buffer still held keeps its memory");
                    });
        } finally {
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_HOST_ALLOCATION, 0);
        }
        settle();
    }

    /**
     * Which allocations may ask for a collection: host memory (pageable or pinned), which buffers
     * hold, only over the limit and only after a close with buffers out since the last one; never
     * device memory (CUDA, Ascend), which no ByteBuffer holds (this machine may have no device to
     * allocate on, so the decision is asked directly).
     */
    @Test
    public void onlyHostMemoryOverTheLimitAsksForACollection() {
        int[] host = {
            KvioNative.KVIO_MEMORY_HOST,
            KvioNative.KVIO_MEMORY_HOST_PINNED,
            KvioNative.KVIO_MEMORY_ASCEND_HOST_PINNED
        };
        for (int kind : host) {
            assertTrue(KvPool.collectsBefore(kind, 2048, 1024, true), "kind " + kind);
            assertFalse(KvPool.collectsBefore(kind, 1024, 1024, true), "at the limit: " + kind);
            assertFalse(KvPool.collectsBefore(kind, 2048, 1024, false), "no close since: " + kind);
        }
        for (int kind :
                new int[] {
                    KvioNative.KVIO_MEMORY_CUDA_DEVICE, KvioNative.KVIO_MEMORY_ASCEND_DEVICE
                }) {
            assertFalse(KvPool.collectsFor(kind), "device kind " + kind);
            assertFalse(KvPool.collectsBefore(kind, Long.MAX_VALUE, 0, true), "kind " + kind);
        }
        // The cpu backend's device pools are host memory; the device backends' are not.
        assertTrue(KvPool.collectsFor(IoBackend.CPU.deviceMemoryKind()));
        assertFalse(KvPool.collectsFor(IoBackend.KERNEL.deviceMemoryKind()));
        assertFalse(KvPool.collectsFor(IoBackend.KERNEL_ASCEND.deviceMemoryKind()));
        assertTrue(KvPool.collectsFor(IoBackend.KERNEL.hostMemoryKind()));
    }

    /** The limit's property: bytes; anything else (a word, a negative number) is the default. */
    @Test
    public void theLimitIsReadFromItsPropertyAndFallsBackOnBadValues() throws Exception {
        withLimit(null, () -> assertEquals(KvPool.heldAfterCloseLimit(), 1L << 30));
        withLimit("123456", () -> assertEquals(KvPool.heldAfterCloseLimit(), 123456L));
        withLimit(" 0 ", () -> assertEquals(KvPool.heldAfterCloseLimit(), 0L));
        withLimit("1GiB", () -> assertEquals(KvPool.heldAfterCloseLimit(), 1L << 30));
        withLimit("-1", () -> assertEquals(KvPool.heldAfterCloseLimit(), 1L << 30));
    }

    /** Closed without a buffer ever taken: nothing holds the memory, close() frees it at once. */
    @Test
    public void aPoolWithoutBuffersIsFreedByClose() throws Exception {
        settle();
        long baseline = allocations();
        long poolsBefore = openPools();
        DeviceKvPool pool = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
        pool.close();
        assertEquals(allocations(), baseline);
        assertEquals(openPools(), poolsBefore);
    }

    /**
     * Wrapped caller memory: the caller owns it. A buffer of the pool keeps the caller's ByteBuffer
     * reachable (so, on Java 17, its memory), and kvio holds nothing for it: close() closes every
     * handle at once.
     */
    @Test
    public void aBufferOfAPoolOverCallerMemoryReadsThatMemoryAfterClose() throws Exception {
        settle();
        long poolsBefore = openPools();
        ByteBuffer caller = ByteBuffer.allocateDirect(8192);
        DeviceKvPool pool = DeviceKvPool.wrap(SPEC, caller, IoBackend.CPU);
        ByteBuffer buffer = pool.buffer();
        fill(buffer, 7);
        pool.close();
        assertEquals(openPools(), poolsBefore, "a wrap of caller memory keeps no handle open");
        assertFilled(buffer, 7, "after close()");
        assertEquals(caller.get(1), pattern(1, 7), "the buffer is the caller's memory");
    }
}
