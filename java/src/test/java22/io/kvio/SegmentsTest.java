/*
 * io.kvio.Segments, the MemorySegment interop of Java 22+ (compiled and run only by the java22
 * profile of java/pom.xml): index lists viewing native segments (heap ones copied), a host pool
 * over a caller's segment moved into by a transfer, pools' memory as segments that die with the
 * pool, and the refusals (misaligned or odd-sized index segments, heap or read-only pool memory,
 * closed arenas, device memory of a CUDA pool).
 */
package io.kvio;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import org.testng.annotations.Test;

public class SegmentsTest {
    private static final PoolSpec SPEC =
            PoolSpec.builder()
                    .kind(PoolKind.MLA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(2)
                    .pages(4)
                    .pageSize(4)
                    .heads(1)
                    .headBytes(8)
                    .build();

    @Test
    public void indexListsViewNativeSegmentsAndCopyHeapOnes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slots = arena.allocateFrom(ValueLayout.JAVA_LONG, 3, 1, 4, 1, 5);
            try (TokenIndices list = Segments.wrapIndices(slots.asSlice(8, 24))) {
                assertEquals(list.toString(), "TokenIndices{size=3, [1, 4, 1]}");
                assertEquals(list.address(), slots.address() + 8);
                slots.setAtIndex(ValueLayout.JAVA_LONG, 2, 9); // a view
                assertEquals(list.get(1), 9);
            }
            MemorySegment heap = MemorySegment.ofArray(new long[] {6, 7});
            try (TokenIndices list = Segments.wrapIndices(heap)) {
                heap.setAtIndex(ValueLayout.JAVA_LONG, 0, 60);
                assertEquals(list.toString(), "TokenIndices{size=2, [6, 7]}", "a copy");
            }
            KvioInvalidArgumentException e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> Segments.wrapIndices(slots.asSlice(0, 12)));
            assertTrue(e.getMessage().contains("multiple of 8"), e.getMessage());
            e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> Segments.wrapIndices(slots.asSlice(4, 16)));
            assertTrue(e.getMessage().contains("not 8-byte aligned"), e.getMessage());
            try (TokenIndices empty = Segments.wrapIndices(slots.asSlice(0, 0))) {
                assertEquals(empty.size(), 0);
            }
        }
    }

    @Test
    public void aListWhoseArenaClosedIsRefusedAtSubmit() {
        Arena arena = Arena.ofShared();
        TokenIndices list = Segments.wrapIndices(arena.allocateFrom(ValueLayout.JAVA_LONG, 0, 1));
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build();
                TokenIndices other = TokenIndices.of(2, 3)) {
            host.backup(device).hostIndices(list).deviceIndices(other).submit().await();
            arena.close();
            KvioClosedException e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    host.backup(device)
                                            .hostIndices(list)
                                            .deviceIndices(other)
                                            .submit());
            assertTrue(e.getMessage().contains("arena was closed"), e.getMessage());
        }
    }

    @Test
    public void aHostPoolOverACallerSegmentReceivesABackup() {
        try (Arena arena = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            MemorySegment memory = arena.allocate(SPEC.numLayers() * 16 * 8, 4096);
            try (HostKvPool host =
                            Segments.wrapHostPool(HostKvPool.builder().forDevice(device), memory);
                    TokenIndices d =
                            Segments.wrapIndices(arena.allocateFrom(ValueLayout.JAVA_LONG, 5, 6));
                    TokenIndices h = TokenIndices.of(0, 15)) {
                assertEquals(host.regionAddress(0), memory.address());
                MemorySegment deviceMemory = Segments.region(device, 0);
                deviceMemory.setAtIndex(ValueLayout.JAVA_LONG, 5, 0x55); // layer 0
                deviceMemory.setAtIndex(ValueLayout.JAVA_LONG, 16 + 6, 0x66); // layer 1
                host.backup(device).hostIndices(h).deviceIndices(d).submit().await();
                assertEquals(memory.getAtIndex(ValueLayout.JAVA_LONG, 0), 0x55);
                assertEquals(memory.getAtIndex(ValueLayout.JAVA_LONG, 16 + 15), 0x66);
            }
            expectThrows(
                    KvioInvalidArgumentException.class,
                    () ->
                            Segments.wrapHostPool(
                                    HostKvPool.builder().forDevice(device),
                                    MemorySegment.ofArray(new byte[256])));
            expectThrows(
                    KvioInvalidArgumentException.class,
                    () ->
                            Segments.wrapHostPool(
                                    HostKvPool.builder().forDevice(device),
                                    arena.allocate(256).asReadOnly()));
            KvioInvalidArgumentException e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () ->
                                    Segments.wrapHostPool(
                                            HostKvPool.builder().forDevice(device),
                                            arena.allocate(64)));
            assertTrue(e.getMessage().contains("too small"), e.getMessage());
        }
    }

    @Test
    public void poolSegmentsDieWithThePool() {
        MemorySegment region;
        try (HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MLA)
                        .pages(4)
                        .pageSize(4)
                        .heads(1)
                        .headBytes(8)
                        .deviceLayers(2)
                        .build()) {
            region = Segments.region(host, 0);
            assertEquals(region.byteSize(), host.regionBytes(0));
            assertEquals(region.address(), host.regionAddress(0));
            region.set(ValueLayout.JAVA_LONG, 8, 42);
            ByteBuffer out = ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
            host.copyTo(0, 8, out);
            assertEquals(out.getLong(0), 42);
            assertTrue(Segments.region(host, 0).scope().equals(region.scope()), "one arena");
            expectThrows(KvioOutOfRangeException.class, () -> Segments.region(host, 1));
        }
        assertThrows(IllegalStateException.class, () -> region.get(ValueLayout.JAVA_LONG, 8));
        assertTrue(!region.scope().isAlive());
    }

    /** What {@link #closeFromUpcall} saw, on the test's thread (the upcall runs there). */
    private static HostKvPool closing;

    private static Throwable closeFailure;

    /**
     * qsort's comparator: closes {@link #closing} while qsort, a downcall holding the pool's
     * segment, is still running (an exception must not leave an upcall: it is recorded).
     */
    static int closeFromUpcall(MemorySegment a, MemorySegment b) {
        try {
            closing.close();
        } catch (Throwable t) {
            closeFailure = t;
        }
        return 0;
    }

    @Test
    public void aPoolWhoseSegmentIsInUseStaysOpenUntilItCanClose() throws Throwable {
        // A downcall given a pool's segment holds its arena: Arena.close() throws then. close()
        // marked the pool closed first and threw before freeing it: a second close() did nothing,
        // the pool and its memory stayed allocated, and closeAndWait() later freed the memory
        // under segments still alive (a crash of the JVM on their next access).
        HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MLA)
                        .pages(4)
                        .pageSize(4)
                        .heads(1)
                        .headBytes(8)
                        .deviceLayers(2)
                        .build();
        MemorySegment region = Segments.region(host, 0);
        region.setAtIndex(ValueLayout.JAVA_LONG, 0, 2);
        region.setAtIndex(ValueLayout.JAVA_LONG, 1, 1);
        Linker linker = Linker.nativeLinker();
        MethodHandle qsort =
                linker.downcallHandle(
                        linker.defaultLookup().find("qsort").orElseThrow(),
                        FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        try (Arena upcalls = Arena.ofConfined()) {
            MemorySegment comparator =
                    linker.upcallStub(
                            MethodHandles.lookup()
                                    .findStatic(
                                            SegmentsTest.class,
                                            "closeFromUpcall",
                                            MethodType.methodType(
                                                    int.class,
                                                    MemorySegment.class,
                                                    MemorySegment.class)),
                            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS),
                            upcalls);
            closing = host;
            closeFailure = null;
            qsort.invokeExact(region, 2L, 8L, comparator);
        } finally {
            closing = null;
        }
        assertTrue(closeFailure instanceof IllegalStateException, String.valueOf(closeFailure));
        assertTrue(closeFailure.getMessage().contains("was not closed"), closeFailure.getMessage());
        assertTrue(!host.isClosed(), "left open");
        assertEquals(region.getAtIndex(ValueLayout.JAVA_LONG, 0), 2, "still usable");
        host.close(); // nothing holds the segment now
        assertTrue(host.isClosed());
        assertThrows(IllegalStateException.class, () -> region.get(ValueLayout.JAVA_LONG, 0));
        host.closeAndWait();
    }

    @Test
    public void closedPoolsAndCudaDeviceMemoryAreRefused() {
        HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MLA)
                        .pages(1)
                        .pageSize(1)
                        .heads(1)
                        .headBytes(8)
                        .deviceLayers(1)
                        .build();
        host.close();
        expectThrows(KvioClosedException.class, () -> Segments.region(host, 0));
        if (IoBackend.DIRECT.isAvailable()) {
            try (DeviceKvPool gpu = DeviceKvPool.allocate(SPEC, IoBackend.DIRECT)) {
                expectThrows(KvioUnsupportedException.class, () -> Segments.region(gpu, 0));
            }
        }
    }

    /** The Java 22+ example of README.md, section "Java" (keep the two in sync). */
    @Test
    public void segmentExampleOfTheReadmeRuns() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            long hostBytes = 2 * 16 * 8;
            MemorySegment seen;
            // ---- README.md, section "Java", MemorySegment ----
            try (Arena arena = Arena.ofConfined();
                    HostKvPool host =
                            Segments.wrapHostPool(
                                    HostKvPool.builder().forDevice(device),
                                    arena.allocate(hostBytes, 4096));
                    TokenIndices hostSlots =
                            Segments.wrapIndices(
                                    arena.allocateFrom(ValueLayout.JAVA_LONG, 10, 11, 12))) {
                MemorySegment hostMemory = Segments.region(host, 0);
                // ---- end of the example ----
                seen = hostMemory;
                assertEquals(hostMemory.byteSize(), hostBytes);
                assertEquals(hostSlots.size(), 3);
            }
            assertTrue(!seen.scope().isAlive());
        }
    }
}
